//! GPU = CPU for the aggregated-atomic probes (proptest; skipped without a GPU): final counters
//! exact, every call's returned old values form the prefix sums of some order (per counter), and
//! for one warp the exact bits of the lane model (`lockstep_cuda_std::aggregate::lanes::warp_model`),
//! floats included.

use lockstep::foundation::Probes;
use lockstep::histogram::Method;
use lockstep_cuda_std::aggregate::{Aggregate, lanes};
use lockstep_parity::data::SplitMix64;
use lockstep_parity::{assert_bits_eq, config, data, gpu_or_skip};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const WARP_METHODS: [Method; 5] = [Method::Shared, Method::Shfl, Method::Match, Method::Block, Method::Count];

fn probe_methods(f64_too: bool) -> impl Strategy<Value = Method> {
    let mut v = vec![Method::Plain, Method::Shared, Method::Shfl, Method::Match, Method::Block, Method::Count];
    if f64_too {
        v.extend([Method::Cas, Method::CasAggregated]);
    }
    proptest::sample::select(v)
}

fn blocks() -> impl Strategy<Value = u32> {
    prop_oneof![Just(32u32), Just(96), Just(256), Just(1024)]
}

/// Values for the probes: small positive integers, so every sum is exact in every type.
trait Small: Aggregate + lockstep::foundation::ProbeValue + PartialOrd + std::fmt::Debug {
    fn small(v: u32) -> Self;
}
macro_rules! small {
    ($($t:ty),*) => {$( impl Small for $t { fn small(v: u32) -> Self { v as $t } } )*};
}
small!(u32, i32, u64, f32, f64);

/// Checks one probe launch: final counters, and per counter that the returned olds, sorted,
/// are `init, init + v_1, init + v_1 + v_2, …` for the values of the calls in that order.
fn check_prefix_sums<T: Small>(
    method: Method,
    targets: &[u32],
    values: &[T],
    init: &[T],
    counters: &[T],
    olds: &[T],
) -> Result<(), TestCaseError> {
    let m = init.len();
    let mut per: Vec<Vec<(T, T)>> = vec![Vec::new(); m];
    for i in 0..targets.len() {
        let v = if method == Method::Count { T::small(1) } else { values[i] };
        per[targets[i] as usize].push((olds[i], v));
    }
    for (c, calls) in per.iter_mut().enumerate() {
        calls.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        let mut acc = init[c];
        for (j, &(old, v)) in calls.iter().enumerate() {
            prop_assert!(old == acc, "{method:?} counter {c}: call {j} returned {old:?}, want {acc:?}");
            acc = acc.agg_add(v);
        }
        prop_assert!(counters[c] == acc, "{method:?} counter {c}: final {:?}, want {acc:?}", counters[c]);
    }
    Ok(())
}

fn probe_case<T: Small>(
    a: &Probes<'_>,
    method: Method,
    block: u32,
    n: usize,
    m: usize,
    seed: u64,
) -> Result<(), TestCaseError> {
    let mut r = SplitMix64(seed);
    let targets: Vec<u32> = (0..n).map(|_| (r.next_u64() % m as u64) as u32).collect();
    let values: Vec<T> = (0..n).map(|_| T::small(1 + (r.next_u64() % 1000) as u32)).collect();
    let init: Vec<T> = (0..m).map(|_| T::small((r.next_u64() % 50) as u32)).collect();
    let mut counters = init.clone();
    let olds = a.probe(method, block, &targets, &values, &mut counters)?;
    check_prefix_sums(method, &targets, &values, &init, &counters, &olds)
}

