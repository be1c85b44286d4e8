//! Bad input to the Brownian bridge: a typed error naming the problem, before anything is
//! launched or written. Plan validation runs everywhere; launcher checks need a GPU.

use lockstep::Error;
use lockstep::bridge::{self as br, BridgeSpec, Noise, Output, Plan, Source, first_then_bisection};
use lockstep::bridge::{Bridge, DeviceSource};
use lockstep_parity::gpu_or_skip;

fn base() -> BridgeSpec {
    BridgeSpec {
        t0: 0.0,
        times: vec![0.25, 0.5, 0.75],
        t_end: 1.0,
        order: vec![2, 1, 3],
        start: vec![0.0, 1.0],
        noise: Noise::Covariance(vec![1.0, 0.5, 0.5, 2.0]),
    }
}

#[track_caller]
fn refused(spec: BridgeSpec, what: &str, says: &str) {
    match Plan::new(&spec) {
        Err(e @ Error::InvalidInput { .. }) | Err(e @ Error::TooLarge { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(what) && msg.contains(says), "message `{msg}` lacks `{what}` / `{says}`");
        }
        Err(e) => panic!("wrong error kind: {e:?}"),
        Ok(_) => panic!("accepted a bad spec: {spec:?}"),
    }
}

#[test]
fn the_base_problem_is_valid() {
    assert!(Plan::new(&base()).is_ok());
}

#[test]
fn times_must_be_finite_and_strictly_increasing() {
    refused(BridgeSpec { times: vec![0.25, 0.25, 0.75], ..base() }, "time points", "t2 = 0.25 is not after t1");
    refused(BridgeSpec { times: vec![0.5, 0.25, 0.75], ..base() }, "time points", "t2");
    refused(BridgeSpec { times: vec![0.25, f64::NAN, 0.75], ..base() }, "time points", "not finite");
    refused(BridgeSpec { t0: f64::NEG_INFINITY, ..base() }, "time points", "t0 = -inf is not finite");
    refused(BridgeSpec { t0: 0.25, ..base() }, "time points", "t1 = 0.25 is not after t0");
    refused(BridgeSpec { t0: 0.3, ..base() }, "time points", "t1");
    refused(BridgeSpec { t_end: 0.75, ..base() }, "time points", "T = 0.75 is not after t3");
    refused(BridgeSpec { t_end: f64::INFINITY, ..base() }, "time points", "T = inf");
}

#[test]
fn n_zero_is_refused() {
    refused(BridgeSpec { times: vec![], order: vec![], ..base() }, "time points", "N = 0");
}

#[test]
fn order_must_be_a_permutation() {
    refused(BridgeSpec { order: vec![2, 2, 3], ..base() }, "construction order", "repeats time index 2");
    refused(BridgeSpec { order: vec![2, 1], ..base() }, "construction order", "permutation of 1..=3");
    refused(BridgeSpec { order: vec![2, 1, 3, 4], ..base() }, "construction order", "4 entries");
    refused(BridgeSpec { order: vec![0, 1, 3], ..base() }, "construction order", "outside 1..=3");
    refused(BridgeSpec { order: vec![2, 1, 4], ..base() }, "construction order", "is 4");
    assert!(matches!(first_then_bisection(3, &[4]), Err(Error::InvalidInput { what: "construction order", .. })));
    assert!(matches!(first_then_bisection(3, &[1, 1]), Err(Error::InvalidInput { what: "construction order", .. })));
}

#[test]
fn covariance_must_be_symmetric_positive_definite() {
    refused(BridgeSpec { noise: Noise::Covariance(vec![1.0, 0.5, 0.4, 2.0]), ..base() }, "covariance", "not symmetric");
    refused(
        BridgeSpec { noise: Noise::Covariance(vec![1.0, 2.0, 2.0, 1.0]), ..base() },
        "covariance",
        "positive definite",
    );
    refused(
        BridgeSpec { noise: Noise::Covariance(vec![0.0, 0.0, 0.0, 1.0]), ..base() },
        "covariance",
        "positive definite",
    );
    refused(BridgeSpec { noise: Noise::Covariance(vec![1.0, 0.0, 0.0]), ..base() }, "covariance", "2×2");
    refused(
        BridgeSpec { noise: Noise::Covariance(vec![1.0, f64::NAN, f64::NAN, 1.0]), ..base() },
        "covariance",
        "not finite",
    );
    refused(BridgeSpec { noise: Noise::Cholesky(vec![1.0, 0.5, 0.0, 1.0]), ..base() }, "Cholesky", "lower triangular");
    refused(BridgeSpec { noise: Noise::Cholesky(vec![1.0, 0.0, 0.5, -1.0]), ..base() }, "Cholesky", "positive");
}

