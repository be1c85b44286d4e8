//! Bad input for the Minority Game: every refusal is a typed error naming the parameter, before
//! any allocation or launch. The pure checks run everywhere; the launcher checks need a GPU.

use lockstep::Error;
use lockstep::mg::{Distributed, Mg};
use lockstep::mg::{play, validate};
use lockstep_parity::gpu_or_skip;
use lockstep_shared::mg::MgParams;
use proptest::test_runner::TestCaseError;

fn invalid(r: lockstep::Result<MgParams>, what: &str, says: &str) {
    match r {
        Err(e @ Error::InvalidInput { what: w, .. }) => {
            assert_eq!(w, what, "{e}");
            assert!(e.to_string().contains(says), "`{e}` should say `{says}`");
        }
        other => panic!("expected InvalidInput for {what}, got {other:?}"),
    }
}

#[test]
fn even_and_zero_agent_counts_are_refused() {
    invalid(validate(10, 5, 2, 100, 2), "agent count n", "even");
    invalid(validate(0, 5, 2, 100, 1), "agent count n", "n = 0");
    assert!(matches!(validate(1 << 63 | 1, 5, 2, 10, 1), Err(Error::TooLarge { .. })));
    assert!(validate(1, 1, 1, 1, 1).is_ok());
}

#[test]
fn memory_and_strategy_counts_outside_the_range_are_refused() {
    invalid(validate(11, 0, 2, 10, 1), "memory m", "1 ≤ m ≤ 16");
    invalid(validate(11, 17, 2, 10, 1), "memory m", "1 ≤ m ≤ 16");
    invalid(validate(11, 5, 0, 10, 1), "strategy count s", "1 ≤ s ≤ 16");
    invalid(validate(11, 5, 17, 10, 1), "strategy count s", "1 ≤ s ≤ 16");
    assert!(validate(11, 16, 16, 10, 1).is_ok());
}

#[test]
fn zero_steps_and_bad_group_counts_are_refused() {
    invalid(validate(11, 5, 2, 0, 1), "step count p", "p = 0");
    assert!(matches!(validate(11, 5, 2, (1 << 24) + 1, 1), Err(Error::TooLarge { what: "step count p", .. })));
    invalid(validate(11, 5, 2, 10, 0), "group count", "1 ≤ G ≤ n");
    invalid(validate(11, 5, 2, 10, 12), "group count", "1 ≤ G ≤ n");
    assert!(validate(11, 5, 2, 10, 11).is_ok());
}

#[test]
fn the_cpu_models_refuse_bad_input_too() {
    let bad = MgParams::new(10, 5, 2, 10, 1);
    assert!(matches!(play(&bad, 1, 0, None, false), Err(Error::InvalidInput { .. })));
    assert!(matches!(play(&bad, 1, 0, Some(3), true), Err(Error::InvalidInput { .. })));
}

#[test]
fn launchers_refuse_bad_input_without_launching() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    let mg = Mg::new(gpu).unwrap();
    // bad parameters: refused by every model before any allocation
    let even = MgParams::new(10, 5, 2, 10, 2);
    assert!(matches!(mg.play(&even, 1, 0, Distributed::KernelPerStep, false), Err(Error::InvalidInput { .. })));
    assert!(matches!(mg.play_standalone(&even, 1, 0, 1, None, false), Err(Error::InvalidInput { .. })));
    // more memory than the GPU has: refused before allocating, with its terms where the byte
    // count passes 2^64 (no made-up value)
    let huge = MgParams::new((1 << 61) + 1, 5, 2, 10, 1 << 20);
    let e = mg.prepare(&huge, 1, 0, false).err().expect("huge game accepted");
    assert!(matches!(e, Error::Overflow { what: "device memory this game needs (bytes)", .. }), "{e}");
    assert!(e.to_string().contains(&format!("{} agents", huge.n)), "{e}");
    let large = MgParams::new((1 << 40) + 1, 5, 2, 10, 1 << 20);
    let e = mg.prepare(&large, 1, 0, false).err().expect("large game accepted");
    assert!(matches!(e, Error::TooLarge { what: "device memory this game needs (bytes)", .. }), "{e}");
    // the standalone model's per-block workspace passes 2^64 bytes: refused with its factors
    let e = mg.play_standalone(&huge, 1, 0, 1, None, false).expect_err("huge standalone game accepted");
    assert!(matches!(e, Error::Overflow { what: "device memory per game (bytes)", .. }), "{e}");
    // an unsafe grid for the grid-sync model: refused, never launched (it would deadlock)
    let small = MgParams::new(101, 3, 2, 8, 8);
    let cap = mg.grid_sync_capacity(&small, false).unwrap();
    assert!(cap > 0);
    let mut game = mg.prepare(&small, 1, 0, false).unwrap();
    let e = mg.run_on_device(&mut game, Distributed::GridSync { blocks: Some(cap + 1) }).expect_err("accepted");
    assert!(matches!(e, Error::TooLarge { value, max, .. } if value == cap as u64 + 1 && max == cap as u64), "{e}");
    assert!(e.to_string().contains("deadlock"), "{e}");
    assert!(matches!(
        mg.run_on_device(&mut game, Distributed::GridSync { blocks: Some(0) }),
        Err(Error::InvalidInput { what: "grid-sync blocks", .. })
    ));
    // the general (trace-capable) kernel has its own, smaller capacity
    let traced_cap = mg.grid_sync_capacity(&small, true).unwrap();
    let mut traced = mg.prepare(&small, 1, 0, true).unwrap();
    let e =
        mg.run_on_device(&mut traced, Distributed::GridSync { blocks: Some(traced_cap + 1) }).expect_err("accepted");
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    // a block size the general kernels' registers do not allow is refused before launching
    let wide = Mg::with_block_size(gpu, 1024).unwrap();
    let mut traced = wide.prepare(&small, 1, 0, true).unwrap();
    let e = wide.run_on_device(&mut traced, Distributed::KernelPerStep).expect_err("1024 threads accepted");
    assert!(matches!(e, Error::TooLarge { .. }) && e.to_string().contains("registers"), "{e}");
    // a trace too large to record
    let big = MgParams::new(1_000_001, 5, 2, 2_000, 1024);
    assert!(matches!(mg.prepare(&big, 1, 0, true), Err(Error::TooLarge { what: "trace size in bytes", .. })));
    // zero trials / zero blocks in the standalone model
    assert!(matches!(mg.play_standalone(&small, 1, 0, 0, None, false), Err(Error::InvalidInput { .. })));
    assert!(matches!(
        mg.play_standalone(&small, 1, 0, 2, Some(0), false),
        Err(Error::InvalidInput { what: "standalone blocks", .. })
    ));
    Ok(())
}
