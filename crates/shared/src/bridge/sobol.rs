//! Sobol points from direction numbers, in Gray-code order (as Joe and Kuo's reference program
//! and Bratley–Fox generate them), evaluated directly so any point is independent of the others.
//!
//! Point `q` in dimension `j` is the XOR of `v[j][b]` over the set bits `b` of `q ^ (q >> 1)`,
//! with 32 direction numbers `v[j][0..32]` per dimension (Joe–Kuo `new-joe-kuo-6.21201`,
//! computed on the host from the `sobol` crate). The bridge gives path `p` the point
//! `q = offset + p` (offset 1 skips the all-zero origin) and row `j` the dimension `j`.

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
}
