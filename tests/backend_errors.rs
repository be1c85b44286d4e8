//! Bad input to the families' `Backend` entry functions (`bridge::generate`, `histogram::fixed`,
//! `himeno::run`, `nbody::run`, `matmul::multiply`, `mg::mean_winners`, `foundation::*`): the
//! same typed error on every backend — the CPU twins always, the GPU when present — and nothing
//! computed or written.

use lockstep::bridge::{self, BridgeSpec, Output, Plan, Source};
use lockstep::himeno::{self, HimenoProblem};
use lockstep::nbody::{self, Mode, Params};
use lockstep::{Backend, Error, foundation, histogram, matmul, mg};

/// CpuSeq, Cpu and, when one is present, the GPU (a missing GPU fails under
/// `LOCKSTEP_REQUIRE_GPU=1`, as everywhere in the suites).
fn backends() -> Vec<Backend<'static>> {
    let gpu = lockstep_parity::gpu().expect("GPU required but unusable");
    [Backend::CpuSeq, Backend::Cpu].into_iter().chain(gpu.map(Backend::Gpu)).collect()
}

#[test]
fn every_backend_refuses_the_same_bad_input() {
    let plan = Plan::new(&BridgeSpec::standard(8)).unwrap();
    let short_z = vec![0.0f32; 10];
    let bins = histogram::bins_with_frac_bits(0.0, 1.0, 4, 52).unwrap();
    let mut broken = HimenoProblem::benchmark(4, 4, 4).unwrap();
    broken.b.pop();
    let p = Params { g: 1.0f32, eps: 0.01, dt: 1e-3 };
    let params = mg::validate(101, 3, 2, 10, 4).unwrap();
    for b in backends() {
        let who = b.name();
        let z = bridge::generate(b, &plan, Source::Buffer(&short_z), 10, Output::Paths);
        assert!(matches!(z, Err(Error::LengthMismatch { arg: "z", .. })), "{who}: {z:?}");
        let h = histogram::fixed(b, &bins, &[0.5; 4], Some(&[1e9; 4]));
        assert!(matches!(h, Err(Error::InvalidInput { what: "weights", .. })), "{who}: {h:?}");
        let h = histogram::fixed(b, &bins, &[0.5; 4], Some(&[1.0; 3]));
        assert!(matches!(h, Err(Error::LengthMismatch { arg: "weights", .. })), "{who}: {h:?}");
        let r = himeno::run(b, &broken, 1);
        assert!(matches!(r, Err(Error::LengthMismatch { arg: "b", .. })), "{who}: {r:?}");
        let mut empty = nbody::System::<f32> { pos: vec![], vel: vec![] };
        let r = nbody::run(b, Mode::Exact, &p, &mut empty, 1);
        assert!(matches!(r, Err(Error::InvalidInput { what: "body count", .. })), "{who}: {r:?}");
        let c = matmul::multiply::<i32>(b, 0, &[], &[]);
        assert!(matches!(c, Err(Error::InvalidInput { what: "matrix size", .. })), "{who}: {c:?}");
        let c = matmul::multiply::<i32>(b, 2, &[1; 3], &[1; 4]);
        assert!(matches!(c, Err(Error::LengthMismatch { arg: "a", .. })), "{who}: {c:?}");
        let c = matmul::multiply::<i32>(b, matmul::MAX_N + 1, &[], &[]);
        assert!(matches!(c, Err(Error::TooLarge { .. })), "{who}: {c:?}");
        let w = mg::mean_winners(b, &params, 1, 0, 0);
        assert!(matches!(w, Err(Error::InvalidInput { what: "trials", .. })), "{who}: {w:?}");
        let w = mg::mean_winners(b, &params, 1, u64::MAX, 2);
        assert!(matches!(w, Err(Error::InvalidInput { what: "trials", .. })), "{who}: {w:?}");
        let mut y = vec![2.0f32; 3];
        let r = foundation::axpy(b, 3.0, &[1.0f32; 4], &mut y);
        assert!(matches!(r, Err(Error::LengthMismatch { arg: "y", .. })), "{who}: {r:?}");
        assert_eq!(y, [2.0; 3], "{who}: y written although refused");
        let n = foundation::count_exceeding(b, &[1.0], f32::NAN);
        assert!(matches!(n, Err(Error::InvalidInput { what: "threshold", .. })), "{who}: {n:?}");
    }
}

#[test]
fn fast_mode_is_refused_on_the_cpu_twins() {
    let p = Params { g: 1.0f32, eps: 0.01, dt: 1e-3 };
    for b in [Backend::CpuSeq, Backend::Cpu] {
        let mut s = nbody::init::plummer(8, 1).convert::<f32>();
        let before = s.clone();
        let r = nbody::run(b, Mode::Fast, &p, &mut s, 1);
        assert!(matches!(r, Err(Error::InvalidInput { what: "mode", .. })), "{}: {r:?}", b.name());
        assert_eq!(s, before, "state changed although refused");
    }
}
