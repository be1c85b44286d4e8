//! XSadd (xorshift-add; Saito & Matsumoto, 2013): a 128-bit-state generator of period
//! 2^128 − 1 that passes BigCrush, with jump-ahead over GF(2).
//!
//! The generator, its seeding (`init`, `init_by_array`) and its output conversions (`u32`,
//! `f32` in [0, 1], `f32` in (0, 1] (two steps per call), `f64` from 59 bits rounded to 53) follow the reference
//! implementation and reproduce its published known-answer vectors
//! (`tests/mg_reference.rs` holds them). The state is kept in the reference's *shifting* form
//! `[s0, s1, s2, s3]`: a step computes `t` from `s0` and `s3`, shifts the words down and appends
//! `t`, and returns `s3 + s2` (wrapping).
//!
//! **Jump-ahead.** A step is linear over GF(2) on the 128-bit state `x = s0 | s1<<32 | s2<<64 |
//! s3<<96`, so `k` steps are the matrix power `M^k`. [`Gf2Matrix`] holds a 128×128 matrix as
//! 128 columns (`u128`); [`Xsadd::jump`] computes `M^k · x` by repeated squaring in O(log k)
//! matrix products for any `k < 2^128` (the host's `JumpTable` caches `M^(2^i)` so that each
//! further jump costs at most 128 matrix–vector products).

/// The generator's state: four 32-bit words in the reference's shifting order.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Xsadd {
    /// `[s0, s1, s2, s3]`; the next step reads `s0` and `s3`.
    pub s: [u32; 4],
}

const SH1: u32 = 15;
const SH2: u32 = 18;
const SH3: u32 = 11;
const PRE_LOOP: usize = 8;
const MIN_LOOP: usize = 8;

impl Xsadd {
    /// `xsadd_init(seed)`: the reference's seeding from one 32-bit number.
    pub fn new(seed: u32) -> Xsadd {
        let mut s = [seed, 0, 0, 0];
        for i in 1..8u32 {
            let prev = s[((i - 1) & 3) as usize];
            s[(i & 3) as usize] ^= i.wrapping_add(1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)));
        }
        let mut x = Xsadd { s };
        x.certify_period();
        for _ in 0..PRE_LOOP {
            x.next_state();
        }
        x
    }

    /// `xsadd_init_by_array(key)`: the reference's seeding from an array of 32-bit numbers
    /// (TinyMT's scheme with size 4, lag 1, mid 1).
    pub fn from_array(key: &[u32]) -> Xsadd {
        fn f1(x: u32) -> u32 {
            (x ^ (x >> 27)).wrapping_mul(1_664_525)
        }
        fn f2(x: u32) -> u32 {
            (x ^ (x >> 27)).wrapping_mul(1_566_083_941)
        }
        let mut st = [0u32; 4];
        let len = key.len();
        let count = if len + 1 > MIN_LOOP { len + 1 } else { MIN_LOOP };
        let mut r = f1(st[0] ^ st[1] ^ st[3]);
        st[1] = st[1].wrapping_add(r);
        r = r.wrapping_add(len as u32);
        st[2] = st[2].wrapping_add(r);
        st[0] = r;
        let mut i = 1usize;
        for j in 0..count - 1 {
            r = f1(st[i] ^ st[(i + 1) % 4] ^ st[(i + 3) % 4]);
            st[(i + 1) % 4] = st[(i + 1) % 4].wrapping_add(r);
            let key_j = key.get(j).copied().unwrap_or(0);
            r = r.wrapping_add(key_j).wrapping_add(i as u32);
            st[(i + 2) % 4] = st[(i + 2) % 4].wrapping_add(r);
            st[i] = r;
            i = (i + 1) % 4;
        }
        for _ in 0..4 {
            r = f2(st[i].wrapping_add(st[(i + 1) % 4]).wrapping_add(st[(i + 3) % 4]));
            st[(i + 1) % 4] ^= r;
            r = r.wrapping_sub(i as u32);
            st[(i + 2) % 4] ^= r;
            st[i] = r;
            i = (i + 1) % 4;
        }
        let mut x = Xsadd { s: st };
        x.certify_period();
        for _ in 0..PRE_LOOP {
            x.next_state();
        }
        x
    }

    /// The all-zero state is the one fixed point; the reference replaces it by "XSAD".
    fn certify_period(&mut self) {
        if self.s == [0; 4] {
            self.s = [b'X' as u32, b'S' as u32, b'A' as u32, b'D' as u32];
        }
    }

    /// One step of the linear recurrence (no output).
    #[inline(always)]
    pub fn next_state(&mut self) {
        let mut t = self.s[0];
        t ^= t << SH1;
        t ^= t >> SH2;
        t ^= self.s[3] << SH3;
        self.s = [self.s[1], self.s[2], self.s[3], t];
    }

    /// `xsadd_uint32`: the next 32-bit output.
    #[inline(always)]
    pub fn next_u32(&mut self) -> u32 {
        self.next_state();
        self.s[3].wrapping_add(self.s[2])
    }

    /// `xsadd_float`: `u32 · 2^-32` rounded to `f32` (in [0, 1]; 1.0 when the u32 rounds up to
    /// 2^32, exactly as the reference).
    #[inline(always)]
    pub fn next_f32(&mut self) -> f32 {
        u32_to_f32(self.next_u32())
    }

    /// `xsadd_floatOC`, in (0, 1]: as the reference (and its published vectors) does, it
    /// skips one state, then returns `1 − xsadd_float` — two steps per call.
    #[inline(always)]
    pub fn next_f32_oc(&mut self) -> f32 {
        self.next_state();
        1.0 - self.next_f32()
    }

    /// `xsadd_double`, in [0, 1]: the 59-bit number `(a >> 5)·2^32 + b` of two outputs `a`, `b`,
    /// rounded to the nearest `f64` (ties to even) and scaled by 2^-59. Derived from the published
    /// vectors: all 40 match, while the truncating `((a>>5)·2^26 + (b>>6))·2^-53` misses two in
    /// the 15th decimal. `(a>>5)·2^26` and `b/64` are exact; their sum rounds once.
    #[inline(always)]
    pub fn next_f64(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = self.next_u32() as f64;
        (a * 67_108_864.0 + b * (1.0 / 64.0)) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// The state as one GF(2) vector: `s0 | s1<<32 | s2<<64 | s3<<96`.
    pub fn to_bits(&self) -> u128 {
        self.s[0] as u128 | (self.s[1] as u128) << 32 | (self.s[2] as u128) << 64 | (self.s[3] as u128) << 96
    }

    /// The state of a GF(2) vector (inverse of [`Xsadd::to_bits`]).
    pub fn from_bits(x: u128) -> Xsadd {
        Xsadd { s: [x as u32, (x >> 32) as u32, (x >> 64) as u32, (x >> 96) as u32] }
    }

    /// Advances by `k` steps (any `k < 2^128`) in O(log k) GF(2) matrix products. Equals `k`
    /// calls of [`Xsadd::next_state`].
    pub fn jump(&mut self, k: u128) {
        let mut x = self.to_bits();
        let mut power = Gf2Matrix::step();
        let mut rest = k;
        while rest != 0 {
            if rest & 1 == 1 {
                x = power.apply(x);
            }
            rest >>= 1;
            if rest != 0 {
                power = power.mul(&power);
            }
        }
        *self = Xsadd::from_bits(x);
    }
}

