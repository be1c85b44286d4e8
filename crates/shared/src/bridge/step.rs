//! One step of an execution strategy ([`Step`]), its flat-table rows as the device reads them,
//! and the traits a path generator reads and writes through ([`Steps`], [`Normals`], [`Sink`],
//! [`Stack`]).

use super::{Real, reciprocal};

/// `store` of a step whose value no later step reads.
pub const NO_SLOT: u32 = u32::MAX;

/// Flag: the step also emits the increment between ℓ and θ (they are adjacent in time).
pub const EMIT_LEFT: u32 = 1;
/// Flag: the step also emits the increment between θ and r (they are adjacent in time).
pub const EMIT_RIGHT: u32 = 2;

/// Coefficients per step in the flat table: `wl, wr, sd, θ−ℓ, r−θ`, the reciprocals
/// [`reciprocal`]`(θ−ℓ)`, [`reciprocal`]`(r−θ)` (for [`increment`](super::increment)) and one
/// zero of padding (a step's row is 16-byte aligned, so the GPU reads it with vector loads).
pub const COEFS: usize = 8;
/// Indices per step in the flat table: `left, right, store, z, out, flags` and 2 zeros.
pub const INDICES: usize = 8;

/// One step of an execution strategy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step<T> {
    /// Weight of the left neighbour.
    pub wl: T,
    /// Weight of the right neighbour.
    pub wr: T,
    /// Standard deviation of the bridge at θ.
    pub sd: T,
    /// θ − ℓ (divisor of the left increment).
    pub dt_left: T,
    /// r − θ (divisor of the right increment).
    pub dt_right: T,
    /// [`reciprocal`]`(dt_left)` in this precision.
    pub recip_left: T,
    /// [`reciprocal`]`(dt_right)` in this precision.
    pub recip_right: T,
    /// Stack slot of X_ℓ.
    pub left: u32,
    /// Stack slot of X_r (the left slot again for X_T, whose right weight is 0).
    pub right: u32,
    /// Stack slot that receives X_θ, or [`NO_SLOT`].
    pub store: u32,
    /// Construction index `i` of the normal Z_i that builds this point.
    pub z: u32,
    /// Time index `g` of θ in the output (0..N−1 = t1..tN, N = T).
    pub out: u32,
    /// [`EMIT_LEFT`] | [`EMIT_RIGHT`].
    pub flags: u32,
}

impl<T: Real> Step<T> {
    /// A step of zeros (a placeholder before a prefetch fills it).
    #[inline(always)]
    pub fn zero() -> Step<T> {
        Step {
            wl: T::ZERO,
            wr: T::ZERO,
            sd: T::ZERO,
            dt_left: T::ZERO,
            dt_right: T::ZERO,
            recip_left: T::ZERO,
            recip_right: T::ZERO,
            left: 0,
            right: 0,
            store: 0,
            z: 0,
            out: 0,
            flags: 0,
        }
    }

    /// Step `s` of the flat tables (`COEFS` coefficients and `INDICES` indices per step).
    #[inline(always)]
    pub fn load(coef: &[T], idx: &[u32], s: usize) -> Step<T> {
        let c = CoefRow(core::array::from_fn(|k| coef[s * COEFS + k]));
        let i = IndexRow(core::array::from_fn(|k| idx[s * INDICES + k]));
        Self::from_rows(&c, &i)
    }

    /// The step's coefficients in table order (the inverse of [`Step::load`]).
    pub fn coefs(&self) -> [T; COEFS] {
        [self.wl, self.wr, self.sd, self.dt_left, self.dt_right, self.recip_left, self.recip_right, T::ZERO]
    }

    /// The step's indices in table order.
    pub fn indices(&self) -> [u32; INDICES] {
        [self.left, self.right, self.store, self.z, self.out, self.flags, 0, 0]
    }

    /// A step from one row of each table.
    #[inline(always)]
    pub fn from_rows(c: &CoefRow<T>, i: &IndexRow) -> Step<T> {
        let (c, i) = (c.0, i.0);
        Step {
            wl: c[0],
            wr: c[1],
            sd: c[2],
            dt_left: c[3],
            dt_right: c[4],
            recip_left: c[5],
            recip_right: c[6],
            left: i[0],
            right: i[1],
            store: i[2],
            z: i[3],
            out: i[4],
            flags: i[5],
        }
    }
}

impl Step<f64> {
    /// This step (its coefficients computed in f64) in precision `T`: every coefficient rounded
    /// to `T`, then the reciprocals computed from the rounded divisors in `T` ([`reciprocal`]:
    /// `RN(1/dt)` of the very divisor the generators divide by, not a double rounding of the
    /// f64 reciprocal).
    pub fn round<T: Real>(&self) -> Step<T> {
        let (dt_left, dt_right) = (T::from_f64(self.dt_left), T::from_f64(self.dt_right));
        Step {
            wl: T::from_f64(self.wl),
            wr: T::from_f64(self.wr),
            sd: T::from_f64(self.sd),
            dt_left,
            dt_right,
            recip_left: reciprocal(dt_left),
            recip_right: reciprocal(dt_right),
            left: self.left,
            right: self.right,
            store: self.store,
            z: self.z,
            out: self.out,
            flags: self.flags,
        }
    }
}

/// One step's coefficients as the device reads them (16-byte aligned: vector loads).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct CoefRow<T>(pub [T; COEFS]);

/// One step's indices as the device reads them (16-byte aligned: vector loads).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct IndexRow(pub [u32; INDICES]);

/// Where a path generator reads its steps from.
pub trait Steps<T> {
    /// Step `s`.
    fn step(&self, s: usize) -> Step<T>;
}

/// Steps from flat slices (`COEFS` and `INDICES` per step).
#[derive(Clone, Copy)]
pub struct SliceSteps<'a, T> {
    /// Coefficients.
    pub coef: &'a [T],
    /// Indices.
    pub idx: &'a [u32],
}

impl<T: Real> Steps<T> for SliceSteps<'_, T> {
    #[inline(always)]
    fn step(&self, s: usize) -> Step<T> {
        Step::load(self.coef, self.idx, s)
    }
}

/// Where the normals come from: row `i·d + k` (construction index i, dimension k) of this path.
pub trait Normals<T> {
    /// The normal of row `row`.
    fn normal(&mut self, row: u32) -> T;
}

/// Where the results go: row `g·d + k` of this path.
pub trait Sink<T> {
    /// Writes `v` to row `row`.
    fn put(&mut self, row: u32, v: T);
}

/// The live values of one path: element `slot·d + k`.
pub trait Stack<T> {
    /// Element `i`.
    fn get(&self, i: u32) -> T;
    /// Sets element `i`.
    fn set(&mut self, i: u32, v: T);
}

/// A stack in a slice (the CPU generators).
pub struct SliceStack<'a, T>(pub &'a mut [T]);

impl<T: Copy> Stack<T> for SliceStack<'_, T> {
    #[inline(always)]
    fn get(&self, i: u32) -> T {
        self.0[i as usize]
    }
    #[inline(always)]
    fn set(&mut self, i: u32, v: T) {
        self.0[i as usize] = v;
    }
}
