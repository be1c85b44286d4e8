//! `lockstep.nbody`: RK4 integration of borrowed `(n, 3)` positions and velocities and `(n,)`
//! masses, with frames every `every` steps and the energy of each frame.

use crate::run::{Device, Fail, check_alloc, chunked, interruptible, to_py};
use lockstep::nbody::{self, Checkpoint, Ended, Mode, NbodyFloat, Params, Schedule, Segments, System};
use numpy::ndarray::{Array1, Array3};
use numpy::{Element, IntoPyArray, PyArray1, PyArray3, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::time::Instant;

type Frames<'py, T> =
    (Bound<'py, PyArray3<T>>, Bound<'py, PyArray3<T>>, Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<u64>>);

pub(crate) fn system<T: NbodyFloat + Element>(
    pos: &PyReadonlyArray2<'_, T>,
    vel: &PyReadonlyArray2<'_, T>,
    mass: &PyReadonlyArray1<'_, T>,
) -> PyResult<System<T>> {
    let contiguous = |what: &str| PyValueError::new_err(format!("{what}: not C-contiguous"));
    let p = pos.as_slice().map_err(|_| contiguous("pos"))?;
    let v = vel.as_slice().map_err(|_| contiguous("vel"))?;
    let m = mass.as_slice().map_err(|_| contiguous("mass"))?;
    if p.len() != 3 * m.len() || v.len() != 3 * m.len() {
        return Err(PyValueError::new_err("pos and vel must be (n, 3) and mass (n,)"));
    }
    // lockstep's layout (x, y, z, m) and (vx, vy, vz, 0) per body: one copy of the state.
    Ok(System::from_bodies(
        (0..m.len()).map(|i| ([p[3 * i], p[3 * i + 1], p[3 * i + 2]], [v[3 * i], v[3 * i + 1], v[3 * i + 2]], m[i])),
    ))
}

/// Checkpoint options of `integrate` (`checkpoint`, `checkpoint_every`, `resume`).
pub struct Resume {
    checkpoint: Option<PathBuf>,
    every: u64,
    resume: Option<PathBuf>,
}

impl Resume {
    fn wanted(&self) -> bool {
        self.checkpoint.is_some() || self.resume.is_some()
    }
}

/// `integrate` with checkpoints: `lockstep::nbody::run_resumable` from the start or from the
/// `resume` file; Ctrl-C writes the checkpoint, then raises `KeyboardInterrupt`.
#[allow(clippy::too_many_arguments)]
fn integrate_resumable<T: NbodyFloat + Element>(
    py: Python<'_>,
    s: System<T>,
    p: Params<T>,
    mode: Mode,
    device: Device,
    steps: u64,
    every: u64,
    energy: Option<(f64, f64)>,
    opts: &Resume,
) -> PyResult<(Vec<T>, Vec<T>, Vec<f64>, Vec<u64>)> {
    let n = s.len();
    let extra = vec![
        ("steps".to_string(), steps.to_string()),
        ("every".into(), every.to_string()),
        ("energy".into(), energy.is_some().to_string()),
        ("caller".into(), "python".into()),
    ];
    let mut state = match &opts.resume {
        Some(file) => Checkpoint::<T>::load(file, &p, mode, n, &extra).map_err(to_py)?,
        None => Checkpoint::start(p, mode, s).map_err(to_py)?,
    };
    let target = opts.checkpoint.clone().or_else(|| opts.resume.clone());
    let state = interruptible(py, move |stop| {
        let seg = Segments {
            until: steps,
            every,
            energy,
            frames: true,
            schedule: Schedule { checkpoint: target.as_deref(), every: opts.every, extra: &extra, stop: Some(stop) },
        };
        let advance = |s: &mut System<T>, k: u64| nbody::run(device.backend(), mode, &p, s, k);
        match nbody::run_resumable(&mut state, &seg, advance, |_| {})? {
            Ended::Finished => Ok(state),
            Ended::Stopped { .. } => Err(Fail::Stopped),
            Ended::NonFinite { step, count } => Err(Fail::Rust(lockstep::Error::InvalidInput {
                what: "n-body state",
                why: format!(
                    "{count} positions and velocities are not finite after step {step} (eps = 0 with coincident bodies gives NaN)"
                ),
            })),
        }
    })?;
    let rec = state.recording;
    let (mut xs, mut vs) = (Vec::with_capacity(rec.frames.len() / 2), Vec::with_capacity(rec.frames.len() / 2));
    for body in rec.frames.chunks_exact(6) {
        xs.extend_from_slice(&body[..3]);
        vs.extend_from_slice(&body[3..]);
    }
    Ok((xs, vs, rec.energy, rec.steps))
}

#[allow(clippy::too_many_arguments)]
fn integrate_typed<'py, T: NbodyFloat + Element>(
    py: Python<'py>,
    pos: PyReadonlyArray2<'py, T>,
    vel: PyReadonlyArray2<'py, T>,
    mass: PyReadonlyArray1<'py, T>,
    g: f64,
    eps: f64,
    dt: f64,
    steps: u64,
    every: Option<u64>,
    with_energy: bool,
    mode: &str,
    device: &str,
    opts: Resume,
) -> PyResult<Frames<'py, T>> {
    let mode = match mode {
        "exact" => Mode::Exact,
        "fast" => Mode::Fast,
        m => return Err(PyValueError::new_err(format!("mode: {m:?} is not 'exact' or 'fast'"))),
    };
    let every = match every {
        Some(0) => return Err(PyValueError::new_err("every: 0; give a number of steps ≥ 1 or None")),
        Some(e) => e.min(steps.max(1)),
        None => steps.max(1),
    };
    let n = mass.shape()[0];
    let frames = steps.div_ceil(every) + 1;
    check_alloc("the trajectory (frames × n × 6 values)", frames as u128 * n as u128 * 6, size_of::<T>() as u128)?;
    let device = Device::parse(py, device)?;
    let p = Params { g: T::from_f64(g), eps: T::from_f64(eps), dt: T::from_f64(dt) };
    let mut s = system(&pos, &vel, &mass)?;
    nbody::validate(&p, &s).map_err(to_py)?;
    if mode == Mode::Fast && !matches!(device, Device::Gpu(_)) {
        return Err(PyValueError::new_err("invalid mode: fast mode runs on the GPU only; use exact"));
    }
    let (xs, vs, es, ks) = if opts.wanted() {
        integrate_resumable(py, s, p, mode, device, steps, every, with_energy.then_some((g, eps)), &opts)?
    } else {
        interruptible(py, move |stop| {
            let cap = frames as usize * n * 3;
            let (mut xs, mut vs) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
            let (mut es, mut ks) = (Vec::with_capacity(frames as usize), Vec::with_capacity(frames as usize));
            let mut record = |s: &System<T>, k: u64| {
                for b in 0..n {
                    xs.extend_from_slice(&s.pos[4 * b..4 * b + 3]);
                    vs.extend_from_slice(&s.vel[4 * b..4 * b + 3]);
                }
                if with_energy {
                    es.push(nbody::energy(s, g, eps));
                }
                ks.push(k);
            };
            record(&s, 0);
            let mut done = 0u64;
            while done < steps {
                let span = every.min(steps - done);
                // Chunks of steps: RK4 carries only the state, so k then m steps are k + m steps.
                chunked(span, stop, |count| Ok(nbody::run(device.backend(), mode, &p, &mut s, count)?))?;
                done += span;
                record(&s, done);
            }
            Ok((xs, vs, es, ks))
        })?
    };
    let f = ks.len();
    let shape = |v: Vec<T>| Array3::from_shape_vec((f, n, 3), v).map_err(|e| PyValueError::new_err(format!("{e}")));
    Ok((
        shape(xs)?.into_pyarray(py),
        shape(vs)?.into_pyarray(py),
        Array1::from_vec(es).into_pyarray(py),
        Array1::from_vec(ks).into_pyarray(py),
    ))
}

