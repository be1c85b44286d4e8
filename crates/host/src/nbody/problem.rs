//! The N-body problem: parameters, bodies, their validation, and the kernel choices — the same
//! types for the CPU twin and the GPU launcher.
//!
//! State layout: `pos` holds `x, y, z, m` per body, `vel` holds `vx, vy, vz, w` (`w` is carried
//! along untouched; 0 by convention).

use crate::error::{Error, Result};
use crate::launch::expect_len;
use lockstep_shared::nbody::Real;

/// Largest body count (device indices are `u32`; tiles add a block to the index).
pub const MAX_BODIES: usize = 1 << 30;

/// Which kernel computes the forces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Every thread reads every body from global memory.
    Global,
    /// Bodies staged through shared memory, one tile of `block` bodies at a time.
    Shared,
}

/// Exact (bit-identical to the CPU) or fast (FMA, `rsqrt.approx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No contraction, correctly rounded sqrt and division: equals the CPU bit for bit.
    Exact,
    /// FMA and approximate reciprocal square root: within a stated tolerance of the CPU.
    Fast,
}

/// Physical and numerical parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params<T> {
    /// Gravitational constant (finite, ≥ 0).
    pub g: T,
    /// Plummer softening length ε (finite, ≥ 0; 0 = none).
    pub eps: T,
    /// Time step (finite, > 0).
    pub dt: T,
}

impl<T: NbodyFloat> Params<T> {
    /// `ε²` as both sides compute it.
    pub fn eps2(&self) -> T {
        self.eps * self.eps
    }
}

/// Bodies: `pos` = `x, y, z, m` per body, `vel` = `vx, vy, vz, w` per body.
#[derive(Clone, Debug, PartialEq)]
pub struct System<T> {
    /// Positions and masses, 4 per body.
    pub pos: Vec<T>,
    /// Velocities (and an unused 4th component), 4 per body.
    pub vel: Vec<T>,
}

impl<T: NbodyFloat> System<T> {
    /// Builds a system from `(position, velocity, mass)` per body.
    pub fn from_bodies(bodies: impl IntoIterator<Item = ([T; 3], [T; 3], T)>) -> Self {
        let mut s = System { pos: Vec::new(), vel: Vec::new() };
        for (p, v, m) in bodies {
            s.pos.extend_from_slice(&[p[0], p[1], p[2], m]);
            s.vel.extend_from_slice(&[v[0], v[1], v[2], T::ZERO]);
        }
        s
    }

    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.pos.len() / 4
    }

    /// Whether there are no bodies.
    pub fn is_empty(&self) -> bool {
        self.pos.len() < 4
    }

    /// The same system in another precision (rounded to nearest).
    pub fn convert<U: NbodyFloat>(&self) -> System<U> {
        System {
            pos: self.pos.iter().map(|&v| U::from_f64(v.to_f64())).collect(),
            vel: self.vel.iter().map(|&v| U::from_f64(v.to_f64())).collect(),
        }
    }
}

/// The N-body kernels as a family: an [`NbodyFloat`]'s `Element<NbodyKernels>` picks its own.
pub(crate) enum NbodyKernels {}

/// The float types with N-body kernels.
#[allow(private_bounds)] // sealed: `Element` picks the GPU kernels of each type
pub trait NbodyFloat:
    Real
    + crate::DeviceValue
    + crate::checkpoint::Value
    + crate::backend::Element<NbodyKernels>
    + crate::dist::Plain
    + Default
    + std::fmt::Debug
    + std::fmt::Display
    + Send
    + Sync
    + 'static
{
    /// `"f32"` or `"f64"`.
    const NAME: &'static str;
    /// Rounds an f64.
    fn from_f64(v: f64) -> Self;
    /// Widens to f64 (exact).
    fn to_f64(self) -> f64;
    /// Neither NaN nor infinite.
    fn finite(self) -> bool;
}

impl NbodyFloat for f32 {
    const NAME: &'static str = "f32";
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn finite(self) -> bool {
        self.is_finite()
    }
}

impl NbodyFloat for f64 {
    const NAME: &'static str = "f64";
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn finite(self) -> bool {
        self.is_finite()
    }
}

pub(crate) fn invalid(what: &'static str, why: String) -> Error {
    Error::InvalidInput { what, why }
}

/// Checks parameters and state (pure; the GPU launcher and the CPU reference both call it):
/// N ≥ 1 and ≤ [`MAX_BODIES`], matching lengths, `dt` finite and > 0, `G` and ε finite and
/// ≥ 0, masses finite and ≥ 0, positions and velocities finite.
pub fn validate<T: NbodyFloat>(p: &Params<T>, s: &System<T>) -> Result<()> {
    if !s.pos.len().is_multiple_of(4) {
        return Err(invalid("positions", format!("{} values: need 4 per body (x, y, z, m)", s.pos.len())));
    }
    expect_len("velocities", s.vel.len(), s.pos.len())?;
    let n = s.len();
    if n == 0 {
        return Err(invalid("body count", "N = 0: there are no bodies to integrate".into()));
    }
    if n > MAX_BODIES {
        return Err(Error::TooLarge { what: "body count", value: n as u64, max: MAX_BODIES as u64 });
    }
    validate_params(p)?;
    for i in 0..n {
        let m = s.pos[4 * i + 3];
        if !(m.finite() && m >= T::ZERO) {
            return Err(invalid("mass", format!("body {i} has mass {m}: masses must be finite and >= 0")));
        }
        if !s.pos[4 * i..4 * i + 3].iter().all(|v| v.finite()) {
            return Err(invalid("position", format!("body {i} has a non-finite position")));
        }
        if !s.vel[4 * i..4 * i + 3].iter().all(|v| v.finite()) {
            return Err(invalid("velocity", format!("body {i} has a non-finite velocity")));
        }
    }
    Ok(())
}

/// Checks the parameters alone: `dt` finite and > 0, `G` and ε finite and ≥ 0.
pub fn validate_params<T: NbodyFloat>(p: &Params<T>) -> Result<()> {
    if !(p.dt.finite() && p.dt > T::ZERO) {
        return Err(invalid("time step", format!("dt = {}: it must be finite and > 0", p.dt)));
    }
    if !(p.g.finite() && p.g >= T::ZERO) {
        return Err(invalid("gravitational constant", format!("G = {}: it must be finite and >= 0", p.g)));
    }
    if !(p.eps.finite() && p.eps >= T::ZERO) {
        return Err(invalid("softening", format!("eps = {}: it must be finite and >= 0", p.eps)));
    }
    Ok(())
}
