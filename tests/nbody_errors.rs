//! Bad input to the N-body and matrix-product API: typed errors with clear messages, before
//! any allocation or launch. Pure validation runs everywhere; launcher checks need a GPU.

use lockstep::Error;
use lockstep::matmul::{MatKernel, Matmul, dims};
use lockstep::nbody::{DeviceSystem, Method, Mode, Nbody, Params, System, ensure_fits, validate};
use lockstep::nbody::{init, run_seq};
use lockstep_parity::gpu_or_skip;
use proptest::test_runner::TestCaseError;

fn good() -> (Params<f64>, System<f64>) {
    (Params { g: 1.0, eps: 0.0, dt: 0.01 }, init::ball(10, 1.0, 1.0, 1))
}

fn why(e: &Error) -> String {
    e.to_string()
}

#[test]
fn zero_bodies_are_refused() {
    let (p, _) = good();
    let e = validate(&p, &System::<f64> { pos: vec![], vel: vec![] }).unwrap_err();
    assert!(matches!(e, Error::InvalidInput { what: "body count", .. }), "{e}");
    assert!(why(&e).contains("N = 0"), "{e}");
    let mut empty = System::<f64> { pos: vec![], vel: vec![] };
    assert!(matches!(run_seq(&p, &mut empty, 1), Err(Error::InvalidInput { what: "body count", .. })));
}

#[test]
fn bad_time_steps_are_refused() {
    let (_, s) = good();
    for dt in [0.0, -0.01, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0] {
        let e = validate(&Params { g: 1.0, eps: 0.0, dt }, &s).unwrap_err();
        assert!(matches!(e, Error::InvalidInput { what: "time step", .. }), "{dt}: {e}");
        assert!(why(&e).contains("finite and > 0"), "{e}");
    }
}

#[test]
fn bad_masses_name_the_body() {
    let (p, s0) = good();
    for m in [-1.0, f64::NAN, f64::INFINITY, -f64::MIN_POSITIVE] {
        let mut s = s0.clone();
        s.pos[4 * 7 + 3] = m;
        let e = validate(&p, &s).unwrap_err();
        assert!(matches!(e, Error::InvalidInput { what: "mass", .. }), "{m}: {e}");
        assert!(why(&e).contains("body 7"), "{e}");
        let before = s.clone();
        assert!(matches!(run_seq(&p, &mut s, 3), Err(Error::InvalidInput { what: "mass", .. })));
        assert_eq!(format!("{before:?}"), format!("{s:?}"), "state changed although refused");
    }
    let mut zero = s0.clone();
    zero.pos[3] = 0.0; // a massless test particle is fine
    assert!(validate(&p, &zero).is_ok());
}

#[test]
fn other_bad_parameters_and_states_are_refused() {
    let (p, s) = good();
    assert!(matches!(validate(&Params { eps: -0.1, ..p }, &s), Err(Error::InvalidInput { what: "softening", .. })));
    assert!(matches!(
        validate(&Params { g: f64::NAN, ..p }, &s),
        Err(Error::InvalidInput { what: "gravitational constant", .. })
    ));
    assert!(matches!(validate(&Params { g: -1.0, ..p }, &s), Err(Error::InvalidInput { .. })));
    let mut bad = s.clone();
    bad.pos[1] = f64::NAN;
    assert!(matches!(validate(&p, &bad), Err(Error::InvalidInput { what: "position", .. })));
    let mut bad = s.clone();
    bad.vel[2] = f64::INFINITY;
    assert!(matches!(validate(&p, &bad), Err(Error::InvalidInput { what: "velocity", .. })));
    let mut bad = s.clone();
    bad.vel.pop();
    assert!(matches!(validate(&p, &bad), Err(Error::LengthMismatch { arg: "velocities", .. })));
    let mut bad = s.clone();
    bad.pos.push(1.0);
    assert!(matches!(validate(&p, &bad), Err(Error::InvalidInput { what: "positions", .. })));
}

