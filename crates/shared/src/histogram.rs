//! Histogram binning and the fixed-point weights of the deterministic weighted mode.
//!
//! **Binning.** `k` equal bins over `[lo, hi)`: a value `x` goes to bin
//! `min(⌊(x − lo) · scale⌋, k − 1)` with `scale = k / (hi − lo)` computed once (f64, by
//! [`Bins::new`]). Both sides evaluate exactly this expression, so every value lands in the same
//! bin on the GPU and the CPU.
//!
//! **Dropped values (policy).** NaN is counted in no bin; values below `lo` or at/above `hi` are
//! **dropped** (not clamped). All three are counted separately and reported: [`classify`]
//! returns `k + DROP_NAN`, `k + DROP_BELOW` or `k + DROP_ABOVE` for them.
//!
//! **Fixed point.** The deterministic f64 weighted mode adds `round(w · 2^f)` as `i64` (two's
//! complement, wrapping like `atom.add.u64`), `f` = [`Bins`]`::frac_bits` (default
//! [`DEFAULT_FRAC_BITS`] = 32: a resolution of 2^-32 ≈ 2.3e-10). Integer addition is associative,
//! so the sum is the same in every order; the bin value is `acc as f64 · 2^-f` (one rounding,
//! the same on both sides). Exact (no wrap) when `n · max|w| · 2^f ≤ 2^62`, which the host
//! launcher checks.

/// Offset (past `k`) of the NaN counter in [`classify`]'s result and the dropped counters.
pub const DROP_NAN: u32 = 0;
/// Offset of the "below `lo`" counter.
pub const DROP_BELOW: u32 = 1;
/// Offset of the "at or above `hi`" counter.
pub const DROP_ABOVE: u32 = 2;
/// Number of dropped-value counters.
pub const DROP_SLOTS: usize = 3;
/// Largest number of bins (leaves room for the drop codes in a `u32`).
pub const MAX_BINS: u32 = 1 << 31;
/// Default fractional bits of the fixed-point weights.
pub const DEFAULT_FRAC_BITS: u32 = 32;
/// Largest fractional bits accepted.
pub const MAX_FRAC_BITS: u32 = 52;

/// How a histogram kernel adds into its counters (the codes the kernels switch on).
pub mod via {
    /// One native `atom.add` per value.
    pub const PLAIN: u32 = 0;
    /// Warp aggregation through shared memory (variant a).
    pub const SHARED: u32 = 1;
    /// Warp aggregation through shuffles (variant b).
    pub const SHFL: u32 = 2;
    /// Warp aggregation through `match.any.sync` (variant c).
    pub const MATCH: u32 = 3;
    /// Block aggregation with barriers (variant d).
    pub const BLOCK: u32 = 4;
    /// Match aggregation of unit increments (a popcount, no value exchange).
    pub const COUNT: u32 = 5;
    /// f64 only: a 64-bit CAS loop per value.
    pub const CAS: u32 = 6;
    /// f64 only: the CAS loop behind match aggregation.
    pub const CAS_AGGREGATED: u32 = 7;
}

/// Threads per block of every histogram kernel (their shared scratch is sized for it).
pub const HIST_BLOCK: u32 = 256;
/// Bytes of the per-block shared counters of the privatised kernels (48 KiB, the static
/// limit): 12 288 `u32` or 6 144 8-byte counters.
pub const PRIVATE_BYTES: usize = 48 * 1024;
/// Threads per block of the privatised count kernels (`histogram_private_u32`/`_u64`): 16
/// warps, one shared-counter copy per warp while `copies · k` fits [`PRIVATE_BYTES`].
pub const PRIVATE_BLOCK: u32 = 512;
/// Privatised count kernels: at most this many bins use warp-aggregated shared increments
/// (`match.any` + popcount); more bins use one plain shared increment per value.
pub const PRIVATE_AGG_MAX_BINS: u32 = 4;
/// Threads per block of the wide count kernels (`histogram_wide_u32`/`_u64`).
pub const WIDE_BLOCK: u32 = 1024;
/// Values each thread of a wide kernel takes per segment (four 16-byte loads of two f64).
pub const WIDE_VALUES_PER_THREAD: u32 = 8;
/// Largest count a wide kernel's 16-bit shared counter holds: a block adds its counters to the
/// global ones (and zeroes them) before it has taken more values than this since the last time.
pub const WIDE_COUNTER_MAX: u32 = u16::MAX as u32;

