//! `lockstep bench bridge`: the paper's test problem (1,439,744 paths × 64 steps, bisection)
//! for every variant, next to a device-to-device copy (for kernels that read Z and write X) and
//! a memset (for kernels that only write), measured in the same run; CPU times at one thread
//! and all threads. Metric as in the paper: bytes of Z read + bytes of X written over the
//! CUDA-event median.

use lockstep::bridge::{self as cpu, BridgeSpec, Noise, Output, Plan, Precision, Source, forward_order};
use lockstep::bridge::{Bridge, DevicePlan, DeviceSource, QuadsKernel, Variant};
use lockstep::timing::time_gpu;
use lockstep::{DeviceBuffer, Gpu};
use std::time::Instant;

/// Options of `lockstep bench bridge`.
/// `--order` of the bench (the bench takes no order file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchOrder {
    /// Breadth-first bisection.
    Bisection,
    /// 1, 2, …, N.
    Forward,
}

impl std::fmt::Display for BenchOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if *self == BenchOrder::Forward { "forward" } else { "bisection" })
    }
}

/// `--precision` of the bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchPrecision {
    /// Single precision.
    F32,
    /// Double precision.
    F64,
    /// f32, then f64.
    Both,
}

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// Paths.
    #[arg(long, default_value_t = 1_439_744)]
    paths: usize,
    /// Time steps per path (N + 1: the interior times and T).
    #[arg(long, default_value_t = 64)]
    steps: usize,
    /// Dimension d (1..=8); d > 1 uses a fixed correlation matrix.
    #[arg(long, default_value_t = 1)]
    dims: usize,
    /// Construction order.
    #[arg(long, value_enum, default_value = "bisection")]
    order: BenchOrder,
    /// Precision (or both, one after the other).
    #[arg(long, value_enum, default_value = "both")]
    precision: BenchPrecision,
    /// Timed runs (after 5 warm-up runs).
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Threads per block (a multiple of 32).
    #[arg(long, default_value_t = 128)]
    block: u32,
    /// Skip the CPU timings.
    #[arg(long)]
    no_cpu: bool,
    /// Only the buffer kernels' rows (Z from a buffer; no fused or normals-alone rows).
    #[arg(long)]
    buffer_only: bool,
    /// Where a buffer row launches a staged kernel (`bridge_staged_dims_*`: a path count that splits
    /// 32-byte sectors), time the unstaged kernel too; at odd-count quads the kernel the launcher
    /// did not take of `bridge_quads_f32` and `bridge_f32`; in the same run (rows marked
    /// "unstaged", "in bridge_f32" or "in bridge_quads_f32").
    #[arg(long)]
    unstaged: bool,
    /// Pitched rows: generate `lockstep::bridge::pitch(paths)` paths (rows of whole 256 bytes)
    /// and count only the first `--paths` columns of each row in GB/s and % of bound.
    #[arg(long)]
    pitched: bool,
    /// Append Markdown rows with the results to this file.
    #[arg(long)]
    record: Option<std::path::PathBuf>,
}

const HEADER: [&str; 13] = [
    "kernel",
    "prec",
    "paths × steps × d",
    "order",
    "median ms",
    "GB/s",
    "bound",
    "% of bound",
    "regs",
    "local B",
    "CPU 1 thread ms",
    "CPU all threads ms",
    "GPU speedup vs CPU all threads",
];

fn spec(args: &Args) -> anyhow::Result<BridgeSpec> {
    anyhow::ensure!(args.steps >= 2, "--steps must be at least 2");
    anyhow::ensure!((1..=8).contains(&args.dims), "--dims must be 1..=8");
    let mut s = BridgeSpec::standard(args.steps);
    if args.order == BenchOrder::Forward {
        s.order = forward_order(args.steps - 1);
    }
    let d = args.dims;
    s.start = vec![0.0; d];
    let mut sigma = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            sigma[i * d + j] = if i == j { 1.0 } else { 0.3 };
        }
    }
    s.noise = Noise::Covariance(sigma);
    Ok(s)
}

struct Bounds {
    copy_gbs: f64,
    write_gbs: f64,
}