#[test]
fn dimension_must_be_one_to_eight() {
    refused(BridgeSpec { start: vec![], noise: Noise::Cholesky(vec![]), ..base() }, "dimension", "d = 0");
    refused(BridgeSpec { start: vec![0.0; 9], noise: Noise::Cholesky(vec![0.0; 81]), ..base() }, "dimension d", "9");
    refused(BridgeSpec { start: vec![0.0, f64::INFINITY], ..base() }, "start value", "x[1]");
}

#[test]
fn buffer_lengths_and_index_ranges_are_checked() {
    let plan = Plan::new(&base()).unwrap();
    let z = vec![0.0f32; plan.rows() * 10 - 1];
    let e = br::generate_seq(&plan, Source::Buffer(&z), 10, Output::Paths).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { arg: "z", expected: 80, got: 79 }), "{e}");
    let e = br::generate_par::<f64>(&plan, Source::Sobol { offset: u32::MAX }, 2, Output::Paths).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }) && e.to_string().contains("Sobol point index"), "{e}");
    // rows · paths passes 2^64: the error states the product's factors (no made-up value)
    let e = br::generate_seq::<f32>(&plan, Source::Philox { seed: 1 }, usize::MAX / 4, Output::Paths).unwrap_err();
    let product = format!("{} · {}", plan.rows(), usize::MAX / 4);
    assert!(matches!(e, Error::Overflow { what: "(N+1)·d·paths output elements", .. }), "{e}");
    assert!(e.to_string().contains(&product), "{e}");
    let e = br::generate_seq::<f32>(&plan, Source::Philox { seed: 1 }, 1 << 33, Output::Paths).unwrap_err();
    assert!(matches!(e, Error::TooLarge { what: "paths", .. }), "{e}");
    let e = br::sobol_directions(21_202).unwrap_err();
    assert!(e.to_string().contains("21201"), "{e}");
}

#[test]
fn launchers_refuse_before_launching() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = gpu_or_skip!();
    let bridge = Bridge::new(gpu)?;
    let plan = Plan::new(&base())?;
    let dp = bridge.upload::<f32>(&plan)?;
    let paths = 100;
    let z = lockstep::DeviceBuffer::from_slice(&vec![0.0f32; plan.rows() * paths - 1])?;
    let mut out = lockstep::DeviceBuffer::from_slice(&vec![7.0f32; plan.rows() * paths])?;
    let e = bridge.generate_on_device(&dp, DeviceSource::Buffer(&z), paths, Output::Paths, None, &mut out).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { arg: "z", .. }), "{e}");
    let e = bridge.generate_on_device(&dp, DeviceSource::Philox { seed: 1 }, paths + 1, Output::Paths, None, &mut out);
    assert!(matches!(e, Err(Error::LengthMismatch { arg: "out", .. })));
    let e =
        bridge.generate_on_device(&dp, DeviceSource::Sobol { offset: u32::MAX }, paths, Output::Paths, None, &mut out);
    assert!(matches!(e, Err(Error::TooLarge { .. })));
    let e = bridge.normals_on_device(&dp, DeviceSource::Buffer(&z), paths, &mut out);
    assert!(matches!(e, Err(Error::InvalidInput { .. })));
    // A strategy whose stack needs scratch memory refuses to run without it.
    // (d = 8 at 64 steps: 7 slots × 8 × 128 threads > SHARED_STACK.)
    let big = BridgeSpec {
        start: vec![0.0; 8],
        noise: Noise::Cholesky((0..64).map(|i| if i % 9 == 0 { 1.0 } else { 0.0 }).collect()),
        ..BridgeSpec::standard(64)
    };
    let bp = Plan::new(&big)?;
    assert!(!bp.stack_in_shared(bridge.block_size()));
    let dbp = bridge.upload::<f32>(&bp)?;
    let mut out2 = lockstep::DeviceBuffer::from_slice(&vec![7.0f32; bp.rows() * paths])?;
    let e = bridge.generate_on_device(&dbp, DeviceSource::Philox { seed: 1 }, paths, Output::Paths, None, &mut out2);
    assert!(matches!(e, Err(Error::InvalidInput { what: "scratch", .. })));
    gpu.synchronize()?;
    // Nothing was written.
    let host = out.as_host_vec()?;
    assert!(host.iter().all(|&v| v == 7.0));
    Ok(())
}
