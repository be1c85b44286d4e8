//! The parity harness shared by every suite in `tests/`.
//!
//! - [`gpu_or_skip!`]: the GPU, or — the one place a test's GPU part is skipped — an early
//!   `return Ok(())` after [`gpu`] printed the test's skip line (a failure when
//!   `LOCKSTEP_REQUIRE_GPU=1`, as the bundle's script sets). Where a test's CPU twin is cheap it
//!   is computed before the skip, so that part runs on every machine; the GPU-only properties
//!   (e.g. `bridge_parity`'s, which compare two GPU paths with the twin) skip first.
//! - [`max_abs_error`] / [`assert_within`]: NaN-aware tolerance checks for the few results
//!   compared within a stated tolerance instead of bit for bit.
//! - [`assert_bits_eq`]: compares results bit for bit and reports the first mismatch with its
//!   index, both values as bits, and the inputs that produced it.
//! - [`data`]: fast seeded inputs, floats with NaN/∞/subnormal/±0 payloads mixed in.
//! - [`config`]: proptest settings (256 cases unless `PROPTEST_CASES` says otherwise).
//!
//! **NaN policy.** IEEE 754 does not specify which NaN an operation returns, and GPUs return a
//! canonical NaN where x86 propagates an operand's payload. Any NaN therefore equals any NaN;
//! every other value — signed zeros and subnormals included — must match to the bit.

use lockstep::{Error, Gpu};
use proptest::test_runner::{Config, TestCaseError};
use std::collections::BTreeSet;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// Whether a missing GPU is a failure (`LOCKSTEP_REQUIRE_GPU=1`).
pub fn gpu_required() -> bool {
    std::env::var("LOCKSTEP_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// The GPU shared by this test binary, or `None` (with a skip line on the terminal) when none
/// is present. Fails the test when `LOCKSTEP_REQUIRE_GPU=1` and there is no GPU, or when the
/// GPU exists but lockstep's module does not load.
pub fn gpu() -> Result<Option<&'static Gpu>, TestCaseError> {
    gpu_or_unusable().map_err(|e| TestCaseError::fail(e.to_string()))
}

/// A GPU that is required but unusable (see [`gpu`]): a `std::error::Error`, so that
/// [`gpu_or_skip!`]'s `?` works in tests returning `Result<(), TestCaseError>` (proptest converts
/// any error) and `Result<(), Box<dyn Error>>` alike.
#[derive(Debug)]
pub struct GpuUnusable(String);

impl std::fmt::Display for GpuUnusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GPU required but unusable: {}", self.0)
    }
}

impl std::error::Error for GpuUnusable {}

/// [`gpu`] with its failure as a [`GpuUnusable`] (what [`gpu_or_skip!`] calls).
pub fn gpu_or_unusable() -> Result<Option<&'static Gpu>, GpuUnusable> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    static SKIPPED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    match GPU.get_or_init(|| {
        Gpu::new().map_err(|e| match e {
            Error::NoDevice { reason } | Error::NoDriver { reason } => format!("no-device: {reason}"),
            other => format!("error: {other}"),
        })
    }) {
        Ok(g) => Ok(Some(g)),
        Err(msg) if msg.starts_with("no-device: ") && !gpu_required() => {
            // libtest runs each test on a thread named after it: one line per skipped test.
            let test = std::thread::current().name().unwrap_or("unnamed test").to_string();
            let first = SKIPPED.lock().map(|mut s| s.insert(test.clone())).unwrap_or(true);
            if first {
                // Written to the terminal directly: libtest captures print!, not this handle.
                // `cargo xtask test` counts these lines for its closing summary.
                let _ = writeln!(
                    std::io::stderr(),
                    "{SKIP_MARK} {test}: {} (set LOCKSTEP_REQUIRE_GPU=1 to make this a failure)",
                    &msg["no-device: ".len()..]
                );
            }
            Ok(None)
        }
        Err(msg) => Err(GpuUnusable(msg.clone())),
    }
}

/// The GPU, or the end of the test: `let gpu = gpu_or_skip!();` evaluates to the shared
/// `&'static Gpu`, or returns `Ok(())` from the enclosing function (a proptest body, or a test
/// returning `Result<(), TestCaseError>`) after [`gpu`] printed the test's `SKIPPED (no GPU)`
/// line. Fails the test (through `?`) when `LOCKSTEP_REQUIRE_GPU=1` and there is no GPU, or
/// when lockstep's module does not load. Put the CPU twin's work before it.
#[macro_export]
macro_rules! gpu_or_skip {
    () => {
        match $crate::gpu_or_unusable()? {
            ::core::option::Option::Some(gpu) => gpu,
            ::core::option::Option::None => return ::core::result::Result::Ok(()),
        }
    };
}