macro_rules! integrate_fn {
    ($name:ident, $t:ty) => {
        /// Trajectory (positions and velocities per frame), energy per frame, step per frame.
        #[pyfunction]
        #[pyo3(signature = (pos, vel, mass, g, eps, dt, steps, every, energy, mode, device, checkpoint=None, checkpoint_every=None, resume=None))]
        #[allow(clippy::too_many_arguments)]
        fn $name<'py>(
            py: Python<'py>,
            pos: PyReadonlyArray2<'py, $t>,
            vel: PyReadonlyArray2<'py, $t>,
            mass: PyReadonlyArray1<'py, $t>,
            g: f64,
            eps: f64,
            dt: f64,
            steps: u64,
            every: Option<u64>,
            energy: bool,
            mode: &str,
            device: &str,
            checkpoint: Option<PathBuf>,
            checkpoint_every: Option<u64>,
            resume: Option<PathBuf>,
        ) -> PyResult<Frames<'py, $t>> {
            let opts = Resume { checkpoint, every: checkpoint_every.unwrap_or(0), resume };
            integrate_typed(py, pos, vel, mass, g, eps, dt, steps, every, energy, mode, device, opts)
        }
    };
}

integrate_fn!(nbody_integrate_f32, f32);
integrate_fn!(nbody_integrate_f64, f64);

