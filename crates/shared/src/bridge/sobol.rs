//! Sobol points from direction numbers, in Gray-code order (as Joe and Kuo's reference program
//! and Bratley–Fox generate them), evaluated directly so any point is independent of the others.
//!
//! Point `q` in dimension `j` is the XOR of `v[j][b]` over the set bits `b` of `q ^ (q >> 1)`,
//! with 32 direction numbers `v[j][0..32]` per dimension (Joe–Kuo `new-joe-kuo-6.21201`,
//! computed on the host from the `sobol` crate). The bridge gives path `p` the point
//! `q = offset + p` (offset 1 skips the all-zero origin) and row `j` the dimension `j`.
//!
//! The GPU kernels evaluate the same integers by the **warp method**: with `h = q >> 5`, the bits
//! ≥ 5 of `gray(q)` are `gray(h) << 5`, so `x = high(h) ^ low[gray(q) & 31]`, where
//! [`sobol_high`] is the Gray-code walk over `gray(h)` (shared by a warp's 32 consecutive points,
//! up to one step to `h + 1`, [`sobol_high_next`]) and [`low_table`] the 32 XORs of the low
//! direction numbers. XOR is exact, so both evaluations give the same bits (tested below and by
//! the GPU parity suite against [`sobol_u32`]).

/// Direction numbers per dimension.
pub const BITS: usize = 32;

/// The 32-bit Sobol integer of point `q` in the dimension whose direction numbers are `v`.
#[inline(always)]
pub fn sobol_u32(v: &[u32], q: u32) -> u32 {
    let mut g = q ^ (q >> 1);
    let mut x = 0u32;
    let mut b = 0;
    while g != 0 {
        if g & 1 != 0 {
            x ^= v[b];
        }
        g >>= 1;
        b += 1;
    }
    x
}

/// Lanes of a warp: the GPU kernels split a point index `q` into its high part `q >> LANE_BITS`
/// (shared by a warp, up to one step) and its low `LANE_BITS` bits (one per lane).
pub const LANE_BITS: u32 = 5;

/// The low table of one dimension: entry `g < 32` is the XOR of `v[b]` over the set bits `b` of
/// `g` (the direction numbers of the low `LANE_BITS` Gray-code bits).
#[inline(always)]
pub fn low_table(v: &[u32]) -> [u32; 32] {
    let mut t = [0u32; 32];
    let mut g = 1;
    while g < 32 {
        // Entry g = entry g without its lowest set bit, XOR the direction number of that bit.
        t[g] = t[g & (g - 1)] ^ v[(g as u32).trailing_zeros() as usize];
        g += 1;
    }
    t
}

/// The high part of point `q = h·32 + l` in the dimension `v`: the XOR of `v[5 + b]` over the
/// set bits `b` of `gray(h)` (bits ≥ 5 of `gray(q)` are `gray(q >> 5) << 5`). `h < 2^27`.
#[inline(always)]
pub fn sobol_high(v: &[u32], h: u32) -> u32 {
    sobol_u32(&v[LANE_BITS as usize..], h)
}

/// The high part of `h + 1` from that of `h` (`h + 1 < 2^27`): `gray(h) ^ gray(h + 1)` is the
/// single bit `ctz(h + 1)`. For `h + 1 = 2^27` (no valid point uses it) the index is clamped.
#[inline(always)]
pub fn sobol_high_next(v: &[u32], h: u32, high: u32) -> u32 {
    let b = (LANE_BITS + h.wrapping_add(1).trailing_zeros()).min(BITS as u32 - 1);
    high ^ v[b as usize]
}

/// The low index of point `q`: `gray(q) & 31`, which selects the [`low_table`] entry.
#[inline(always)]
pub fn low_index(q: u32) -> u32 {
    (q ^ (q >> 1)) & ((1 << LANE_BITS) - 1)
}