/// Shared 32-bit words of the wide kernels' counters for `k` bins: word `w` holds bin `w` in its
/// low half and bin `w + wide_words(k)` in its high half, so a warp flushing consecutive words
/// adds to two runs of consecutive bins.
pub const fn wide_words(k: u32) -> u32 {
    k.div_ceil(2)
}

/// Segments of `values_per_segment` values a wide block takes between two flushes: as many as
/// keep every 16-bit counter at most [`WIDE_COUNTER_MAX`] (at least one: a segment holds at
/// most `WIDE_COUNTER_MAX` values, which the launcher's block size guarantees).
pub const fn wide_segments_per_flush(values_per_segment: u32) -> u32 {
    let s = WIDE_COUNTER_MAX / values_per_segment;
    if s == 0 { 1 } else { s }
}

/// Threads per block of both passes of the partition count kernels
/// (`histogram_partition_split`, `histogram_partition_count_u32`/`_u64`).
pub const PARTITION_BLOCK: u32 = 512;
/// Values each thread of the partition's first pass takes (eight 16-byte loads of two f64).
pub const PARTITION_VALUES_PER_THREAD: u32 = 16;
/// Values per chunk of the partition's first pass: one block's, sorted by bucket in shared
/// memory (8 192; a chunk's offsets fit the 16-bit halves of a [`partition_entry`]).
pub const PARTITION_CHUNK: u32 = PARTITION_BLOCK * PARTITION_VALUES_PER_THREAD;
/// Dynamic shared memory of the partition's first pass: a 32-bit key per value of a chunk,
/// then the chunk's 16-bit offsets sorted by bucket (48 KiB).
pub const PARTITION_SPLIT_BYTES: u32 = 6 * PARTITION_CHUNK;
/// Most buckets of a partition (two per thread of the first pass's scan).
pub const PARTITION_MAX_BUCKETS: u32 = 2 * PARTITION_BLOCK;
/// Buckets the partition aims at: about 32 values of a uniform chunk per bucket, one warp load.
pub const PARTITION_TARGET_BUCKETS: u32 = 256;
/// Largest bucket: `2^PARTITION_MAX_SHIFT` bins, one 32-bit shared counter each (128 KiB) in
/// the second pass.
pub const PARTITION_MAX_SHIFT: u32 = 15;
/// The widest bucket the partition prefers: `2^14` bins (64 KiB of counters, so several
/// second-pass blocks share an SM; a `2^15` bucket's 128 KiB leave room for one).
pub const PARTITION_WIDE_SHIFT: u32 = 14;
/// Most bins of the partition method (`PARTITION_MAX_BUCKETS` buckets of the largest width).
pub const PARTITION_MAX_BINS: u32 = PARTITION_MAX_BUCKETS << PARTITION_MAX_SHIFT;
/// Most values one partition piece takes (the launcher runs longer inputs piece by piece, so
/// the second pass's 32-bit shared counters cannot wrap and the scratch stays at 4 B a value).
pub const PARTITION_PIECE: u64 = 1 << 27;

/// Bucket width of the partition method for `k` bins, as a power of two `2^shift`: the
/// narrowest with at most [`PARTITION_TARGET_BUCKETS`] buckets up to
/// [`PARTITION_WIDE_SHIFT`]; past it, that width while it makes at most
/// [`PARTITION_MAX_BUCKETS`] buckets, else [`PARTITION_MAX_SHIFT`] (`k ≥ 1`). H100, 10^7 values
/// and 10^7 bins, one call: 611 buckets of 2^14 bins 0.1023 ms, 306 of 2^15 0.1033 ms (with
/// the second pass adding into zeroed counters, before it stored them: 0.154 and 0.197 ms).
pub const fn partition_shift(k: u32) -> u32 {
    let mut s = 0;
    while s < PARTITION_WIDE_SHIFT && partition_buckets(k, s) > PARTITION_TARGET_BUCKETS {
        s += 1;
    }
    if s == PARTITION_WIDE_SHIFT && partition_buckets(k, s) > PARTITION_MAX_BUCKETS { PARTITION_MAX_SHIFT } else { s }
}

/// Buckets of `2^shift` bins that cover `k ≥ 1` bins: bin `c` is in bucket `c >> shift`.
pub const fn partition_buckets(k: u32, shift: u32) -> u32 {
    ((k - 1) >> shift) + 1
}