#[test]
fn unparsable_initial_conditions_name_the_line() {
    let cases = [
        ("x,y,z,vx,vy,vz,m\n0,0,0,0,0,0,1\n1,2,three,0,0,0,1\n", "line 3", "`three` is not a number"),
        ("0,0,0,0,0,0,1\n\n1,2,3,4,5,6\n", "line 3", "6 fields, expected 7"),
        ("0,0,0,0,0,0,-2\n", "line 1", "negative"),
        ("# only a comment\n1,1,1,0,0,0,inf\n", "line 2", "not finite"),
        ("0,0,0,0,0,0,1\nnot,a,header,here,at,all,!\n", "line 2", "not a number"),
    ];
    for (text, line, msg) in cases {
        let e = init::from_csv(text).unwrap_err();
        let s = why(&e);
        assert!(matches!(e, Error::InvalidInput { what: "initial-condition file", .. }), "{s}");
        assert!(s.contains(line) && s.contains(msg), "{text:?}: {s}");
    }
    assert!(why(&init::from_csv("# nothing\n\n").unwrap_err()).contains("N = 0"));
}

#[test]
fn sizes_past_device_memory_are_refused_before_allocation() {
    let e = ensure_fits("device memory needed for the bodies (bytes)", 200 << 30, 80 << 30).unwrap_err();
    assert!(matches!(e, Error::TooLarge { value, max, .. } if value == 200 << 30 && max == 80 << 30), "{e}");
    assert!(why(&e).contains("device memory"), "{e}");
    assert!(ensure_fits("x", 10, 10).is_ok());
}

#[test]
fn matrix_shapes_and_tiles_are_checked() {
    assert!(matches!(
        dims(MatKernel::Global { block: (16, 16) }, 0),
        Err(Error::InvalidInput { what: "matrix size", .. })
    ));
    for tile in [0, 3, 12, 32] {
        let e = dims(MatKernel::Shared { tile }, 64).unwrap_err();
        assert!(matches!(e, Error::InvalidInput { what: "tile", .. }), "{tile}: {e}");
        assert!(why(&e).contains("divide"), "{e}");
    }
    for block in [(0, 4), (4, 0), (64, 32), (1025, 1)] {
        assert!(
            matches!(dims(MatKernel::Global { block }, 64), Err(Error::InvalidInput { what: "threads per block", .. })),
            "{block:?}"
        );
    }
    assert!(matches!(dims(MatKernel::Global { block: (1, 1) }, 70_000), Err(Error::TooLarge { .. })));
    let d = dims(MatKernel::Shared { tile: 16 }, 17).unwrap();
    assert_eq!((d.grid, d.block), ([2, 2, 1], [16, 16, 1]));
}

#[test]
fn nbody_cpu_split_refuses_more_than_32_lanes() {
    let (p, s0) = good();
    let mut s = s0.clone();
    let e = lockstep::nbody::run_seq_split(&p, &mut s, 1, 6).unwrap_err();
    assert!(matches!(e, Error::InvalidInput { what: "split shift", .. }), "{e}");
    assert_eq!(s, s0);
    lockstep::nbody::run_seq_split(&p, &mut s, 1, 5).unwrap();
}