/// How a skipped GPU test announces itself on stderr (the start of its line).
pub const SKIP_MARK: &str = "SKIPPED (no GPU)";

/// Proptest settings for the suites: `PROPTEST_CASES` (default 256) cases, no persistence
/// files.
pub fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// Values compared bit for bit.
pub trait Bits: Copy + std::fmt::Debug {
    /// The bit pattern.
    fn bits(self) -> u64;
    /// Whether the value is a NaN (any payload).
    fn is_nan_value(self) -> bool;
}

impl Bits for f32 {
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn is_nan_value(self) -> bool {
        self.is_nan()
    }
}

impl Bits for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn is_nan_value(self) -> bool {
        self.is_nan()
    }
}

impl Bits for u32 {
    fn bits(self) -> u64 {
        self as u64
    }
    fn is_nan_value(self) -> bool {
        false
    }
}

impl Bits for u64 {
    fn bits(self) -> u64 {
        self
    }
    fn is_nan_value(self) -> bool {
        false
    }
}

/// Index of the first element where `got` and `want` differ (by the NaN policy), or of the
/// first extra element when the lengths differ.
pub fn first_mismatch<T: Bits>(got: &[T], want: &[T]) -> Option<usize> {
    let same = |(g, w): (&T, &T)| g.bits() == w.bits() || (g.is_nan_value() && w.is_nan_value());
    got.iter().zip(want).position(|p| !same(p)).or_else(|| (got.len() != want.len()).then(|| got.len().min(want.len())))
}

/// Fails with the first mismatch: its index, both values and bit patterns, and
/// `inputs(index)` describing what produced it.
#[track_caller]
pub fn assert_bits_eq<T: Bits>(
    what: &str,
    got: &[T],
    want: &[T],
    inputs: impl Fn(usize) -> String,
) -> Result<(), TestCaseError> {
    match first_mismatch(got, want) {
        None => Ok(()),
        Some(i) if i >= got.len().min(want.len()) => {
            Err(TestCaseError::fail(format!("{what}: lengths differ: got {}, want {}", got.len(), want.len())))
        }
        Some(i) => Err(TestCaseError::fail(format!(
            "{what}: first mismatch at index {i} of {}: got {:?} (bits {:#x}), want {:?} (bits {:#x}); inputs: {}",
            got.len(),
            got[i],
            got[i].bits(),
            want[i],
            want[i].bits(),
            inputs(i)
        ))),
    }
}

/// The largest `|got[i] - want[i]|`, NaN-aware: `+∞` when any difference is NaN (a NaN on
/// either side, or ∞ − ∞) or when the lengths differ, so a NaN can never pass a tolerance.
/// (`fold(0.0, f64::max)` would silently drop the NaN.) `0` for two empty slices.
pub fn max_abs_error<T: Copy + Into<f64>>(got: &[T], want: &[T]) -> f64 {
    worst_error(got, want).map_or(0.0, |(_, e)| e)
}

/// The largest `|v|`, `+∞` when any value is NaN; `0` for an empty slice.
pub fn max_abs<T: Copy + Into<f64>>(v: &[T]) -> f64 {
    v.iter().map(|&x| nan_is_inf(x.into().abs())).fold(0.0, f64::max)
}

fn nan_is_inf(e: f64) -> f64 {
    if e.is_nan() { f64::INFINITY } else { e }
}

/// Index and size of the largest NaN-aware error (see [`max_abs_error`]); `None` when both are
/// empty.
fn worst_error<T: Copy + Into<f64>>(got: &[T], want: &[T]) -> Option<(usize, f64)> {
    if got.len() != want.len() {
        return Some((got.len().min(want.len()), f64::INFINITY));
    }
    got.iter().zip(want).map(|(&g, &w)| nan_is_inf((g.into() - w.into()).abs())).enumerate().fold(
        None,
        |best, (i, e)| match best {
            Some((_, b)) if b >= e => best,
            _ => Some((i, e)),
        },
    )
}

