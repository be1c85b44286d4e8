//! Contention-free atomics (issue #4): a histogram by warp-aggregated atomics (`match`
//! variant; integer counts are exact by every method) and the Himeno Jacobi sweep with the
//! deterministic tree gosa (pressure and gosa bit-identical).

use super::Table;
use lockstep::Gpu;
use lockstep::himeno::Himeno;
use lockstep::himeno::gosa_via;
use lockstep::himeno::{self, HimenoProblem};
use lockstep::histogram as cpu;
use lockstep::histogram::Histogram;
use lockstep::histogram::{Histograms, Method};

const VALUES: usize = 1_000_000;
const BINS: u64 = 1000;
const SWEEPS: u32 = 10;

pub(super) fn run(t: &mut Table, gpu: Option<&Gpu>) -> anyhow::Result<()> {
    let histograms = gpu.map(Histograms::new).transpose()?;
    let himeno_gpu = gpu.map(Himeno::new).transpose()?;

    let bins = cpu::bins(0.0, 1.0, BINS)?;
    let x: Vec<f64> = super::inputs(VALUES, 3).iter().map(|v| (v + 4.0) / 8.0).collect();
    // Counts (as u64) and the dropped values (NaN, below, above).
    fn key<T: Into<u64>>(h: Histogram<T>) -> (Vec<u64>, Vec<u64>) {
        (h.counts.into_iter().map(Into::into).collect(), vec![h.nan, h.below, h.above])
    }
    t.check(
        "histogram_u32 (match)",
        || Ok(key(cpu::histogram_counts_seq(&bins, &x))),
        || Ok(key(cpu::histogram_counts_par(&bins, &x))),
        histograms.as_ref(),
        |a| a.histogram_counts::<u32>(Method::Match, &bins, &x).map(key),
        |(counts, dropped)| {
            let (lo, hi) = (counts.iter().min().unwrap_or(&0), counts.iter().max().unwrap_or(&0));
            format!("{VALUES} uniforms in {BINS} bins: {lo}..{hi} per bin, {} dropped", dropped.iter().sum::<u64>())
        },
    )?;

    let pr = HimenoProblem::by_name("XS")?;
    t.check(
        "himeno_jacobi (tree)",
        || himeno::himeno_seq(&pr, SWEEPS).map(|r| (r.p, r.gosa_tree)),
        || himeno::himeno_par(&pr, SWEEPS).map(|r| (r.p, r.gosa_tree)),
        himeno_gpu.as_ref(),
        |a| a.himeno(&pr, SWEEPS, gosa_via::TREE, (64, 4)),
        |(_, gosa)| format!("size XS ({}x{}x{}), {SWEEPS} sweeps: gosa {gosa:.6e}", pr.mi, pr.mj, pr.mk),
    )
}