#[test]
fn nbody_launcher_refuses_bad_input_without_launching() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    for bad in [0, 16, 48, 2048] {
        assert!(
            matches!(Nbody::with_block_size(gpu, bad), Err(Error::InvalidInput { what: "block size", .. })),
            "{bad}"
        );
    }
    // A block the kernel cannot launch (registers) is a typed error, never a CUDA failure.
    let big = Nbody::with_block_size(gpu, 1024).unwrap();
    let (p, s0) = good();
    for method in [Method::Global, Method::Shared] {
        for mode in [Mode::Exact, Mode::Fast] {
            let max = big.max_block_size::<f64>(method, mode).unwrap();
            assert!((256..=1024).contains(&max) && max.is_multiple_of(32), "{max}");
            let mut s = s0.clone();
            match big.run(method, mode, &p, &mut s, 1) {
                Ok(()) => assert_eq!(max, 1024),
                Err(e) => {
                    assert!(max < 1024 && matches!(e, Error::InvalidInput { what: "block size", .. }), "{e}");
                    assert!(e.to_string().contains(&format!("at most {max}")), "{e}");
                    assert_eq!(s, s0);
                }
            }
        }
    }
    let nb = Nbody::new(gpu).unwrap();
    assert!(matches!(
        Nbody::new(gpu).unwrap().with_split_shift(6),
        Err(Error::InvalidInput { what: "split shift", .. })
    ));
    let mut s = s0.clone();
    let e = nb.run(Method::Shared, Mode::Exact, &Params { dt: -1.0, ..p }, &mut s, 5).unwrap_err();
    assert!(matches!(e, Error::InvalidInput { what: "time step", .. }), "{e}");
    assert_eq!(s, s0);
    let mut empty = System::<f64> { pos: vec![], vel: vec![] };
    assert!(matches!(
        nb.run(Method::Global, Mode::Fast, &p, &mut empty, 1),
        Err(Error::InvalidInput { what: "body count", .. })
    ));
    let mut dev = DeviceSystem::upload(gpu, &p, &s0).unwrap();
    assert!(matches!(
        nb.stage_on_device(Method::Global, Mode::Exact, &p, 4, &mut dev),
        Err(Error::InvalidInput { what: "RK4 stage", .. })
    ));
    let bad_eps = Params { eps: f64::NAN, ..p };
    assert!(matches!(
        nb.stage_on_device(Method::Shared, Mode::Fast, &bad_eps, 0, &mut dev),
        Err(Error::InvalidInput { what: "softening", .. })
    ));
    assert!(matches!(
        nb.run_observed(Method::Global, Mode::Exact, &p, &mut s, 3, 0, |_, _| Ok(())),
        Err(Error::InvalidInput { what: "observation interval", .. })
    ));
    assert_eq!(s, s0);
    Ok(())
}

#[test]
fn matmul_launcher_refuses_bad_input_and_huge_sizes() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    let m = Matmul::new(gpu).unwrap();
    // 3 × 65535² × 8 B ≈ 103 GB: refused before allocating when the GPU has less free; else
    // the (empty) inputs are refused — either way nothing is allocated or launched.
    let (free, _) = gpu.memory_info().unwrap();
    let e = m.multiply::<i64>(MatKernel::Shared { tile: 16 }, 65_535, &[], &[]).unwrap_err();
    if (free as u64) < 3 * 65_535u64 * 65_535 * 8 {
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        assert!(why(&e).contains("device memory"), "{e}");
    } else {
        assert!(matches!(e, Error::LengthMismatch { arg: "a", .. }), "{e}");
    }
    let a = vec![1i32; 16];
    assert!(matches!(
        m.multiply(MatKernel::Shared { tile: 5 }, 4, &a, &a),
        Err(Error::InvalidInput { what: "tile", .. })
    ));
    assert!(matches!(
        m.multiply(MatKernel::Global { block: (4, 4) }, 5, &a, &a),
        Err(Error::LengthMismatch { arg: "a", .. })
    ));
    assert!(matches!(m.multiply(MatKernel::Global { block: (4, 4) }, 0, &a, &a), Err(Error::InvalidInput { .. })));
    Ok(())
}

#[test]
fn nbody_record_steps_refuses_zero_steps_and_bad_params() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    let nb = Nbody::new(gpu).unwrap();
    let (p, s0) = good();
    let dev = DeviceSystem::upload(gpu, &p, &s0).unwrap();
    let zero = nb.record_steps(Method::Shared, Mode::Exact, &p, &dev, 0).err().unwrap();
    assert!(matches!(zero, Error::InvalidInput { what: "recorded steps", .. }), "{zero}");
    let bad = nb.record_steps(Method::Shared, Mode::Exact, &Params { dt: 0.0, ..p }, &dev, 2).err().unwrap();
    assert!(matches!(bad, Error::InvalidInput { what: "time step", .. }), "{bad}");
    Ok(())
}
