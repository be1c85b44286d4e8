//! Brownian bridge (issue #3): the paper's shape — 64 steps of [0, 1] in bisection order, d = 1
//! — for 100,000 paths, by the fused kernels (Philox f32, Sobol f64) and the CPU generators.

use super::{Same, Table};
use lockstep::Gpu;
use lockstep::bridge::Bridge;
use lockstep::bridge::{self as cpu, BridgeSpec, Output, Plan, Precision, Source};

const PATHS: usize = 100_000;

pub(super) fn run(t: &mut Table, gpu: Option<&Gpu>) -> anyhow::Result<()> {
    let plan = Plan::new(&BridgeSpec::standard(64))?;
    let bridge = gpu.map(Bridge::new).transpose()?;
    paths::<f32>(t, "bridge_philox_f32", &plan, bridge.as_ref(), Source::Philox { seed: 7 })?;
    paths::<f64>(t, "bridge_sobol_f64", &plan, bridge.as_ref(), Source::Sobol { offset: 1 })
}

/// One generation of [`PATHS`] paths from `source`, summarised by the mean and variance of
/// X(T) (a standard Brownian motion: 0 and 1).
fn paths<T: Precision + Same + Into<f64>>(
    t: &mut Table,
    kernel: &str,
    plan: &Plan,
    bridge: Option<&Bridge<'_>>,
    source: Source<'_, T>,
) -> anyhow::Result<()> {
    t.check(
        kernel,
        || cpu::generate_seq(plan, source, PATHS, Output::Paths),
        || cpu::generate_par(plan, source, PATHS, Output::Paths),
        bridge,
        |b| b.generate(plan, source, PATHS, Output::Paths),
        |x| {
            // Layout [row][path]; the last row is X(T).
            let end: Vec<f64> = x[x.len() - PATHS..].iter().map(|&v| v.into()).collect();
            let mean = end.iter().sum::<f64>() / PATHS as f64;
            let var = end.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (PATHS - 1) as f64;
            format!("{PATHS} paths: X(T) mean {mean:+.4}, variance {var:.4} (want 0, 1)")
        },
    )
}