fn run_precision<T: Precision + bytemuck::Zeroable>(
    gpu: &Gpu,
    bridge: &Bridge<'_>,
    plan: &Plan,
    args: &Args,
    rows: &mut Vec<Vec<String>>,
) -> anyhow::Result<()> {
    // With `--pitched` every generation runs at the stride (`pitch`), and only the first
    // `args.paths` columns of each row count as moved bytes.
    let paths = if args.pitched { lockstep::bridge::pitch::<T>(args.paths)? } else { args.paths };
    let len = plan.rows() * paths;
    let bytes = (len * std::mem::size_of::<T>()) as f64;
    let useful = (plan.rows() * args.paths * std::mem::size_of::<T>()) as f64;
    if args.pitched {
        println!(
            "[{}] pitched: {} paths at a row stride of {paths}; GB/s count {} columns",
            T::NAME,
            args.paths,
            args.paths
        );
    }
    let dp: DevicePlan<T> = bridge.upload(plan)?;
    let mut z = DeviceBuffer::<T>::zeroed(len)?;
    let mut out = DeviceBuffer::<T>::zeroed(len)?;
    let mut scratch = DeviceBuffer::<T>::zeroed(bridge.scratch_len(&dp, paths).max(1))?;
    let has_scratch = bridge.scratch_len(&dp, paths) > 0;
    bridge.normals_on_device(&dp, DeviceSource::Philox { seed: 1 }, paths, &mut z)?;
    gpu.synchronize()?;
    // Bounds, same run, same size.
    let copy = time_gpu(gpu, 5, args.runs, || lockstep::gpu::copy_on_device(gpu, &z, &mut out))?;
    let mut words = DeviceBuffer::<u32>::zeroed(len * std::mem::size_of::<T>() / 4)?;
    let write = time_gpu(gpu, 5, args.runs, || {
        // SAFETY: `words` is a live device allocation (as many bytes as `out`); the memset is
        // ordered on the GPU's stream and nothing reads the buffer concurrently.
        unsafe { words.set_32_async(0, gpu.stream()) }
            .map_err(|e| lockstep::Error::Cuda { call: "cuMemsetD32Async", source: e })
    })?;
    drop(words);
    let b = Bounds { copy_gbs: 2.0 * bytes / copy.median_ms() / 1e6, write_gbs: bytes / write.median_ms() / 1e6 };
    println!(
        "[{}] bounds: device copy {:.1} GB/s (read + write), memset {:.1} GB/s (write only); {:.1} MiB per buffer",
        T::NAME,
        b.copy_gbs,
        b.write_gbs,
        bytes / (1u64 << 20) as f64
    );
    // CPU twins on the same normals.
    let (cpu1, cpun) = if args.no_cpu {
        (None, None)
    } else {
        let zh = z.as_host_vec()?;
        let t = Instant::now();
        let a = cpu::generate_seq(plan, Source::Buffer(&zh), paths, Output::Paths)?;
        let t1 = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let b2 = cpu::generate_par(plan, Source::Buffer(&zh), paths, Output::Paths)?;
        let tn = t.elapsed().as_secs_f64() * 1e3;
        anyhow::ensure!(a == b2, "CPU one thread and rayon differ");
        // Parity on the full problem, once.
        bridge.generate_on_device(
            &dp,
            DeviceSource::Buffer(&z),
            paths,
            Output::Paths,
            has_scratch.then_some(&mut *scratch),
            &mut out,
        )?;
        gpu.synchronize()?;
        let g = out.as_host_vec()?;
        #[allow(clippy::eq_op)] // `x != x` is the NaN test of a generic float (any NaN equals any NaN)
        let same = g.iter().zip(&a).all(|(x, y)| x == y || (x != x && y != y));
        println!("[{}] GPU = CPU bit for bit on the full problem: {same}", T::NAME);
        anyhow::ensure!(same, "GPU and CPU differ");
        (Some(t1), Some(tn))
    };
    type Case<'a, T> = (&'static str, Variant, Option<&'a DeviceBuffer<T>>, Output, bool);
    let mut cases: Vec<Case<'_, T>> = vec![
        ("bridge (Z from buffer), paths", Variant::Buffer, Some(&z), Output::Paths, true),
        ("bridge (Z from buffer), increments", Variant::Buffer, Some(&z), Output::Increments, true),
        ("bridge + Philox fused, paths", Variant::Philox, None, Output::Paths, false),
        ("bridge + Philox Box–Muller fused, paths", Variant::PhiloxBoxMuller, None, Output::Paths, false),
        ("bridge + Sobol fused, paths", Variant::Sobol, None, Output::Paths, false),
        ("normals alone (Philox)", Variant::NormalsPhilox, None, Output::Paths, false),
        ("normals alone (Philox, Box–Muller)", Variant::NormalsBoxMuller, None, Output::Paths, false),
        ("normals alone (Sobol)", Variant::NormalsSobol, None, Output::Paths, false),
    ];
    if args.buffer_only {
        cases.truncate(2);
    }
    // The other kernel, for `--unstaged` rows: the unstaged one where the buffer rows take the
    // staged one; at odd-count quads the one of the two that `QuadsKernel::Auto` did not take.
    let quads_other = match bridge.buffer_variant(&dp, paths) {
        Variant::BufferQuads => QuadsKernel::Never,
        _ => QuadsKernel::Always,
    };
    let plain = Bridge::with_block_size(gpu, args.block)?.with_staging(false).with_quads_kernel(quads_other);
    let general = match (bridge.buffer_variant(&dp, paths), plain.buffer_variant(&dp, paths)) {
        (Variant::BufferStagedDims, _) => {
            Some(["bridge (Z from buffer), paths, unstaged", "bridge (Z from buffer), increments, unstaged"])
        }
        (Variant::BufferQuads, _) => {
            Some(["bridge (Z from buffer), paths, in bridge_f32", "bridge (Z from buffer), increments, in bridge_f32"])
        }
        (_, Variant::BufferQuads) => Some([
            "bridge (Z from buffer), paths, in bridge_quads_f32",
            "bridge (Z from buffer), increments, in bridge_quads_f32",
        ]),
        _ => None,
    };
    let is_general = |name: &str| general.is_some_and(|g| g.contains(&name));
    if let (true, Some([p, i])) = (args.unstaged, general) {
        cases.insert(2, (i, Variant::Buffer, Some(&z), Output::Increments, true));
        cases.insert(2, (p, Variant::Buffer, Some(&z), Output::Paths, true));
    }
    for (name, variant, zsrc, output, reads) in cases {
        let bridge = if is_general(name) { &plain } else { bridge };
        let t = time_gpu(gpu, 5, args.runs, || {
            let sc = has_scratch.then_some(&mut *scratch);
            match variant {
                Variant::Buffer | Variant::BufferDims | Variant::BufferStagedDims | Variant::BufferQuads => {
                    let zz =
                        zsrc.map(|b| &**b).ok_or(lockstep::Error::InvalidInput { what: "z", why: "missing".into() })?;
                    bridge.generate_on_device(&dp, DeviceSource::Buffer(zz), paths, output, sc, &mut out)
                }
                Variant::Philox | Variant::PhiloxD1 => {
                    bridge.generate_on_device(&dp, DeviceSource::Philox { seed: 7 }, paths, output, sc, &mut out)
                }
                Variant::PhiloxBoxMuller | Variant::PhiloxBoxMullerD1 | Variant::PhiloxBoxMullerD1Pairs => {
                    let src = DeviceSource::PhiloxBoxMuller { seed: 7 };
                    bridge.generate_on_device(&dp, src, paths, output, sc, &mut out)
                }
                Variant::Sobol | Variant::SobolD1 => {
                    bridge.generate_on_device(&dp, DeviceSource::Sobol { offset: 1 }, paths, output, sc, &mut out)
                }
                Variant::NormalsPhilox => {
                    bridge.normals_on_device(&dp, DeviceSource::Philox { seed: 7 }, paths, &mut out)
                }
                Variant::NormalsSobol => {
                    bridge.normals_on_device(&dp, DeviceSource::Sobol { offset: 1 }, paths, &mut out)
                }
                Variant::NormalsBoxMuller => {
                    bridge.normals_on_device(&dp, DeviceSource::PhiloxBoxMuller { seed: 7 }, paths, &mut out)
                }
            }
        })?;
        let moved = if reads { 2.0 * useful } else { useful };
        let gbs = moved / t.median_ms() / 1e6;
        let (bound_name, bound) = if reads { ("copy", b.copy_gbs) } else { ("memset", b.write_gbs) };
        let pct = 100.0 * gbs / bound;
        let launched = bridge.launched(&dp, paths, variant);
        let (regs, local) = bridge.attributes::<T>(launched)?;
        let is_cpu_row = variant == Variant::Buffer && output == Output::Paths && !is_general(name);
        let c1 = if is_cpu_row { cpu1 } else { None };
        let cn = if is_cpu_row { cpun } else { None };
        println!(
            "[{}] {name:<40} {:8.4} ms  {gbs:7.1} GB/s  {pct:5.1}% of {bound_name} ({bound:.1} GB/s)  regs {regs} local {local} B{}{}",
            T::NAME,
            t.median_ms(),
            match (c1, cn) {
                (Some(a), Some(b)) => format!(
                    "  CPU {a:.0} ms (1 thread) / {b:.0} ms ({} threads): GPU {:.0}× / {:.0}×",
                    rayon::current_num_threads(),
                    a / t.median_ms(),
                    b / t.median_ms()
                ),
                _ => String::new(),
            },
            if matches!(launched, Variant::BufferStagedDims) { "  [staged]" } else { "" }
        );
        rows.push(vec![
            name.to_string(),
            T::NAME.to_string(),
            match args.pitched {
                true => format!("{} (pitch {paths}) × {} × {}", args.paths, plan.steps(), plan.dims()),
                false => format!("{paths} × {} × {}", plan.steps(), plan.dims()),
            },
            format!("{}, block {}", args.order, args.block),
            format!("{:.4}", t.median_ms()),
            format!("{gbs:.1}"),
            format!("{bound_name} {bound:.1} GB/s"),
            format!("{pct:.1}"),
            regs.to_string(),
            local.to_string(),
            c1.map(|v| format!("{v:.0}")).unwrap_or_default(),
            cn.map(|v| format!("{v:.0} ({} thr)", rayon::current_num_threads())).unwrap_or_default(),
            cn.map(|v| format!("{:.0}×", v / t.median_ms())).unwrap_or_default(),
        ]);
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs >= 1, "--runs must be at least 1");
    anyhow::ensure!(args.paths >= 1, "--paths must be at least 1");
    let plan = Plan::new(&spec(&args)?)?;
    let gpu = crate::common::bench_gpu()?;
    let bridge = Bridge::with_block_size(&gpu, args.block)?;
    println!("GPU: {}", gpu.name());
    println!(
        "problem: {} paths × {} steps × d = {}, {} order; strategy stack {} slots ({}), block {}",
        args.paths,
        plan.steps(),
        plan.dims(),
        args.order,
        plan.stack_slots(),
        if plan.stack_in_shared(bridge.block_size()) { "shared memory" } else { "scratch memory" },
        bridge.block_size()
    );
    let (free, _) = gpu.memory_info()?;
    let per = plan.rows() * args.paths * if args.precision == BenchPrecision::F32 { 4 } else { 8 };
    anyhow::ensure!(
        free > 4 * per + (256 << 20),
        "needs {} MiB of device memory, {} MiB free",
        (4 * per) >> 20,
        free >> 20
    );
    let mut rows = Vec::new();
    match args.precision {
        BenchPrecision::F32 => run_precision::<f32>(&gpu, &bridge, &plan, &args, &mut rows)?,
        BenchPrecision::F64 => run_precision::<f64>(&gpu, &bridge, &plan, &args, &mut rows)?,
        BenchPrecision::Both => {
            run_precision::<f32>(&gpu, &bridge, &plan, &args, &mut rows)?;
            run_precision::<f64>(&gpu, &bridge, &plan, &args, &mut rows)?;
        }
    }
    if let Some(path) = &args.record {
        for row in &rows {
            super::record_row(path, &gpu, &HEADER, row)?;
        }
        println!("recorded {} rows in {}", rows.len(), path.display());
    }
    Ok(())
}
