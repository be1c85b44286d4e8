//! `lockstep bench histogram`: the paper's experiment (10^7 uniform f64 in [0, 1), k = 1, 10,
//! …, 10^7 equal bins) by every method, next to the read-once floor and the peers' times.

use crate::plot::{Scale, Series, line_chart};
use lockstep::DeviceBuffer;
use lockstep::histogram as cpu;
use lockstep::histogram::{CounterKind, Histograms, Method};
use lockstep::timing::time_gpu;
use std::time::Instant;

/// Best of CuPy `histogram` (CUB) and `torch.histc` on an H200, 2026-11-21 (issue #4), ms,
/// for 10^7 uniform f64 at k = 10^0 … 10^7.
const PEERS_H200_MS: [f64; 8] = [0.376, 0.257, 0.121, 0.091, 0.211, 0.140, 0.134, 0.419];

/// Options of `lockstep bench histogram`.
#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// Values (uniform f64 in [0, 1)).
    #[arg(long, default_value_t = 10_000_000)]
    n: usize,
    /// Bin counts, comma-separated (default 1,10,…,10^7).
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000,10000,100000,1000000,10000000")]
    ks: Vec<u64>,
    /// Counters: u32, u64, f64 (unit weights), f64w (uniform weights in [0,1), native atomics,
    /// order-dependent), fixed (the same weights, deterministic fixed point).
    #[arg(long, default_value = "u32")]
    counters: String,
    /// Methods, comma-separated (default: every method that applies): plain, shared, shfl,
    /// match, block, count, cas, cas-agg, private, wide, partition.
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
    /// Timed runs per point (after 2 warm-up runs).
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Values for the CAS methods at k ≤ 100, where plain CAS retries explode (times are
    /// reported per this many values, and scaled to n in the "ms at n" column).
    #[arg(long, default_value_t = 262_144)]
    cas_n: usize,
    /// Skip the CPU sequential and rayon timings.
    #[arg(long)]
    no_cpu: bool,
    /// Append Markdown rows to this file.
    #[arg(long)]
    record: Option<std::path::PathBuf>,
    /// Peers measured in the same call (`bench/peers/histogram_peers.py --out FILE`): lines
    /// `k ms`, the best peer's median at each k; used instead of the H200 table of 2026-11-21.
    #[arg(long)]
    peers: Option<std::path::PathBuf>,
    /// Write a log-log PNG of time vs k, one line per method (paper Fig. 6/7).
    #[arg(long)]
    plot: Option<std::path::PathBuf>,
    /// Bucket width of the partition method as a shift (2^shift bins, 0..=15) for every k;
    /// default: the launcher's pick.
    #[arg(long)]
    partition_shift: Option<u32>,
}

#[derive(Clone, Copy, PartialEq)]
enum Counters {
    U32,
    U64,
    F64,
    F64W,
    Fixed,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let counters = match args.counters.as_str() {
        "u32" => Counters::U32,
        "u64" => Counters::U64,
        "f64" => Counters::F64,
        "f64w" => Counters::F64W,
        "fixed" => Counters::Fixed,
        other => anyhow::bail!("--counters {other:?}: use u32, u64, f64, f64w or fixed"),
    };
    anyhow::ensure!(args.n >= 1 && args.runs >= 1 && args.cas_n >= 1, "--n, --runs and --cas-n must be positive");
    let methods: Vec<Method> = if args.methods.is_empty() {
        Method::ALL.to_vec()
    } else {
        args.methods
            .iter()
            .map(|m| Method::from_name(m).ok_or_else(|| anyhow::anyhow!("unknown method {m:?}")))
            .collect::<anyhow::Result<_>>()?
    };
    let gpu = crate::common::bench_gpu()?;
    let a = match args.partition_shift {
        Some(s) => Histograms::new(&gpu)?.with_partition_shift(s)?,
        None => Histograms::new(&gpu)?,
    };
    let mut rng = uniform_rng(12345);
    let x: Vec<f64> = (0..args.n).map(|_| rng()).collect();
    let weights: Option<Vec<f64>> =
        matches!(counters, Counters::F64W | Counters::Fixed).then(|| (0..args.n).map(|_| rng()).collect());
    let dx = DeviceBuffer::from_slice(&x)?;
    let dw = weights.as_ref().map(|w| DeviceBuffer::from_slice(w)).transpose()?;
    let cas_n = args.cas_n.min(args.n);
    let dx_cas = DeviceBuffer::from_slice(&x[..cas_n])?;
    let dw_cas = weights.as_ref().map(|w| DeviceBuffer::from_slice(&w[..cas_n])).transpose()?;
    let mut dropped = DeviceBuffer::<u64>::zeroed(3)?;

