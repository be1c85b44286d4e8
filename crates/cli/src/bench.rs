//! Benchmark programs. Each prints CUDA-event medians after warm-up, the GPU's name and the
//! bound it is measured against, and can append its result to a file under `bench/results/`.

use clap::Subcommand;
use lockstep::kernels::foundation::Foundation;
use lockstep::timing::time_gpu;
use lockstep::{DeviceBuffer, Gpu};
use std::io::Write;

#[derive(Subcommand)]
pub enum Which {
    /// saxpy f32 (read x, read y, write y) against a device-to-device copy, same run.
    Smoke {
        /// log2 of the element count.
        #[arg(long, default_value_t = 28)]
        log2_n: u32,
        /// Timed runs (after 5 warm-up runs).
        #[arg(long, default_value_t = 30)]
        runs: usize,
        /// Append a Markdown row with the result to this file.
        #[arg(long)]
        record: Option<std::path::PathBuf>,
    },
}

pub fn run(which: Which) -> anyhow::Result<()> {
    match which {
        Which::Smoke { log2_n, runs, record } => smoke(log2_n, runs, record),
    }
}

fn smoke(log2_n: u32, runs: usize, record: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    anyhow::ensure!((10..=31).contains(&log2_n), "--log2-n must be 10..=31");
    anyhow::ensure!(runs >= 1, "--runs must be at least 1");
    let gpu = Gpu::new()?;
    let n = 1usize << log2_n;
    let f = Foundation::new(&gpu)?;
    let (free, _) = gpu.memory_info()?;
    anyhow::ensure!(
        free > 3 * n * 4 + (256 << 20),
        "needs {} MiB of device memory, {} MiB free",
        3 * n * 4 >> 20,
        free >> 20
    );
    let x = DeviceBuffer::from_slice(&vec![1.0f32; n])?;
    let mut y = DeviceBuffer::from_slice(&vec![2.0f32; n])?;
    let mut z = DeviceBuffer::from_slice(&vec![0.0f32; n])?;
    let saxpy = time_gpu(&gpu, 5, runs, || f.saxpy_on_device(1.0e-7, &x, &mut y))?;
    let copy = time_gpu(&gpu, 5, runs, || {
        use lockstep::DeviceSlice;
        let src: &DeviceSlice<f32> = &x;
        let dst: &mut DeviceSlice<f32> = &mut z;
        lockstep::kernels::copy_on_device(&gpu, src, dst)
    })?;
    let saxpy_bytes = 3.0 * 4.0 * n as f64;
    let copy_bytes = 2.0 * 4.0 * n as f64;
    let saxpy_gbs = saxpy_bytes / saxpy.median_ms() / 1e6;
    let copy_gbs = copy_bytes / copy.median_ms() / 1e6;
    let pct = 100.0 * saxpy_gbs / copy_gbs;
    println!("GPU: {}", gpu.name());
    println!(
        "saxpy f32, n = 2^{log2_n}: median {:.4} ms over {runs} runs (min {:.4}) -> {:.1} GB/s (12 B/element: read x, read y, write y)",
        saxpy.median_ms(),
        saxpy.min_ms(),
        saxpy_gbs
    );
    println!(
        "device-to-device copy, same run: median {:.4} ms (min {:.4}) -> {:.1} GB/s (8 B/element: read + write)",
        copy.median_ms(),
        copy.min_ms(),
        copy_gbs
    );
    println!("saxpy reaches {pct:.1}% of the copy bandwidth (target >= 90%)");
    if let Some(path) = record {
        let new = !path.exists();
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        if new {
            writeln!(
                file,
                "| date (UTC) | GPU | n | saxpy median ms | saxpy GB/s | copy median ms | copy GB/s | % of copy | PTX arch |"
            )?;
            writeln!(file, "|---|---|---|---|---|---|---|---|---|")?;
        }
        writeln!(
            file,
            "| {} | {} | 2^{log2_n} | {:.4} | {:.1} | {:.4} | {:.1} | {:.1} | {} |",
            today(),
            gpu.name(),
            saxpy.median_ms(),
            saxpy_gbs,
            copy.median_ms(),
            copy_gbs,
            pct,
            lockstep::ptx::ARCH
        )?;
        println!("recorded in {}", path.display());
    }
    Ok(())
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
fn today() -> String {
    let days =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() / 86_400).unwrap_or(0)
            as i64;
    // civil-from-days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}")
}
