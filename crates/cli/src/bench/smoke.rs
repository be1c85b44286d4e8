//! `lockstep bench smoke`: saxpy f32 at 2^28 elements next to a device-to-device copy.

use lockstep::DeviceBuffer;
use lockstep::foundation::Foundation;
use lockstep::timing::time_gpu;

/// Options of `lockstep bench smoke`.
#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// log2 of the element count.
    #[arg(long, default_value_t = 28)]
    log2_n: u32,
    /// Timed runs (after 5 warm-up runs).
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// Append a Markdown row with the result to this file.
    #[arg(long)]
    record: Option<std::path::PathBuf>,
}

pub fn run(Args { log2_n, runs, record }: Args) -> anyhow::Result<()> {
    anyhow::ensure!((10..=31).contains(&log2_n), "--log2-n must be 10..=31");
    anyhow::ensure!(runs >= 1, "--runs must be at least 1");
    let gpu = crate::common::bench_gpu()?;
    let n = 1usize << log2_n;
    let f = Foundation::new(&gpu)?;
    let (free, _) = gpu.memory_info()?;
    anyhow::ensure!(
        free > 3 * n * 4 + (256 << 20),
        "needs {} MiB of device memory, {} MiB free",
        (3 * n * 4) >> 20,
        free >> 20
    );
    let x = DeviceBuffer::from_slice(&vec![1.0f32; n])?;
    let mut y = DeviceBuffer::from_slice(&vec![2.0f32; n])?;
    let mut z = DeviceBuffer::<f32>::zeroed(n)?;
    let saxpy = time_gpu(&gpu, 5, runs, || f.saxpy_on_device(1.0e-7, &x, &mut y))?;
    let copy = time_gpu(&gpu, 5, runs, || lockstep::gpu::copy_on_device(&gpu, &x, &mut z))?;
    let saxpy_gbs = 12.0 * n as f64 / saxpy.median_ms() / 1e6;
    let copy_gbs = 8.0 * n as f64 / copy.median_ms() / 1e6;
    let pct = 100.0 * saxpy_gbs / copy_gbs;
    println!("GPU: {}", gpu.name());
    println!(
        "saxpy f32, n = 2^{log2_n}: median {:.4} ms over {runs} runs (min {:.4}) -> {saxpy_gbs:.1} GB/s (12 B/element: read x, read y, write y)",
        saxpy.median_ms(),
        saxpy.min_ms()
    );
    println!(
        "device-to-device copy, same run: median {:.4} ms (min {:.4}) -> {copy_gbs:.1} GB/s (8 B/element: read + write)",
        copy.median_ms(),
        copy.min_ms()
    );
    println!("saxpy reaches {pct:.1}% of the copy bandwidth (target >= 90%)");
    if let Some(path) = record {
        super::record_row(
            &path,
            &gpu,
            &["n", "saxpy median ms", "saxpy GB/s", "copy median ms", "copy GB/s", "% of copy", "module"],
            &[
                format!("2^{log2_n}"),
                format!("{:.4}", saxpy.median_ms()),
                format!("{saxpy_gbs:.1}"),
                format!("{:.4}", copy.median_ms()),
                format!("{copy_gbs:.1}"),
                format!("{pct:.1}"),
                gpu.loaded().what.clone(),
            ],
        )?;
        println!("recorded in {}", path.display());
    }
    Ok(())
}