/// Plummer sphere of `n` bodies (lockstep's `nbody::init::plummer`): (pos, vel, mass) in f64.
#[pyfunction]
fn nbody_plummer(
    py: Python<'_>,
    n: usize,
    seed: u64,
) -> PyResult<(Bound<'_, PyArray2Alias>, Bound<'_, PyArray2Alias>, Bound<'_, PyArray1<f64>>)> {
    if n == 0 || n > nbody::MAX_BODIES {
        return Err(PyValueError::new_err(format!("n: {n}; need 1 ≤ n ≤ {}", nbody::MAX_BODIES)));
    }
    check_alloc("the bodies (n × 8 values)", n as u128 * 8, 8)?;
    let s = py.allow_threads(|| nbody::init::plummer(n, seed));
    let pick = |v: &[f64]| -> Vec<f64> { (0..n).flat_map(|b| v[4 * b..4 * b + 3].to_vec()).collect() };
    let mass: Vec<f64> = (0..n).map(|b| s.pos[4 * b + 3]).collect();
    let two = |v: Vec<f64>| {
        numpy::ndarray::Array2::from_shape_vec((n, 3), v).map_err(|e| PyValueError::new_err(format!("{e}")))
    };
    Ok((
        two(pick(&s.pos))?.into_pyarray(py),
        two(pick(&s.vel))?.into_pyarray(py),
        Array1::from_vec(mass).into_pyarray(py),
    ))
}

type PyArray2Alias = numpy::PyArray2<f64>;

/// Seconds of `repeats` calls of `lockstep::nbody::run` (exact, `steps` steps) on the same
/// bodies, no Python in between: the Rust side of the overhead benchmark.
#[pyfunction]
#[pyo3(signature = (pos, vel, mass, g, eps, dt, steps, device, repeats))]
#[allow(clippy::too_many_arguments)]
fn _rust_timing_nbody(
    py: Python<'_>,
    pos: PyReadonlyArray2<'_, f32>,
    vel: PyReadonlyArray2<'_, f32>,
    mass: PyReadonlyArray1<'_, f32>,
    g: f64,
    eps: f64,
    dt: f64,
    steps: u64,
    device: &str,
    repeats: usize,
) -> PyResult<Vec<f64>> {
    let backend = Device::parse(py, device)?.backend();
    let start = system(&pos, &vel, &mass)?;
    let p = Params { g: g as f32, eps: eps as f32, dt: dt as f32 };
    py.allow_threads(|| {
        let mut times = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let mut s = start.clone();
            let t = Instant::now();
            nbody::run(backend, Mode::Exact, &p, &mut s, steps).map_err(to_py)?;
            times.push(t.elapsed().as_secs_f64());
        }
        Ok(times)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(nbody_integrate_f32, m)?)?;
    m.add_function(wrap_pyfunction!(nbody_integrate_f64, m)?)?;
    m.add_function(wrap_pyfunction!(nbody_plummer, m)?)?;
    m.add_function(wrap_pyfunction!(_rust_timing_nbody, m)?)?;
    Ok(())
}