/// Fails unless every `|got[i] - want[i]| ≤ tol` ([`max_abs_error`]: a NaN difference or a
/// length mismatch always fails), reporting the worst element with `inputs(index)`.
#[track_caller]
pub fn assert_within<T: Copy + Into<f64> + std::fmt::Debug>(
    what: &str,
    got: &[T],
    want: &[T],
    tol: f64,
    inputs: impl Fn(usize) -> String,
) -> Result<(), TestCaseError> {
    match worst_error(got, want) {
        Some((i, e)) if e > tol || tol.is_nan() => Err(TestCaseError::fail(if got.len() != want.len() {
            format!("{what}: lengths differ: got {}, want {}", got.len(), want.len())
        } else {
            format!(
                "{what}: error {e:e} > tolerance {tol:e} at index {i} of {}: got {:?}, want {:?}; inputs: {}",
                got.len(),
                got[i],
                want[i],
                inputs(i)
            )
        })),
        _ => Ok(()),
    }
}

/// Seeded input data.
pub mod data {
    /// SplitMix64: a small, fast, well-mixed stream for test inputs.
    pub struct SplitMix64(pub u64);

    impl SplitMix64 {
        /// The next 64 random bits.
        pub fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// Uniform in [lo, hi).
        pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
        }
    }

    /// `len` f32 values: mostly moderate numbers, with NaNs (random payloads, both signs),
    /// ±∞, ±0, subnormals, huge values and arbitrary bit patterns mixed in.
    pub fn f32s(len: usize, seed: u64) -> Vec<f32> {
        let mut r = SplitMix64(seed);
        (0..len)
            .map(|_| {
                let bits = r.next_u64();
                match bits % 16 {
                    0 => f32::from_bits(
                        0x7fc0_0000 | (bits >> 40) as u32 & 0x003f_ffff | ((bits >> 8) as u32 & 0x8000_0000),
                    ),
                    1 => [f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0][(bits >> 8) as usize % 4],
                    2 => f32::from_bits((bits >> 12) as u32 & 0x807f_ffff), // subnormal (or ±0)
                    3 => f32::from_bits((bits >> 20) as u32),               // any bit pattern
                    4 => r.uniform(-3.0e38, 3.0e38) as f32,
                    _ => r.uniform(-100.0, 100.0) as f32,
                }
            })
            .collect()
    }

    /// `len` f64 values with the same mix as [`f32s`].
    pub fn f64s(len: usize, seed: u64) -> Vec<f64> {
        let mut r = SplitMix64(seed);
        (0..len)
            .map(|_| {
                let bits = r.next_u64();
                match bits % 16 {
                    0 => f64::from_bits(0x7ff8_0000_0000_0000 | (bits >> 13) | (bits & 0x8000_0000_0000_0000)),
                    1 => [f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0][(bits >> 8) as usize % 4],
                    2 => f64::from_bits(bits & 0x800f_ffff_ffff_ffff), // subnormal (or ±0)
                    3 => f64::from_bits(r.next_u64()),                 // any bit pattern
                    4 => r.uniform(-1.0e300, 1.0e300),
                    _ => r.uniform(-100.0, 100.0),
                }
            })
            .collect()
    }

    /// `len` finite f32 values uniform in [lo, hi).
    pub fn f32_range(len: usize, seed: u64, lo: f64, hi: f64) -> Vec<f32> {
        let mut r = SplitMix64(seed);
        (0..len).map(|_| r.uniform(lo, hi) as f32).collect()
    }

    /// `len` finite f64 values uniform in [lo, hi).
    pub fn f64_range(len: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
        let mut r = SplitMix64(seed);
        (0..len).map(|_| r.uniform(lo, hi)).collect()
    }
}

