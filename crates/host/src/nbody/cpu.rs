//! CPU twin of the N-body kernels (exact mode), sequential and rayon, plus diagnostics
//! (energy, momentum) and initial conditions (uniform ball, Plummer sphere, CSV).
//!
//! [`step_seq`] / [`step_par`] run the four stages exactly as the kernels do: the same
//! `lockstep_shared::nbody` functions, the same `j` order split over the same
//! `2^split_shift(N)` lanes and combined by the same tree (`accel_split`),
//! `ε² = ε·ε` computed the same way.

use super::problem::{NbodyFloat, Params, System, validate};
use crate::error::{Error, Result};
use lockstep_shared::nbody::{MAX_SPLIT_SHIFT, Rk4, STAGES, V4, accel_split, combine, split_shift, stage_position};
use rayon::prelude::*;

pub(crate) fn v4<T: Copy>(s: &[T], i: usize) -> V4<T> {
    V4 { x: s[4 * i], y: s[4 * i + 1], z: s[4 * i + 2], w: s[4 * i + 3] }
}

pub(crate) fn put<T: Copy>(s: &mut [T], i: usize, v: V4<T>) {
    s[4 * i..4 * i + 4].copy_from_slice(&[v.x, v.y, v.z, v.w]);
}

fn step_with<T: NbodyFloat>(p: &Params<T>, s: &mut System<T>, par: bool, shift: Option<u32>) {
    let n = s.len();
    let shift = shift.unwrap_or_else(|| split_shift(n as u32));
    let (g, eps2, c) = (p.g, p.eps2(), Rk4::new(p.dt));
    let x: Vec<V4<T>> = (0..n).map(|i| v4(&s.pos, i)).collect();
    let v: Vec<V4<T>> = (0..n).map(|i| v4(&s.vel, i)).collect();
    let mut kv: Vec<Vec<V4<T>>> = Vec::with_capacity(4);
    let mut src = x.clone();
    for stage in 0..STAGES {
        let accel = |i: usize| accel_split(i as u32, src[i], n as u32, shift, |j| src[j as usize], eps2, g);
        let a: Vec<V4<T>> = if par { (0..n).into_par_iter().map(accel).collect() } else { (0..n).map(accel).collect() };
        if stage < 3 {
            let before = if stage >= 1 { &kv[stage as usize - 1] } else { &a };
            src = (0..n).map(|i| stage_position(stage + 1, x[i], v[i], before[i], c)).collect();
        }
        kv.push(a);
    }
    for i in 0..n {
        let (x1, v1) = combine(x[i], v[i], [kv[0][i], kv[1][i], kv[2][i], kv[3][i]], c);
        put(&mut s.pos, i, x1);
        put(&mut s.vel, i, v1);
    }
}

/// One RK4 step on one thread (no validation: see [`run_seq`]).
pub fn step_seq<T: NbodyFloat>(p: &Params<T>, s: &mut System<T>) {
    step_with(p, s, false, None)
}

/// One RK4 step, forces with rayon (bit-identical to [`step_seq`]).
pub fn step_par<T: NbodyFloat>(p: &Params<T>, s: &mut System<T>) {
    step_with(p, s, true, None)
}

/// Validates, then `steps` steps on one thread.
pub fn run_seq<T: NbodyFloat>(p: &Params<T>, s: &mut System<T>, steps: u64) -> Result<()> {
    validate(p, s)?;
    for _ in 0..steps {
        step_seq(p, s);
    }
    Ok(())
}

/// As [`run_seq`] with every pair sum split over `2^shift` lanes (0 ≤ shift ≤ 5) instead of
/// `2^split_shift(N)`: the twin of `Nbody::with_split_shift` (other bits than the default).
pub fn run_seq_split<T: NbodyFloat>(p: &Params<T>, s: &mut System<T>, steps: u64, shift: u32) -> Result<()> {
    if shift > MAX_SPLIT_SHIFT {
        return Err(Error::InvalidInput {
            what: "split shift",
            why: format!("{shift}: use 0 to {MAX_SPLIT_SHIFT} (1 to 32 lanes per body)"),
        });
    }
    validate(p, s)?;
    for _ in 0..steps {
        step_with(p, s, true, Some(shift));
    }
    Ok(())
}