/// One entry of the partition table: bucket `b`'s values of chunk `c` are the `len` bins at
/// `start..start + len` of the chunk's sorted copy (`start`, `len` ≤ [`PARTITION_CHUNK`]).
pub const fn partition_entry(start: u32, len: u32) -> u32 {
    start | len << 16
}

/// `(start, len)` of a [`partition_entry`].
pub const fn partition_segment(entry: u32) -> (u32, u32) {
    (entry & 0xffff, entry >> 16)
}

/// Values each thread loads per trip of the streaming loops, as pairs of f64 in 16-byte loads
/// (`ld.global.v2.f64`): `2 · HIST_PAIRS` values in flight per thread (the kernels' loop
/// issues exactly four loads: keep this 4).
pub const HIST_PAIRS: usize = 4;

/// Validated bin parameters, passed to the kernels by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bins {
    /// Lower bound (inclusive).
    pub lo: f64,
    /// Upper bound (exclusive).
    pub hi: f64,
    /// `k / (hi − lo)`.
    pub scale: f64,
    /// Number of bins.
    pub k: u32,
    /// Fractional bits of the fixed-point weights (deterministic weighted mode).
    pub frac_bits: u32,
}

/// Why [`Bins::new`] refused its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinsError {
    /// `k == 0`.
    NoBins,
    /// `k` > [`MAX_BINS`].
    TooManyBins,
    /// `lo` or `hi` is NaN or infinite.
    NonFiniteBound,
    /// `lo ≥ hi`.
    EmptyRange,
    /// `hi − lo` overflows, or the bins are narrower than `f64` can resolve.
    UnrepresentableRange,
    /// `frac_bits` > [`MAX_FRAC_BITS`].
    TooManyFracBits,
}

impl BinsError {
    /// A sentence for the user.
    pub const fn reason(self) -> &'static str {
        match self {
            BinsError::NoBins => "k = 0: a histogram needs at least one bin",
            BinsError::TooManyBins => "k is larger than 2^31",
            BinsError::NonFiniteBound => "lo and hi must be finite numbers",
            BinsError::EmptyRange => "lo must be smaller than hi",
            BinsError::UnrepresentableRange => "hi - lo overflows f64 or the bins are too narrow for f64",
            BinsError::TooManyFracBits => "frac_bits must be at most 52",
        }
    }
}

impl Bins {
    /// `k` equal bins over `[lo, hi)` with [`DEFAULT_FRAC_BITS`].
    pub fn new(lo: f64, hi: f64, k: u32) -> Result<Bins, BinsError> {
        Bins::with_frac_bits(lo, hi, k, DEFAULT_FRAC_BITS)
    }

    /// As [`Bins::new`] with `frac_bits` fractional bits for fixed-point weights.
    pub fn with_frac_bits(lo: f64, hi: f64, k: u32, frac_bits: u32) -> Result<Bins, BinsError> {
        if k == 0 {
            return Err(BinsError::NoBins);
        }
        if k > MAX_BINS {
            return Err(BinsError::TooManyBins);
        }
        if !lo.is_finite() || !hi.is_finite() {
            return Err(BinsError::NonFiniteBound);
        }
        if lo >= hi {
            return Err(BinsError::EmptyRange);
        }
        if frac_bits > MAX_FRAC_BITS {
            return Err(BinsError::TooManyFracBits);
        }
        let width = hi - lo;
        let scale = k as f64 / width;
        if !width.is_finite() || !scale.is_finite() || scale <= 0.0 {
            return Err(BinsError::UnrepresentableRange);
        }
        Ok(Bins { lo, hi, scale, k, frac_bits })
    }
}

/// The bin of `x` (`0..k`), or `k + DROP_*` for NaN / below / above (see the module policy).
#[inline(always)]
pub fn classify(x: f64, b: &Bins) -> u32 {
    if x.is_nan() {
        b.k + DROP_NAN
    } else if x < b.lo {
        b.k + DROP_BELOW
    } else if x >= b.hi {
        b.k + DROP_ABOVE
    } else {
        let f = (x - b.lo) * b.scale;
        if f >= 0.0 && f < b.k as f64 {
            // SAFETY: 0 ≤ f < k ≤ 2^31: its integer part is a u32 (no saturation to ask for).
            unsafe { f.to_int_unchecked::<u32>() }
        } else {
            // f ≥ k: x just below hi, rounded up to the edge. (Bins from `Bins::new` give
            // 0 ≤ f, never NaN: lo ≤ x and 0 < scale.)
            b.k - 1
        }
    }
}