/// The law of a stream of standard normals (tests/boxmuller_reference.rs, bridge_parity.rs): the first four moments as z-scores (each within
/// 5 standard errors) and a χ² over 100 equiprobable bins (Φ⁻¹ of the bin edges) below χ²(99)'s
/// 1 − 10⁻⁶ quantile, 181 (Wilson–Hilferty). The draws are fixed by the seed, so the check is
/// deterministic; a generator that is off (a wrong angle, a biased radius) fails it.
pub fn normal_law(z: &[f64]) -> Result<(), String> {
    let n = z.len() as f64;
    let mean = z.iter().sum::<f64>() / n;
    let (mut m2, mut m3, mut m4) = (0.0, 0.0, 0.0);
    for &v in z {
        let d = v - mean;
        m2 += d * d;
        m3 += d * d * d;
        m4 += d * d * d * d;
    }
    let (m2, m3, m4) = (m2 / n, m3 / n, m4 / n);
    let zs = [
        ("mean", mean * n.sqrt()),
        ("variance", (m2 - 1.0) / (2.0 / n).sqrt()),
        ("skewness", m3 / m2.powf(1.5) / (6.0 / n).sqrt()),
        ("excess kurtosis", (m4 / (m2 * m2) - 3.0) / (24.0 / n).sqrt()),
    ];
    let edges: Vec<f64> =
        (1..100).map(|i| lockstep_shared::bridge::normal::inverse_normal_cdf(i as f64 / 100.0)).collect();
    let mut counts = [0u64; 100];
    for &v in z {
        counts[edges.partition_point(|&e| e <= v)] += 1;
    }
    let expect = n / 100.0;
    let chi2: f64 = counts.iter().map(|&c| (c as f64 - expect).powi(2) / expect).sum();
    let report = format!("{} draws: {zs:.2?}, chi2(99) = {chi2:.1}", z.len());
    // NaN fails too (a comparison that skips NaN would pass it)
    let bad = |v: f64| v.is_nan() || v.abs() >= 5.0;
    if zs.iter().any(|&(_, s)| bad(s)) || chi2.is_nan() || chi2 >= 181.0 {
        return Err(report);
    }
    eprintln!("{report}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_policy_and_signed_zero() {
        assert_eq!(first_mismatch(&[f32::NAN], &[-f32::NAN]), None);
        assert_eq!(first_mismatch(&[0.0f32], &[-0.0f32]), Some(0));
        assert_eq!(first_mismatch(&[1.0f64, 2.0], &[1.0]), Some(1));
    }

    #[test]
    fn mismatch_report_names_index_and_bits() {
        let e = assert_bits_eq("t", &[1.0f32, 2.0], &[1.0, 3.0], |i| format!("x[{i}]")).unwrap_err().to_string();
        assert!(
            e.contains("index 1") && e.contains("0x40000000") && e.contains("0x40400000") && e.contains("x[1]"),
            "{e}"
        );
    }

    #[test]
    fn a_nan_never_passes_a_tolerance() {
        // `fold(0.0, f64::max)` drops NaN: the bug this helper replaces.
        assert_eq!([0.5, f64::NAN].into_iter().fold(0.0, f64::max), 0.5);
        assert_eq!(max_abs_error(&[1.0f64, f64::NAN], &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(max_abs_error(&[1.0f32, 2.0], &[1.0, f32::NAN]), f64::INFINITY);
        assert_eq!(max_abs_error(&[f64::NAN], &[f64::NAN]), f64::INFINITY);
        assert_eq!(max_abs_error(&[f64::INFINITY], &[f64::INFINITY]), f64::INFINITY);
        assert_eq!(max_abs_error(&[1.0f64], &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(max_abs_error(&[1.0f64, 2.5], &[1.25, 2.0]), 0.5);
        assert_eq!(max_abs_error::<f64>(&[], &[]), 0.0);
        assert_eq!(max_abs(&[1.0f64, -3.0]), 3.0);
        assert_eq!(max_abs(&[1.0f64, f64::NAN]), f64::INFINITY);
        let e = assert_within("t", &[1.0f64, f64::NAN, 3.0], &[1.0, 2.0, 3.0], 1e300, |i| format!("x[{i}]"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("index 1") && e.contains("NaN") && e.contains("x[1]"), "{e}");
        assert!(assert_within("t", &[1.0f64, 2.0], &[1.0, 2.0 + 1e-12], 1e-9, |_| String::new()).is_ok());
        assert!(assert_within("t", &[1.0f64, 2.0], &[1.0, 2.1], 1e-9, |_| String::new()).is_err());
    }

    #[test]
    fn gpu_or_skip_returns_early_only_without_a_gpu() {
        fn probe(reached: &mut bool) -> Result<(), TestCaseError> {
            let _gpu: &Gpu = gpu_or_skip!();
            *reached = true;
            Ok(())
        }
        let mut reached = false;
        match gpu() {
            Ok(Some(_)) => {
                probe(&mut reached).unwrap();
                assert!(reached);
            }
            Ok(None) => {
                probe(&mut reached).unwrap();
                assert!(!reached, "the body ran without a GPU");
            }
            Err(_) => assert!(probe(&mut reached).is_err() && !reached),
        }
    }

    #[test]
    fn data_has_the_special_values() {
        let v = data::f32s(10_000, 7);
        assert!(v.iter().any(|x| x.is_nan()));
        assert!(v.iter().any(|x| x.is_infinite()));
        assert!(v.iter().any(|x| x.is_subnormal()));
        assert!(v.iter().any(|x| *x == 0.0 && x.is_sign_negative()));
        let d = data::f64s(10_000, 7);
        assert!(d.iter().any(|x| x.is_nan()) && d.iter().any(|x| x.is_subnormal()));
    }
}