/// Validates, then `steps` steps with rayon.
pub fn run_par<T: NbodyFloat>(p: &Params<T>, s: &mut System<T>, steps: u64) -> Result<()> {
    validate(p, s)?;
    for _ in 0..steps {
        step_par(p, s);
    }
    Ok(())
}

/// Total energy in f64: `Σ m v²/2 − G Σ_{i<j} m_i m_j / sqrt(r² + ε²)` (pairs in parallel).
pub fn energy<T: NbodyFloat>(s: &System<T>, g: f64, eps: f64) -> f64 {
    let n = s.len();
    let f = |v: T| v.to_f64();
    let kinetic: f64 = (0..n)
        .map(|i| {
            let (vx, vy, vz) = (f(s.vel[4 * i]), f(s.vel[4 * i + 1]), f(s.vel[4 * i + 2]));
            0.5 * f(s.pos[4 * i + 3]) * (vx * vx + vy * vy + vz * vz)
        })
        .sum();
    let potential: f64 = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut u = 0.0;
            for j in i + 1..n {
                let d: Vec<f64> = (0..3).map(|k| f(s.pos[4 * j + k]) - f(s.pos[4 * i + k])).collect();
                let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps * eps).sqrt();
                u -= f(s.pos[4 * i + 3]) * f(s.pos[4 * j + 3]) / r;
            }
            u
        })
        .sum();
    kinetic + g * potential
}

/// Total momentum `Σ m v` in f64.
pub fn momentum<T: NbodyFloat>(s: &System<T>) -> [f64; 3] {
    let mut p = [0.0; 3];
    for i in 0..s.len() {
        for (k, pk) in p.iter_mut().enumerate() {
            *pk += s.pos[4 * i + 3].to_f64() * s.vel[4 * i + k].to_f64();
        }
    }
    p
}

/// Initial conditions (always built in f64; convert with [`System::convert`]).
pub mod init {
    use super::*;

    /// SplitMix64 uniform numbers in [0, 1).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }

