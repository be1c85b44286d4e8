//! The embedded device code (issue 20): which image a GPU loads, and the same bits from the
//! cubin and from the PTX of one build. (The architecture-specific kernel, `cluster_probe`, has
//! its parity test in foundation_parity.rs.)
//!
//! The whole GPU suite runs twice on the device machine (`run-gpu-tests.sh`: `LOCKSTEP_MODULE`
//! unset, which loads the device's cubin, then `=ptx`); the test here also loads both images
//! side by side in one process and compares a run of every family bit for bit.

use lockstep::bridge::{self, BridgeSpec, Output, Plan, Source};
use lockstep::histogram::{self, Histogram};
use lockstep::nbody::{self, Mode, Params};
use lockstep::ptx::{self, ImageKind, ModuleChoice};
use lockstep::{Backend, Gpu, himeno, mg};
use lockstep_parity::gpu_or_skip;
use proptest::test_runner::TestCaseError;

#[test]
fn the_loaded_image_follows_the_rule() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    let (major, minor) = gpu.compute_capability().unwrap();
    let choice = ModuleChoice::from_env().unwrap();
    let want = ptx::select(major, minor, choice).unwrap();
    let loaded = gpu.loaded();
    assert_eq!(loaded.what, want.describe(), "CC {major}.{minor}, {choice:?}");
    assert!(loaded.image.is_some_and(|i| std::ptr::eq(i, want)));
    eprintln!(
        "loaded {} in {:.1} ms (CC {major}.{minor}, {choice:?})",
        loaded.what,
        loaded.load_time.as_secs_f64() * 1e3
    );
    if choice == ModuleChoice::Ptx {
        assert_eq!(want.kind(), ImageKind::Ptx);
    }
    // Hopper and Ampere-class GPUs run machine code unless told otherwise
    if choice == ModuleChoice::Auto && (major == 8 || major == 9) {
        assert_eq!(want.kind(), ImageKind::Cubin, "CC {major}.{minor} should load a cubin");
    }
    Ok(())
}

/// Philox (seed 7) or Sobol (offset 3), for either precision.
fn source<'a, T>(sobol: bool) -> Source<'a, T> {
    if sobol { Source::Sobol { offset: 3 } } else { Source::Philox { seed: 7 } }
}

/// One run of every family on `gpu`, as bits.
fn every_family(gpu: &Gpu) -> Vec<u64> {
    let b = Backend::Gpu(gpu);
    let mut out: Vec<u64> = Vec::new();
    let plan = Plan::new(&BridgeSpec::standard(32)).unwrap();
    for sobol in [false, true] {
        let x = bridge::generate::<f32>(b, &plan, source(sobol), 3001, Output::Paths).unwrap();
        out.extend(x.iter().map(|v| u64::from(v.to_bits())));
        let y = bridge::generate::<f64>(b, &plan, source(sobol), 1001, Output::Increments).unwrap();
        out.extend(y.iter().map(|v| v.to_bits()));
    }
    let x: Vec<f64> = (0..100_003).map(|i| ((i as f64) * 0.618_033_988_749_895).fract() * 12.0 - 1.0).collect();
    let bins = histogram::bins(0.0, 10.0, 97).unwrap();
    let h: Histogram<u64> = histogram::counts(b, &bins, &x).unwrap();
    out.extend(h.counts.iter().copied().chain([h.nan, h.below, h.above]));
    let f: Histogram<f64> = histogram::fixed(b, &bins, &x, Some(&x)).unwrap();
    out.extend(f.counts.iter().map(|v| v.to_bits()));
    let problem = himeno::HimenoProblem::by_name("S").unwrap();
    let (p, gosa) = himeno::run(b, &problem, 2).unwrap();
    out.extend(p.iter().chain([&gosa]).map(|v| u64::from(v.to_bits())));
    let start = nbody::init::plummer(1000, 3).convert::<f32>();
    for mode in [Mode::Exact, Mode::Fast] {
        let mut s = start.clone();
        nbody::run(b, mode, &Params { g: 1.0, eps: 0.01, dt: 1e-3 }, &mut s, 3).unwrap();
        out.extend(s.pos.iter().chain(&s.vel).map(|v| u64::from(v.to_bits())));
    }
    let params = mg::validate(1001, 5, 2, 100, 8).unwrap();
    out.extend(mg::mean_winners(b, &params, 99, 0, 4).unwrap().iter().map(|v| v.to_bits()));
    out
}

#[test]
fn the_cubin_and_the_ptx_give_the_same_bits() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    let ptx_gpu = Gpu::with_ptx(gpu.ordinal(), ptx::module()).unwrap();
    let (a, b) = (every_family(gpu), every_family(&ptx_gpu));
    assert_eq!(a.len(), b.len());
    let first = a.iter().zip(&b).position(|(x, y)| x != y);
    assert!(first.is_none(), "{} and the PTX differ first at word {first:?} of {}", gpu.loaded().what, a.len());
    eprintln!("{} and sm_70 PTX (JIT): {} words, the same bits", gpu.loaded().what, a.len());
    Ok(())
}