/// Which of a warp's two high parts point `q` uses: 0 for `q >> 5 = base >> 5`, 1 for the next
/// (`base ≤ q < base + 32`, `base` the point of the warp's lane 0, no wrap past 2^32).
#[inline(always)]
pub fn high_select(base: u32, q: u32) -> u32 {
    (q >> LANE_BITS).wrapping_sub(base >> LANE_BITS)
}

/// Bytes of shared memory of the warp method for `rows` dimensions at `block` threads: the low
/// tables (`rows·32` words), then each warp's pair of high parts per row (`rows·2` words).
#[inline(always)]
pub fn warp_shared_bytes(rows: usize, block: usize) -> usize {
    rows.saturating_mul(4 * 32 + (block / 32) * 8)
}

/// Bytes of shared memory of the warp method's high parts alone (each warp's pair per row,
/// `rows·2` words per warp), when the low tables are read from global memory.
#[inline(always)]
pub fn pairs_shared_bytes(rows: usize, block: usize) -> usize {
    rows.saturating_mul((block / 32) * 8)
}

/// Rows the normals-alone Sobol kernels stage at once.
pub const NORMALS_ROWS: u32 = 64;

/// Bytes of dynamic shared memory of the normals-alone Sobol kernels: the warp method's tables
/// for `min(rows, NORMALS_ROWS)` rows (at most 24 KiB, at 1024 threads).
#[inline(always)]
pub fn normals_shared_bytes(rows: usize, block: usize) -> usize {
    warp_shared_bytes(rows.min(NORMALS_ROWS as usize), block)
}

/// Normals of one path from Sobol point `q`: row `j` uses dimension `j` (`dirs[j·32 ..]`).
pub struct SobolNormals<'a> {
    /// Direction numbers, `BITS` per dimension.
    pub dirs: &'a [u32],
    /// The point index.
    pub point: u32,
}

impl<T: super::Real> super::Normals<T> for SobolNormals<'_> {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        let v = &self.dirs[row as usize * BITS..row as usize * BITS + BITS];
        T::normal_from_bits(sobol_u32(v, self.point))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_dimension_is_van_der_corput_in_gray_order() {
        let v: [u32; 32] = core::array::from_fn(|b| 1u32 << (31 - b));
        let got: [u32; 4] = core::array::from_fn(|q| sobol_u32(&v, q as u32));
        assert_eq!(got, [0, 0x8000_0000, 0xc000_0000, 0x4000_0000]);
    }

    /// The warp method's split, as the GPU kernels evaluate it, equals the direct evaluation.
    #[test]
    fn warp_split_equals_direct() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..64 {
            let v: [u32; 32] = core::array::from_fn(|_| next() as u32);
            let low = low_table(&v);
            for (g, &entry) in low.iter().enumerate() {
                let direct = (0..5).filter(|b| g >> b & 1 != 0).fold(0, |x, b| x ^ v[b]);
                assert_eq!(entry, direct, "g = {g}");
            }
            // Warps starting anywhere, including the last points below 2^32.
            let offsets = [0u32, 1, 31, 32, 33, 1000, next() as u32 >> 1, u32::MAX - 63, u32::MAX - 31];
            for &offset in &offsets {
                for warp in 0..3u32 {
                    let base = offset.wrapping_add(warp * 32);
                    let h = base >> LANE_BITS;
                    let hi = [sobol_high(&v, h), sobol_high_next(&v, h, sobol_high(&v, h))];
                    for l in 0..32u32 {
                        let Some(q) = base.checked_add(l) else { continue };
                        let sel = high_select(base, q);
                        assert!(sel < 2);
                        let got = hi[sel as usize] ^ low[low_index(q) as usize];
                        assert_eq!(got, sobol_u32(&v, q), "q = {q}, base = {base}");
                    }
                }
            }
        }
    }

    #[test]
    fn warp_shared_bytes_counts_tables_and_pairs() {
        assert_eq!(warp_shared_bytes(64, 128), 64 * 128 + 4 * 64 * 8);
        assert_eq!(warp_shared_bytes(usize::MAX, 1024), usize::MAX);
    }
}