        fn in_unit_ball(&mut self) -> [f64; 3] {
            loop {
                let p = [2.0 * self.next() - 1.0, 2.0 * self.next() - 1.0, 2.0 * self.next() - 1.0];
                if p[0] * p[0] + p[1] * p[1] + p[2] * p[2] <= 1.0 {
                    return p;
                }
            }
        }
    }

    /// `n` bodies of mass `total_mass / n`, uniform in a ball of `radius`, at rest (the seed's
    /// Fig. 9 start).
    pub fn ball(n: usize, radius: f64, total_mass: f64, seed: u64) -> System<f64> {
        let mut r = Rng(seed);
        System::from_bodies((0..n).map(|_| {
            let p = r.in_unit_ball();
            ([radius * p[0], radius * p[1], radius * p[2]], [0.0; 3], total_mass / n as f64)
        }))
    }

    /// A Plummer sphere of `n` equal masses in Hénon units (G = 1, M = 1, E = −1/4), sampled as
    /// Aarseth, Hénon & Wielen (1974), radii cut at the 99.9% mass radius, moved to the
    /// centre-of-mass frame.
    pub fn plummer(n: usize, seed: u64) -> System<f64> {
        let mut r = Rng(seed);
        let scale = 3.0 * std::f64::consts::PI / 16.0;
        let mut bodies: Vec<([f64; 3], [f64; 3], f64)> = (0..n)
            .map(|_| {
                let m_frac = 1e-9 + 0.999 * r.next();
                let rad = 1.0 / (m_frac.powf(-2.0 / 3.0) - 1.0).sqrt();
                let dir = unit(&mut r);
                // von Neumann rejection for q = v / v_escape with density q²(1 − q²)^3.5.
                let q = loop {
                    let (q, y) = (r.next(), 0.1 * r.next());
                    if y < q * q * (1.0 - q * q).powf(3.5) {
                        break q;
                    }
                };
                let speed = q * 2f64.sqrt() * (1.0 + rad * rad).powf(-0.25);
                let vdir = unit(&mut r);
                let p = [rad * dir[0] * scale, rad * dir[1] * scale, rad * dir[2] * scale];
                let s = speed / scale.sqrt();
                (p, [s * vdir[0], s * vdir[1], s * vdir[2]], 1.0 / n as f64)
            })
            .collect();
        for k in 0..3 {
            let cp = bodies.iter().map(|b| b.0[k] * b.2).sum::<f64>();
            let cv = bodies.iter().map(|b| b.1[k] * b.2).sum::<f64>();
            for b in bodies.iter_mut() {
                b.0[k] -= cp;
                b.1[k] -= cv;
            }
        }
        System::from_bodies(bodies)
    }

    fn unit(r: &mut Rng) -> [f64; 3] {
        loop {
            let p = r.in_unit_ball();
            let l = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
            if l > 1e-6 {
                return [p[0] / l, p[1] / l, p[2] / l];
            }
        }
    }

    /// Whether the first line of an initial-conditions file is a header.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Header {
        /// The first line (not blank, not a `#` comment) is a header: skipped unread.
        Yes,
        /// No header: every line is a body.
        No,
        /// A header only when its first line holds no number in any field (`x,y,z,…`); a first
        /// line with a number and a typo is an error, never a body dropped as a "header".
        Auto,
    }

    /// [`from_csv_with`] and [`Header::Auto`].
    pub fn from_csv(text: &str) -> Result<System<f64>> {
        from_csv_with(text, Header::Auto)
    }

    /// Parses initial conditions: one body per line, `x,y,z,vx,vy,vz,m` (commas or
    /// whitespace); blank lines and lines starting with `#` are skipped, a UTF-8 byte-order mark
    /// (Excel's "CSV UTF-8") is ignored, and the first line is a header as `header` says.
    /// Errors name the line (1-based) and say why.
    pub fn from_csv_with(text: &str, header: Header) -> Result<System<f64>> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut bodies = Vec::new();
        let mut first = true;
        for (k, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> =
                t.split(|c: char| c == ',' || c.is_whitespace()).filter(|f| !f.is_empty()).collect();
            let is_first = std::mem::replace(&mut first, false);
            if is_first {
                let numberless = fields.iter().all(|f| f.parse::<f64>().is_err());
                match header {
                    Header::Yes => continue,
                    Header::Auto if numberless => continue,
                    _ => {}
                }
            }
            let parsed: std::result::Result<Vec<f64>, _> = fields.iter().map(|f| f.parse::<f64>()).collect();
            let bad = |why: String| Error::InvalidInput {
                what: "initial-condition file",
                why: format!("line {}: {why}", k + 1),
            };
            let vals = match parsed {
                Ok(v) => v,
                Err(e) => {
                    let f = fields.iter().find(|f| f.parse::<f64>().is_err()).unwrap_or(&"");
                    let hint = if is_first { " (a header line has no number in it; or give --header)" } else { "" };
                    return Err(bad(format!("`{f}` is not a number ({e}){hint}")));
                }
            };
            if vals.len() != 7 {
                return Err(bad(format!("{} fields, expected 7: x,y,z,vx,vy,vz,m", vals.len())));
            }
            if let Some(v) = vals.iter().find(|v| !v.is_finite()) {
                return Err(bad(format!("{v} is not finite")));
            }
            if vals[6] < 0.0 {
                return Err(bad(format!("mass {} is negative", vals[6])));
            }
            bodies.push(([vals[0], vals[1], vals[2]], [vals[3], vals[4], vals[5]], vals[6]));
        }
        if bodies.is_empty() {
            return Err(Error::InvalidInput { what: "initial-condition file", why: "no bodies in it (N = 0)".into() });
        }
        Ok(System::from_bodies(bodies))
    }
}