    // The floor: the input read once, at the bandwidth of a device-to-device copy of it.
    let mut copy_dst = DeviceBuffer::<f64>::zeroed(args.n)?;
    let copy = time_gpu(&gpu, 2, args.runs, || lockstep::gpu::copy_on_device(&gpu, &dx, &mut copy_dst))?;
    let floor_ms = copy.median_ms() / 2.0;
    drop(copy_dst);
    println!("GPU: {}", gpu.name());
    println!(
        "histogram of n = {} uniform f64 in [0,1), counters {}; floor = input read once = {:.4} ms \
         (half a device-to-device copy of it, {:.0} GB/s)",
        args.n,
        args.counters,
        floor_ms,
        16.0 * args.n as f64 / copy.median_ms() / 1e6
    );
    let measured = args.peers.as_deref().map(read_peers).transpose()?;
    let peer_of = |k: u64| -> Option<f64> {
        match &measured {
            Some(m) => m.iter().find(|p| p.0 == k).map(|p| p.1),
            None => {
                let e = (k as f64).log10().round() as u32;
                (10u64.checked_pow(e) == Some(k)).then(|| PEERS_H200_MS.get(e as usize).copied()).flatten()
            }
        }
    };
    let peer_label = if measured.is_some() { "peers (this call)" } else { "peers (H200)" };
    match &measured {
        Some(m) => println!("peers (this call, best of CuPy/CUB, torch.histc, torch.bincount): {m:?} (k, ms)"),
        None => println!("peers (H200, CuPy/torch best, issue #4): {PEERS_H200_MS:?} ms at k = 10^0..10^7"),
    }
    println!(
        "{:>9} {:>8} {:>10} {:>10} {:>9} {:>9}  note",
        "k", "method", "median ms", "ms at n", "x floor", "vs peer"
    );
    let kind = match counters {
        Counters::U32 | Counters::U64 => CounterKind::Count,
        Counters::F64 => CounterKind::F64 { unit: true },
        Counters::F64W => CounterKind::F64 { unit: false },
        Counters::Fixed => CounterKind::Fixed { unit: false },
    };
    let mut series: Vec<Series> = Vec::new();
    let mut rows = Vec::new();
    for &k in &args.ks {
        let bins = cpu::bins(0.0, 1.0, k)?;
        let peer_ms = peer_of(k);
        println!("{k:>9} {:>8} picks {}", "auto", a.auto_method(kind, bins.k).name());
        let mut c32 = DeviceBuffer::<u32>::zeroed(k as usize)?;
        let mut c64 = DeviceBuffer::<u64>::zeroed(k as usize)?;
        let mut cf = DeviceBuffer::<f64>::zeroed(k as usize)?;
        for &m in &methods {
            if a.check(m, kind, bins.k).is_err() {
                continue;
            }
            let cas = matches!(m, Method::Cas | Method::CasAggregated) && k <= 100;
            let (xs, ws, n_used) = if cas { (&dx_cas, dw_cas.as_ref(), cas_n) } else { (&dx, dw.as_ref(), args.n) };
            let (warm, runs) = if cas && m == Method::Cas { (0, 1) } else { (2, args.runs) };
            let t = time_gpu(&gpu, warm, runs, || match counters {
                Counters::U32 => a.histogram_counts_on_device(m, &bins, xs, &mut c32, &mut dropped),
                Counters::U64 => a.histogram_counts_on_device(m, &bins, xs, &mut c64, &mut dropped),
                Counters::F64 => a.histogram_f64_on_device(m, &bins, xs, None, &mut cf, &mut dropped),
                Counters::F64W => a.histogram_f64_on_device(m, &bins, xs, ws.map(|w| &**w), &mut cf, &mut dropped),
                Counters::Fixed => a.histogram_fixed_on_device(m, &bins, xs, ws.map(|w| &**w), &mut c64, &mut dropped),
            })?;
            let ms = t.median_ms();
            let at_n = ms * args.n as f64 / n_used as f64;
            let vs_peer = peer_ms.map_or("-".to_string(), |p| format!("{:.2}x", at_n / p));
            let note = if n_used < args.n { format!("measured at n = {n_used}, scaled") } else { String::new() };
            println!("{k:>9} {:>8} {ms:>10.4} {at_n:>10.4} {:>9.2} {vs_peer:>9}  {note}", m.name(), at_n / floor_ms);
            push(&mut series, m.name(), k as f64, at_n);
            rows.push(vec![
                k.to_string(),
                m.name().to_string(),
                format!("{ms:.4}"),
                format!("{at_n:.4}"),
                format!("{:.2}", at_n / floor_ms),
                peer_ms.map_or("-".into(), |p| format!("{p:.3}")),
                n_used.to_string(),
            ]);
        }
        if !args.no_cpu {
            let w = weights.as_deref();
            let t0 = Instant::now();
            match counters {
                Counters::U32 | Counters::U64 => drop(cpu::histogram_counts_seq(&bins, &x)),
                Counters::F64 | Counters::F64W => drop(cpu::histogram_f64_seq(&bins, &x, w)),
                Counters::Fixed => drop(cpu::histogram_fixed_raw_seq(&bins, &x, w)),
            }
            let seq = t0.elapsed().as_secs_f64() * 1e3;
            let t0 = Instant::now();
            match counters {
                Counters::Fixed | Counters::F64W => drop(cpu::histogram_fixed_raw_par(&bins, &x, w)),
                _ => drop(cpu::histogram_counts_par(&bins, &x)),
            }
            let par = t0.elapsed().as_secs_f64() * 1e3;
            println!("{k:>9} {:>8} {seq:>10.3} {seq:>10.3}", "cpu-seq");
            println!("{k:>9} {:>8} {par:>10.3} {par:>10.3}  ({} threads)", "cpu-par", rayon::current_num_threads());
            push(&mut series, "cpu-seq", k as f64, seq);
            push(&mut series, "cpu-par", k as f64, par);
        }
        if let Some(p) = peer_ms {
            push(&mut series, peer_label, k as f64, p);
        }
    }
    if let Some(path) = &args.record {
        for row in rows {
            let mut full = vec![args.n.to_string(), args.counters.clone()];
            full.extend(row);
            full.push(format!("{floor_ms:.4}"));
            super::record_row(
                path,
                &gpu,
                &[
                    "n",
                    "counters",
                    "k",
                    "method",
                    "median ms",
                    "ms at n",
                    "x floor",
                    "peer ms",
                    "n measured",
                    "floor ms",
                ],
                &full,
            )?;
        }
        println!("recorded in {}", path.display());
    }
    if let Some(path) = &args.plot {
        line_chart(
            path,
            &format!("histogram of {} f64 ({}) on {}", args.n, args.counters, gpu.name()),
            "bins k",
            "time (ms)",
            &series,
            Scale { log_x: true, log_y: true },
        )?;
        println!("plot: {}", path.display());
    }
    Ok(())
}

fn push(series: &mut Vec<Series>, name: &str, x: f64, y: f64) {
    match series.iter_mut().find(|s| s.name == name) {
        Some(s) => s.points.push((x, y)),
        None => series.push(Series { name: name.to_string(), points: vec![(x, y)] }),
    }
}

/// SplitMix64 uniforms in [0, 1).
fn uniform_rng(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The peers file: one `k ms` pair per line (`#` comments).
fn read_peers(path: &std::path::Path) -> anyhow::Result<Vec<(u64, f64)>> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--peers {}: {e}", path.display()))?;
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut w = l.split_whitespace();
            let k = w.next().and_then(|v| v.parse::<u64>().ok());
            let ms = w.next().and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v > 0.0);
            k.zip(ms).ok_or_else(|| anyhow::anyhow!("--peers {}: `{l}` is not `k ms`", path.display()))
        })
        .collect()
}