/// `2^e` for `-1022 ≤ e ≤ 1023`, exactly.
#[inline(always)]
pub const fn pow2(e: i32) -> f64 {
    f64::from_bits(((1023 + e) as u64) << 52)
}

/// A weight in fixed point: `round(w · 2^frac_bits)` (ties away from zero) as `i64`.
#[inline(always)]
pub fn to_fixed(w: f64, frac_bits: u32) -> i64 {
    libm::round(w * pow2(frac_bits as i32)) as i64
}

/// A fixed-point accumulator as f64: `acc · 2^-frac_bits` (one rounding of `acc`).
#[inline(always)]
pub fn from_fixed(acc: i64, frac_bits: u32) -> f64 {
    acc as f64 * pow2(-(frac_bits as i32))
}

/// Whether `n` weights of magnitude at most `max_abs` sum without wrapping in fixed point.
pub fn fixed_fits(n: u64, max_abs: f64, frac_bits: u32) -> bool {
    max_abs.is_finite() && (max_abs * pow2(frac_bits as i32) + 1.0) * n as f64 <= pow2(62)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_refuse_bad_parameters() {
        assert_eq!(Bins::new(0.0, 1.0, 0), Err(BinsError::NoBins));
        assert_eq!(Bins::new(1.0, 1.0, 3), Err(BinsError::EmptyRange));
        assert_eq!(Bins::new(2.0, 1.0, 3), Err(BinsError::EmptyRange));
        assert_eq!(Bins::new(f64::NAN, 1.0, 3), Err(BinsError::NonFiniteBound));
        assert_eq!(Bins::new(0.0, f64::INFINITY, 3), Err(BinsError::NonFiniteBound));
        assert_eq!(Bins::new(-f64::MAX, f64::MAX, 3), Err(BinsError::UnrepresentableRange));
        assert_eq!(Bins::new(0.0, 1.0, MAX_BINS + 1), Err(BinsError::TooManyBins));
        assert_eq!(Bins::with_frac_bits(0.0, 1.0, 2, 53), Err(BinsError::TooManyFracBits));
    }

    #[test]
    fn classify_edges() {
        let b = Bins::new(0.0, 1.0, 10).unwrap();
        assert_eq!(classify(0.0, &b), 0);
        assert_eq!(classify(-0.0, &b), 0);
        assert_eq!(classify(0.1, &b), 1);
        assert_eq!(classify(0.999_999_999_999, &b), 9);
        assert_eq!(classify(1.0_f64.next_down(), &b), 9);
        assert_eq!(classify(1.0, &b), 10 + DROP_ABOVE);
        assert_eq!(classify(-1e-300, &b), 10 + DROP_BELOW);
        assert_eq!(classify(f64::NAN, &b), 10 + DROP_NAN);
        assert_eq!(classify(f64::INFINITY, &b), 10 + DROP_ABOVE);
        assert_eq!(classify(f64::NEG_INFINITY, &b), 10 + DROP_BELOW);
    }

    #[test]
    fn partition_buckets_cover_every_bin() {
        assert_eq!(PARTITION_CHUNK, 8192);
        for k in [1u32, 2, 255, 256, 257, 1000, 100_000, 1_000_000, 10_000_000, PARTITION_MAX_BINS] {
            let s = partition_shift(k);
            let nb = partition_buckets(k, s);
            assert!(nb <= PARTITION_MAX_BUCKETS && s <= PARTITION_MAX_SHIFT, "k={k}");
            assert!(nb <= PARTITION_TARGET_BUCKETS || s >= PARTITION_WIDE_SHIFT, "k={k}");
            assert!(s == 0 || partition_buckets(k, s - 1) > PARTITION_TARGET_BUCKETS, "k={k}: not the narrowest");
            assert_eq!((k - 1) >> s, nb - 1, "k={k}: the last bin is in the last bucket");
        }
        assert_eq!((partition_shift(1_000_000), partition_buckets(1_000_000, 12)), (12, 245));
        assert_eq!((partition_shift(3_000_000), partition_buckets(3_000_000, 14)), (14, 184));
        assert_eq!((partition_shift(10_000_000), partition_buckets(10_000_000, 14)), (14, 611));
        assert_eq!(partition_shift(PARTITION_MAX_BINS), PARTITION_MAX_SHIFT);
        assert_eq!(partition_shift(1024 << 14), 14);
        assert_eq!(partition_shift((1024 << 14) + 1), PARTITION_MAX_SHIFT);
        for (start, len) in [(0, 0), (0, PARTITION_CHUNK), (PARTITION_CHUNK - 1, 1), (17, 33)] {
            assert_eq!(partition_segment(partition_entry(start, len)), (start, len));
        }
    }

    /// The partition method's layout, emulated as the two kernels do it (slots handed out in
    /// value order here, in any order there): every in-range value is counted once, in its
    /// own bucket's row, and the counts equal a direct count.
    #[test]
    fn partition_emulation_counts_every_value_once() {
        use std::vec;
        use std::vec::Vec;
        let mut r = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r
        };
        for (k, n) in [(1u32, 20_000usize), (7, 9000), (1000, 30_000), (1_000_000, 50_000), (PARTITION_MAX_BINS, 8192)]
        {
            let b = Bins::new(0.0, 1.0, k).unwrap();
            let x: Vec<f64> = (0..n)
                .map(|i| match i % 97 {
                    0 => f64::NAN,
                    1 => -0.5,
                    2 => 1.0,
                    3 => 0.25, // one bin, many times: long segments
                    _ => (next() >> 11) as f64 / (1u64 << 53) as f64,
                })
                .collect();
            let shift = partition_shift(k);
            let buckets = partition_buckets(k, shift) as usize;
            let chunk = PARTITION_CHUNK as usize;
            let chunks = n.div_ceil(chunk);
            let mut binned = vec![u32::MAX; chunks * chunk];
            let mut table = vec![u32::MAX; buckets * chunks];
            let mut dropped = [0u64; 3];
            // Pass 1: per chunk, bucket counts, their exclusive scan, the sorted chunk.
            for c in 0..chunks {
                let vals = &x[c * chunk..n.min((c + 1) * chunk)];
                let mut count = vec![0u32; buckets];
                let mut slots = Vec::new();
                for &v in vals {
                    let cl = classify(v, &b);
                    if cl < k {
                        let bk = (cl >> shift) as usize;
                        slots.push((cl, count[bk]));
                        count[bk] += 1;
                    } else {
                        dropped[(cl - k) as usize] += 1;
                    }
                }
                let mut start = vec![0u32; buckets];
                let mut sum = 0;
                for bk in 0..buckets {
                    start[bk] = sum;
                    table[bk * chunks + c] = partition_entry(sum, count[bk]);
                    sum += count[bk];
                }
                for (cl, slot) in slots {
                    let at = c * chunk + (start[(cl >> shift) as usize] + slot) as usize;
                    assert_eq!(binned[at], u32::MAX, "k={k}: two values in one place");
                    binned[at] = cl & ((1 << shift) - 1);
                }
            }
            // Pass 2: bucket bk's row, each chunk's segment of offsets in the bucket.
            let mut counts = vec![0u64; k as usize];
            for bk in 0..buckets {
                for c in 0..chunks {
                    let (start, len) = partition_segment(table[bk * chunks + c]);
                    for e in start..start + len {
                        let cl = ((bk as u32) << shift) + binned[c * chunk + e as usize];
                        assert!(cl < k, "k={k}: an offset past the bins");
                        counts[cl as usize] += 1;
                    }
                }
            }
            let mut want = vec![0u64; k as usize];
            let mut want_dropped = [0u64; 3];
            for &v in &x {
                let cl = classify(v, &b);
                if cl < k { want[cl as usize] += 1 } else { want_dropped[(cl - k) as usize] += 1 }
            }
            assert!(counts == want, "k={k} n={n}");
            assert_eq!(dropped, want_dropped);
        }
    }

    #[test]
    fn fixed_point_round_trip() {
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(32), 4294967296.0);
        assert_eq!(pow2(-1), 0.5);
        assert_eq!(to_fixed(1.5, 32), 3 << 31);
        assert_eq!(to_fixed(-1.5, 32), -(3 << 31));
        assert_eq!(from_fixed(to_fixed(0.25, 32), 32), 0.25);
        assert_eq!(from_fixed(to_fixed(-7.0, 10), 10), -7.0);
        assert!(fixed_fits(10_000_000, 1.0, 32));
        assert!(!fixed_fits(10_000_000, 1e9, 32));
        assert!(!fixed_fits(1, f64::INFINITY, 32));
    }
}