/// One warp (n ≤ 32, block 32): the returns are deterministic, exactly the lane model's, for
/// arbitrary float values too.
fn one_warp_case<T: Aggregate + lockstep::foundation::ProbeValue + lockstep_parity::Bits>(
    a: &Probes<'_>,
    method: Method,
    values: [T; 32],
    n: usize,
    addrs_mod: u64,
    seed: u64,
) -> Result<(), TestCaseError> {
    let mut r = SplitMix64(seed);
    let m = addrs_mod as usize;
    let targets: Vec<u32> = (0..n).map(|_| (r.next_u64() % addrs_mod) as u32).collect();
    let init: Vec<T> = vec![T::ZERO; m];
    let mut counters = init.clone();
    let vals = &values[..n];
    let olds = a.probe(method, 32, &targets, vals, &mut counters)?;
    let mut addrs = [0u64; 32];
    let mut mvals = [T::ZERO; 32];
    for i in 0..n {
        addrs[i] = targets[i] as u64;
        mvals[i] = if method == Method::Count { T::from_count(1) } else { vals[i] };
    }
    let active = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
    let mut mem = init.clone();
    let want = lanes::warp_model(active, &addrs, &mvals, |ad, t| {
        let o = mem[ad as usize];
        // the writer's native atomic: f32 `atom.add` flushes subnormals (PTX ISA)
        mem[ad as usize] = o.atom_add(t);
        o
    });
    assert_bits_eq(&format!("{method:?} one warp"), &olds, &want[..n], |i| format!("lane {i} target {}", targets[i]))?;
    assert_bits_eq(&format!("{method:?} one warp counters"), &counters, &mem, |c| format!("counter {c}"))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn aggregate_probe_u32_returns_prefix_sums(method in probe_methods(false), block in blocks(), n in 0usize..5000, m in 1usize..70, seed: u64) {
        let gpu = gpu_or_skip!();
        probe_case::<u32>(&Probes::new(gpu)?, method, block, n, m, seed)?;
    }

    #[test]
    fn aggregate_probe_i32_returns_prefix_sums(method in probe_methods(false), block in blocks(), n in 0usize..5000, m in 1usize..70, seed: u64) {
        let gpu = gpu_or_skip!();
        probe_case::<i32>(&Probes::new(gpu)?, method, block, n, m, seed)?;
    }

    #[test]
    fn aggregate_probe_u64_returns_prefix_sums(method in probe_methods(false), block in blocks(), n in 0usize..5000, m in 1usize..70, seed: u64) {
        let gpu = gpu_or_skip!();
        probe_case::<u64>(&Probes::new(gpu)?, method, block, n, m, seed)?;
    }

    #[test]
    fn aggregate_probe_floats_return_prefix_sums(method in probe_methods(true), block in blocks(), n in 0usize..5000, m in 1usize..70, seed: u64) {
        let gpu = gpu_or_skip!();
        let a = Probes::new(gpu)?;
        if !matches!(method, Method::Cas | Method::CasAggregated) {
            probe_case::<f32>(&a, method, block, n, m, seed)?;
        }
        probe_case::<f64>(&a, method, block, n, m, seed ^ 3)?;
    }

    #[test]
    fn aggregate_probe_one_warp_is_the_lane_model(method in proptest::sample::select(WARP_METHODS.to_vec()), n in 1usize..=32, m in 1u64..6, seed: u64) {
        let gpu = gpu_or_skip!();
        let a = Probes::new(gpu)?;
        let f = data::f32s(32, seed);
        let d = data::f64s(32, seed ^ 5);
        let f: [f32; 32] = std::array::from_fn(|i| if f[i].is_nan() { 1.5 } else { f[i] });
        let d: [f64; 32] = std::array::from_fn(|i| if d[i].is_nan() { -2.5 } else { d[i] });
        one_warp_case::<f32>(&a, method, f, n, m, seed)?;
        one_warp_case::<f64>(&a, method, d, n, m, seed)?;
        let u: [u32; 32] = std::array::from_fn(|i| (seed >> (i % 32)) as u32 ^ i as u32);
        one_warp_case::<u32>(&a, method, u, n, m, seed)?;
        let cas = Method::CasAggregated;
        if method == Method::Match {
            one_warp_case::<f64>(&a, cas, d, n, m, seed)?;
        }
    }
}
