//! The canonical runs of the golden table (`tests/golden/golden.txt`): small problems of every
//! family, each through the family's public entry function on a [`Backend`].
//!
//! **Bytes hashed.** A run's output is the little-endian bytes of its values, concatenated in
//! this order:
//!
//! - bridge: the generated `Vec<T>` in its `[step][dim][path]` layout;
//! - histogram: the bin counters (`u64`, or `f64` for fixed point), then `nan`, `below`,
//!   `above` (`u64`);
//! - himeno: the pressure field (`f32`, the problem's layout), then the gosa (`f32`);
//! - nbody: `pos` then `vel` (`x, y, z, m` / `vx, vy, vz, w` per body) after the steps;
//! - matmul: `C`, row-major;
//! - mg: the mean winner ratio per step (`f64`), or one game's initial history (`u32`) then its
//!   votes per step (`u64`);
//! - foundation: the result vector (or the count, `u32`; for axpy, `y` after the call).
//!
//! Inputs come from [`Inputs`], a fixed xorshift generator with exact arithmetic, so they are the
//! same on every machine. Inputs that would produce a NaN in a result are avoided: NaN payloads
//! are not part of lockstep's contract (the GPU returns the canonical NaN), bytes are.

use lockstep::bridge::{self, BridgeSpec, Noise, Output, Plan, Precision, Source, bisection_order, forward_order};
use lockstep::nbody::{self, Mode, NbodyFloat, Params};
use lockstep::{Backend, Result, foundation, himeno, histogram, matmul, mg};