/// `v · 2^-32` rounded to `f32`, as the reference converts (`v` rounds to `f32` first; the
/// scaling by a power of two is exact).
#[inline(always)]
pub fn u32_to_f32(v: u32) -> f32 {
    v as f32 * (1.0 / 4_294_967_296.0)
}

/// A 128×128 matrix over GF(2), stored as its columns: `cols[j]` is the image of bit `j`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gf2Matrix {
    /// Column `j` = `M · e_j`.
    pub cols: [u128; 128],
}

impl Gf2Matrix {
    /// The identity.
    pub fn identity() -> Gf2Matrix {
        let mut cols = [0u128; 128];
        for (j, c) in cols.iter_mut().enumerate() {
            *c = 1u128 << j;
        }
        Gf2Matrix { cols }
    }

    /// The transition matrix of one XSadd step (the step is linear, so its columns are the
    /// images of the unit vectors).
    pub fn step() -> Gf2Matrix {
        let mut cols = [0u128; 128];
        for (j, c) in cols.iter_mut().enumerate() {
            let mut x = Xsadd::from_bits(1u128 << j);
            x.next_state();
            *c = x.to_bits();
        }
        Gf2Matrix { cols }
    }

    /// `M · x`.
    #[inline]
    pub fn apply(&self, x: u128) -> u128 {
        let mut acc = 0u128;
        let mut rest = x;
        while rest != 0 {
            let j = rest.trailing_zeros() as usize;
            acc ^= self.cols[j];
            rest &= rest - 1;
        }
        acc
    }

    /// `self · other`.
    pub fn mul(&self, other: &Gf2Matrix) -> Gf2Matrix {
        let mut cols = [0u128; 128];
        for (c, &o) in cols.iter_mut().zip(other.cols.iter()) {
            *c = self.apply(o);
        }
        Gf2Matrix { cols }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_outputs_match_the_reference() {
        let mut x = Xsadd::new(1234);
        assert_eq!([x.next_u32(), x.next_u32(), x.next_u32()], [1_823_491_521, 1_658_333_335, 1_467_485_721]);
        let mut y = Xsadd::from_array(&[0x0a, 0x0b, 0x0c, 0x0d]);
        assert_eq!(y.next_u32(), 0x138a_38f9);
    }

    #[test]
    fn jump_equals_stepping_for_small_k() {
        for k in [0u128, 1, 2, 3, 31, 128, 1000] {
            let mut a = Xsadd::new(7);
            let mut b = a;
            a.jump(k);
            for _ in 0..k {
                b.next_state();
            }
            assert_eq!(a, b, "k={k}");
        }
    }

    #[test]
    fn zero_state_is_certified() {
        let x = Xsadd::from_bits(0);
        assert_eq!(x.to_bits(), 0);
        let mut z = Xsadd { s: [0; 4] };
        z.certify_period();
        assert_ne!(z.s, [0; 4]);
    }
}