/// How a run computes its output bytes on a backend.
pub type Compute = Box<dyn Fn(Backend<'_>) -> Result<Vec<u8>>>;

/// One canonical run: its row name, its description, and how to compute its bytes.
pub struct Run {
    /// Row name (`family/variant`).
    pub name: String,
    /// Parameters, for the table's description column.
    pub about: String,
    /// The output bytes on a backend.
    pub bytes: Compute,
}

fn run(name: impl Into<String>, about: impl Into<String>, f: impl Fn(Backend<'_>) -> Result<Vec<u8>> + 'static) -> Run {
    Run { name: name.into(), about: about.into(), bytes: Box::new(f) }
}

/// Values whose little-endian bytes are hashed.
pub trait Le: Copy {
    /// Appends the value's little-endian bytes.
    fn put(self, out: &mut Vec<u8>);
}

macro_rules! le {
    ($($t:ty)*) => {$(impl Le for $t { fn put(self, out: &mut Vec<u8>) { out.extend_from_slice(&self.to_le_bytes()); } })*};
}
le!(f32 f64 u32 u64 i32 i64);

/// The little-endian bytes of `v`.
pub fn le<T: Le>(v: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 8);
    v.iter().for_each(|x| x.put(&mut out));
    out
}

/// A fixed xorshift64* stream: inputs that are the same on every machine.
pub struct Inputs(u64);

impl Inputs {
    /// The stream of `seed` (non-zero).
    pub fn new(seed: u64) -> Inputs {
        Inputs(seed | 1)
    }

    /// The next 64 bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`: 53 bits, exact.
    pub fn unit(&mut self) -> f64 {
        (self.bits() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Roughly standard normal: the sum of four uniforms, centred and scaled (exact operations).
    pub fn normal(&mut self) -> f64 {
        (self.unit() + self.unit() + self.unit() + self.unit() - 2.0) * 1.732_050_807_568_877_2
    }
}

// ---- bridge ----------------------------------------------------------------------------------

const BRIDGE_PATHS: usize = 1001;
const BRIDGE_STEPS: usize = 17;
const COV3: [f64; 9] = [1.0, 0.5, 0.2, 0.5, 2.0, 0.3, 0.2, 0.3, 1.5];

fn spec(d: usize) -> BridgeSpec {
    let n = BRIDGE_STEPS - 1;
    let times = (1..=n).map(|i| i as f64 / BRIDGE_STEPS as f64).collect();
    if d == 1 {
        BridgeSpec {
            t0: 0.0,
            times,
            t_end: 1.0,
            order: bisection_order(n),
            start: vec![0.0],
            noise: Noise::Cholesky(vec![1.0]),
        }
    } else {
        BridgeSpec {
            t0: 0.0,
            times,
            t_end: 1.0,
            order: bisection_order(n),
            start: vec![0.5, -1.0, 2.0],
            noise: Noise::Covariance(COV3.to_vec()),
        }
    }
}

#[derive(Clone, Copy)]
enum Src {
    Philox,
    PhiloxBm,
    Sobol,
    Buffer,
}

fn bridge_bytes<T: Precision + Le>(
    b: Backend<'_>,
    spec: &BridgeSpec,
    src: Src,
    paths: usize,
    output: Output,
) -> Result<Vec<u8>> {
    let plan = Plan::new(spec)?;
    let z: Vec<T> = match src {
        Src::Buffer => {
            let mut g = Inputs::new(11);
            (0..plan.rows() * paths).map(|_| T::from_f64(g.normal())).collect()
        }
        _ => Vec::new(),
    };
    let source = match src {
        Src::Philox => Source::Philox { seed: 7 },
        Src::PhiloxBm => Source::PhiloxBoxMuller { seed: 7 },
        Src::Sobol => Source::Sobol { offset: 1 },
        Src::Buffer => Source::Buffer(&z),
    };
    Ok(le(&bridge::generate::<T>(b, &plan, source, paths, output)?))
}

fn bridge_runs(out: &mut Vec<Run>) {
    for (src, sname, sabout) in [
        (Src::Philox, "philox", "Philox seed 7"),
        (Src::PhiloxBm, "philox-bm", "Philox seed 7, Box–Muller normals"),
        (Src::Sobol, "sobol", "Sobol offset 1"),
        (Src::Buffer, "buffer", "normals from a buffer (Inputs 11, normal())"),
    ] {
        for prec in ["f32", "f64"] {
            for (output, oname) in [(Output::Paths, "paths"), (Output::Increments, "increments")] {
                for d in [1, 3] {
                    let noise = if d == 1 { "x0 = 0, C = 1" } else { "x0 = (0.5, -1, 2), cov = COV3" };
                    let about = format!(
                        "{sabout}, {prec}, {oname}, d = {d} ({noise}), {BRIDGE_STEPS} equal steps of [0, 1], bisection, \
                         {BRIDGE_PATHS} paths"
                    );
                    let spec = spec(d);
                    out.push(run(format!("bridge/{sname}-{prec}-{oname}-d{d}"), about, move |b| match prec {
                        "f32" => bridge_bytes::<f32>(b, &spec, src, BRIDGE_PATHS, output),
                        _ => bridge_bytes::<f64>(b, &spec, src, BRIDGE_PATHS, output),
                    }));
                }
            }
        }
    }
    let spec = BridgeSpec {
        t0: 0.0,
        times: vec![0.1, 0.15, 0.7],
        t_end: 2.5,
        order: forward_order(3),
        start: vec![1.5, -0.5],
        noise: Noise::Covariance(vec![1.0, 0.5, 0.5, 2.0]),
    };
    let about = "Philox seed 7, f64, paths, d = 2, times 0.1 0.15 0.7 2.5, forward order, x0 = (1.5, -0.5), \
                 cov = [1 0.5; 0.5 2], 77 paths";
    out.push(run("bridge/philox-f64-paths-d2-times-forward", about, move |b| {
        bridge_bytes::<f64>(b, &spec, Src::Philox, 77, Output::Paths)
    }));
}

// ---- histogram -------------------------------------------------------------------------------

fn histogram_input() -> (Vec<f64>, Vec<f64>) {
    let mut g = Inputs::new(21);
    let mut x: Vec<f64> = (0..20_000).map(|_| g.range(-5.0, 5.0)).collect();
    for (i, v) in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -4.0, 4.0, -0.0, 3.92].into_iter().enumerate() {
        x[i * 997] = v;
    }
    let w = (0..x.len()).map(|_| g.range(-2.0, 2.0)).collect();
    (x, w)
}

fn dropped_le(h: [u64; 3]) -> Vec<u8> {
    le(&h)
}

fn histogram_runs(out: &mut Vec<Run>) {
    let about =
        "20000 values uniform in [-5, 5) (Inputs 21) with NaN, ±inf, -4, 4, -0, 3.92 mixed in; 100 bins over [-4, 4)";
    out.push(run("histogram/counts", about, |b| {
        let (x, _) = histogram_input();
        let h = histogram::counts(b, &histogram::bins(-4.0, 4.0, 100)?, &x)?;
        Ok([le(&h.counts), dropped_le([h.nan, h.below, h.above])].concat())
    }));
    out.push(run("histogram/fixed", format!("{about}; fixed-point counts, no weights"), |b| {
        let (x, _) = histogram_input();
        let h = histogram::fixed(b, &histogram::bins(-4.0, 4.0, 100)?, &x, None)?;
        Ok([le(&h.counts), dropped_le([h.nan, h.below, h.above])].concat())
    }));
    out.push(run(
        "histogram/fixed-weighted",
        format!("{about}; fixed-point sums of weights uniform in [-2, 2)"),
        |b| {
            let (x, w) = histogram_input();
            let h = histogram::fixed(b, &histogram::bins(-4.0, 4.0, 100)?, &x, Some(&w))?;
            Ok([le(&h.counts), dropped_le([h.nan, h.below, h.above])].concat())
        },
    ));
}

// ---- himeno, nbody, matmul -------------------------------------------------------------------

fn nbody_bytes<T: NbodyFloat + Le>(b: Backend<'_>) -> Result<Vec<u8>> {
    let mut s = nbody::init::ball(100, 1.0, 1.0, 7).convert::<T>();
    let p = Params { g: T::from_f64(1.0), eps: T::from_f64(0.01), dt: T::from_f64(0.001) };
    nbody::run(b, Mode::Exact, &p, &mut s, 8)?;
    Ok([le(&s.pos), le(&s.vel)].concat())
}

fn matmul_bytes<T: matmul::MatmulInt + Le>(b: Backend<'_>, cast: fn(u64) -> T) -> Result<Vec<u8>> {
    let n = 33;
    let mut g = Inputs::new(31);
    let a: Vec<T> = (0..n * n).map(|_| cast(g.bits())).collect();
    let m: Vec<T> = (0..n * n).map(|_| cast(g.bits())).collect();
    Ok(le(&matmul::multiply(b, n, &a, &m)?))
}

fn solver_runs(out: &mut Vec<Run>) {
    out.push(run(
        "himeno/S-2",
        "size S (65 x 65 x 129, the benchmark's initial state), 2 sweeps; pressure then tree gosa",
        |b| {
            let (p, gosa) = himeno::run(b, &himeno::HimenoProblem::by_name("S")?, 2)?;
            Ok([le(&p), le(&[gosa])].concat())
        },
    ));
    let about =
        "exact mode, 100 bodies of init::ball(100, r = 1, M = 1, seed 7), G = 1, eps = 0.01, dt = 0.001, 8 RK4 steps";
    out.push(run("nbody/exact-f32", format!("{about}, f32"), nbody_bytes::<f32>));
    out.push(run("nbody/exact-f64", format!("{about}, f64"), nbody_bytes::<f64>));
    let about = "C = A·B, n = 33, wrapping; A and B from Inputs 31 (each value the low bits of one draw)";
    out.push(run("matmul/i32", format!("{about}, i32"), |b| matmul_bytes::<i32>(b, |v| v as i32)));
    out.push(run("matmul/i64", format!("{about}, i64"), |b| matmul_bytes::<i64>(b, |v| v as i64)));
}

// ---- mg ----------------------------------------------------------------------------------------

/// The distributed model a game row names (its CPU twin is one and the same game).
#[derive(Clone, Copy)]
enum Model {
    KernelPerStep,
    GridSync,
}

fn game_bytes(b: Backend<'_>, s: u32, model: Model) -> Result<Vec<u8>> {
    let params = mg::validate(101, 3, s, 40, 7)?;
    let outcome = match b {
        Backend::Gpu(gpu) => {
            let model = match model {
                Model::KernelPerStep => mg::Distributed::KernelPerStep,
                Model::GridSync => mg::Distributed::GridSync { blocks: None },
            };
            mg::Mg::new(gpu)?.play(&params, 2026, 2, model, false)?.0
        }
        Backend::CpuSeq => mg::play(&params, 2026, 2, None, false)?.0,
        Backend::Cpu => mg::play(&params, 2026, 2, Some(0), false)?.0,
    };
    Ok([le(&[outcome.h0]), le(&outcome.ones)].concat())
}

fn mg_runs(out: &mut Vec<Run>) {
    // 32 groups: the GPU's standalone model runs `mg_standalone_s2t` (transposed tables)
    out.push(run(
        "mg/mean-standalone-s2t",
        "n = 1001, m = 5, s = 2, p = 40, groups = 32, seed 2026, trials 3..8, mean winner ratio",
        |b| Ok(le(&mg::mean_winners(b, &mg::validate(1001, 5, 2, 40, 32)?, 2026, 3, 5)?)),
    ));
    for s in [2u32, 3] {
        let about = format!("n = 101, m = 3, s = {s}, p = 40, groups = 7, seed 2026");
        out.push(run(
            format!("mg/mean-standalone-s{s}"),
            format!("{about}, trials 3..8, mean winner ratio"),
            move |b| Ok(le(&mg::mean_winners(b, &mg::validate(101, 3, s, 40, 7)?, 2026, 3, 5)?)),
        ));
        for (model, mname) in [(Model::KernelPerStep, "kernel-per-step"), (Model::GridSync, "grid-sync")] {
            out.push(run(
                format!("mg/game-{mname}-s{s}"),
                format!("{about}, trial 2, one game: h0 then votes"),
                move |b| game_bytes(b, s, model),
            ));
        }
    }
}

// ---- foundation ------------------------------------------------------------------------------

fn foundation_runs(out: &mut Vec<Run>) {
    const N: usize = 10_000;
    let about = format!("{N} values uniform in [-1, 1) from Inputs");
    out.push(run("foundation/saxpy", format!("{about} 41 (x, y), a = 1.5, f32"), |b| {
        let mut g = Inputs::new(41);
        let x: Vec<f32> = (0..N).map(|_| g.range(-1.0, 1.0) as f32).collect();
        let mut y: Vec<f32> = (0..N).map(|_| g.range(-1.0, 1.0) as f32).collect();
        foundation::axpy(b, 1.5f32, &x, &mut y)?;
        Ok(le(&y))
    }));
    out.push(run("foundation/daxpy", format!("{about} 42 (x, y), a = -0.75, f64"), |b| {
        let mut g = Inputs::new(42);
        let x: Vec<f64> = (0..N).map(|_| g.range(-1.0, 1.0)).collect();
        let mut y: Vec<f64> = (0..N).map(|_| g.range(-1.0, 1.0)).collect();
        foundation::axpy(b, -0.75f64, &x, &mut y)?;
        Ok(le(&y))
    }));
    out.push(run("foundation/count-exceeding", format!("{about} 43, f32, threshold 0.25"), |b| {
        let mut g = Inputs::new(43);
        let x: Vec<f32> = (0..N).map(|_| g.range(-1.0, 1.0) as f32).collect();
        Ok(le(&[foundation::count_exceeding(b, &x, 0.25)?]))
    }));
    out.push(run("foundation/warp-sums", format!("{about} 44, f32, sums of 32"), |b| {
        let mut g = Inputs::new(44);
        let x: Vec<f32> = (0..N).map(|_| g.range(-1.0, 1.0) as f32).collect();
        Ok(le(&foundation::warp_sums(b, &x)?))
    }));
    out.push(run("foundation/block-sums", format!("{about} 45, f64, sums of BLOCK_REDUCE_THREADS"), |b| {
        let mut g = Inputs::new(45);
        let x: Vec<f64> = (0..N).map(|_| g.range(-1.0, 1.0)).collect();
        Ok(le(&foundation::block_sums(b, &x)?))
    }));
    out.push(run("foundation/exp-sin-log", format!("{N} values uniform in [1e-3, 20) from Inputs 46, f64"), |b| {
        let mut g = Inputs::new(46);
        let x: Vec<f64> = (0..N).map(|_| g.range(1e-3, 20.0)).collect();
        Ok(le(&foundation::exp_sin_log(b, &x)?))
    }));
}

/// Every canonical run, in table order.
pub fn all() -> Vec<Run> {
    let mut out = Vec::new();
    bridge_runs(&mut out);
    histogram_runs(&mut out);
    solver_runs(&mut out);
    mg_runs(&mut out);
    foundation_runs(&mut out);
    out
}
