//! `lockstep.dist`: this process's part of a run split over ranks (`python -m lockstep.dist`,
//! `lockstep run`, `mpirun`, `srun`). The first call joins the run ([`lockstep::dist::join`]:
//! the launcher's variables, the rendezvous store, the rank's GPU and NCCL) and keeps the
//! [`Rank`] for the life of the process; each family call then runs this rank's share with the
//! family's `dist` function ([`lockstep::mg::dist::play`], [`lockstep::nbody::dist::run`],
//! [`lockstep::bridge::dist::generate`]) on a worker thread with the GIL released, and returns
//! the whole result (the bits of the one-process call) on every rank. `dist_finish` says the
//! goodbye that lets the ranks exit without being taken for dead (`lockstep/dist.py` calls it
//! at exit). When another rank dies, this process prints one `error:` line and exits with
//! status 3 (its main thread may be blocked in a collective that would never return).

use crate::bridge::PyPlan;
use crate::run::{Fail, LockstepError, Work, check_alloc, interruptible, to_py};
use lockstep::bridge::{self, Precision};
use lockstep::dist::{Place, Rank};
use lockstep::nbody::{self, Method, NbodyFloat, Params};
use lockstep::{Backend, Error, mg};
use numpy::ndarray::{Array2, Array3};
use numpy::{
    Element, IntoPyArray, PyArray1, PyArray2, PyArray3, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// What `dist_rank` reports of the joined rank.
struct Info {
    rank: usize,
    size: usize,
    local_rank: usize,
    transport: String,
    device: &'static str,
    gpu: Option<String>,
    launcher: &'static str,
    master: String,
}

/// The outcome of the one join of this process: `None` when no launcher variables are set.
static JOINED: OnceLock<Result<Option<Info>, PyErr>> = OnceLock::new();
/// The joined rank, until `dist_finish` takes it.
static RANK: Mutex<Option<Rank>> = Mutex::new(None);
/// Set once `dist_finish` said the goodbye.
static FINISHED: AtomicBool = AtomicBool::new(false);

/// Where this rank computes: `LOCKSTEP_DEVICE` (`gpu`/`cpu`, set by the launchers), else the GPU
/// when the driver shows one.
fn place() -> PyResult<Place> {
    match std::env::var("LOCKSTEP_DEVICE").unwrap_or_default().trim() {
        "gpu" => Ok(Place::Gpu),
        "cpu" => Ok(Place::Cpu),
        "" => Ok(if lockstep::gpu::device_count().is_ok_and(|c| c > 0) { Place::Gpu } else { Place::Cpu }),
        other => Err(PyValueError::new_err(format!(
            "LOCKSTEP_DEVICE={other:?} is not 'gpu' or 'cpu' (unset: the GPU when one is visible)"
        ))),
    }
}

/// Joins the launched run (on the calling thread, the GIL released by the caller).
fn join_now() -> Result<Option<Info>, PyErr> {
    let place = place()?;
    let rank = lockstep::dist::join(place, |why| {
        // One write, so that the line is not split by Python's own output on stderr.
        let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("error: {why}\n").as_bytes());
        std::process::exit(3);
    })
    .map_err(to_py)?;
    let Some(rank) = rank else { return Ok(None) };
    let info = Info {
        rank: rank.comm().rank(),
        size: rank.comm().size(),
        local_rank: rank.launch().local_rank,
        transport: rank.transport().to_string(),
        device: if rank.gpu().is_some() { "gpu" } else { "cpu" },
        gpu: rank.gpu().map(|g| g.name().to_string()),
        launcher: rank.launch().source,
        master: rank.launch().master.clone(),
    };
    *RANK.lock().unwrap_or_else(PoisonError::into_inner) = Some(rank);
    Ok(Some(info))
}

/// The join's outcome, joining on the first call.
fn joined(py: Python<'_>) -> PyResult<Option<&'static Info>> {
    match py.allow_threads(|| JOINED.get_or_init(join_now)) {
        Ok(info) => Ok(info.as_ref()),
        Err(e) => Err(e.clone_ref(py)),
    }
}

/// The rank's backend: its GPU, else the CPU twin on every core.
fn backend(rank: &Rank) -> Backend<'_> {
    match rank.gpu() {
        Some(gpu) => Backend::Gpu(gpu),
        None => Backend::Cpu,
    }
}

/// Runs `work` with the joined rank ([`interruptible`]: a worker thread, the GIL released).
/// Errors: a `LockstepError` when this process is not a rank of a launched run, or after
/// `dist_finish`.
fn with_rank<T, F>(py: Python<'_>, what: &str, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Rank, &AtomicBool) -> Work<T> + Send,
{
    if joined(py)?.is_none() {
        return Err(LockstepError::new_err(format!(
            "lockstep.dist.{what}: this process is not a rank of a launched run (none of LOCKSTEP_RANK, \
             OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID is set); start the script with \
             `python -m lockstep.dist --ranks N script.py`, `lockstep run`, mpirun or srun, or call the \
             one-process function"
        )));
    }
    let finished =
        || format!("lockstep.dist.{what}: this rank already finished the run (lockstep.dist.finish()); no more calls");
    if FINISHED.load(Ordering::SeqCst) {
        return Err(LockstepError::new_err(finished()));
    }
    interruptible(py, move |stop| {
        let guard = RANK.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_ref() {
            Some(rank) => work(rank, stop),
            None => Err(Fail::Rust(Error::InvalidInput { what: "lockstep.dist", why: finished() })),
        }
    })
}

/// `None` outside a launched run, else this rank: `rank`, `size`, `local_rank`, `device`
/// (`"gpu"`/`"cpu"`), `gpu` (its name, or None), `transport`, `launcher`, `master`. Joins the
/// run on the first call.
#[pyfunction]
fn dist_rank(py: Python<'_>) -> PyResult<Option<Bound<'_, PyDict>>> {
    let Some(info) = joined(py)? else { return Ok(None) };
    let d = PyDict::new(py);
    d.set_item("rank", info.rank)?;
    d.set_item("size", info.size)?;
    d.set_item("local_rank", info.local_rank)?;
    d.set_item("device", info.device)?;
    d.set_item("gpu", info.gpu.as_deref())?;
    d.set_item("transport", &info.transport)?;
    d.set_item("launcher", info.launcher)?;
    d.set_item("master", &info.master)?;
    Ok(Some(d))
}

/// The goodbye: returns once every rank called it (after which no rank's exit is taken for a
/// death) and releases the rank. True when it was said; False when this process never joined,
/// already finished, or a call is still running on another thread (nothing is said then).
#[pyfunction]
fn dist_finish(py: Python<'_>) -> PyResult<bool> {
    if !matches!(JOINED.get(), Some(Ok(Some(_)))) {
        return Ok(false);
    }
    let rank = match RANK.try_lock() {
        Ok(mut guard) => guard.take(),
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().take(),
        Err(std::sync::TryLockError::WouldBlock) => None,
    };
    let Some(rank) = rank else { return Ok(false) };
    FINISHED.store(true, Ordering::SeqCst);
    py.allow_threads(move || rank.finish()).map_err(to_py)?;
    Ok(true)
}

/// Trial `trial` of the Minority Game, every rank playing its share of the groups:
/// `(h0, ones)` — the initial history and each step's side-1 count, on every rank.
#[pyfunction]
#[pyo3(signature = (n, m, s, p, groups, seed, trial))]
#[allow(clippy::too_many_arguments)]
fn dist_mg_play(
    py: Python<'_>,
    n: u64,
    m: u32,
    s: u32,
    p: u32,
    groups: u64,
    seed: u32,
    trial: u64,
) -> PyResult<(u32, Bound<'_, PyArray1<u64>>)> {
    let params = mg::validate(n, m, s, p, groups).map_err(to_py)?;
    check_alloc("the game (agents × tables)", n as u128, params.s as u128 * (params.words as u128 + 1) * 4)?;
    let o = with_rank(py, "mg_play", |rank, _| Ok(mg::dist::play(rank.comm(), backend(rank), &params, seed, trial)?))?;
    Ok((o.h0, o.ones.into_pyarray(py)))
}

/// Trials `first .. first + trials`, each played by every rank over its share of the groups
/// (stopped between trials on Ctrl-C): `(ratio, checksum, sums)` as `mg_run` returns them.
#[pyfunction]
#[pyo3(signature = (n, m, s, p, trials, groups, seed, first))]
#[allow(clippy::too_many_arguments)]
#[allow(clippy::type_complexity)]
fn dist_mg_run(
    py: Python<'_>,
    n: u64,
    m: u32,
    s: u32,
    p: u32,
    trials: u64,
    groups: u64,
    seed: u32,
    first: u64,
) -> PyResult<(Bound<'_, PyArray1<f64>>, u64, Bound<'_, PyArray1<u64>>)> {
    let params = mg::validate(n, m, s, p, groups).map_err(to_py)?;
    if trials == 0 || first.checked_add(trials).is_none() {
        return Err(PyValueError::new_err(format!(
            "invalid trials: first = {first}, trials = {trials}: need 1 or more trials ending at most at 2^64 - 1"
        )));
    }
    check_alloc("the game (agents × tables)", n as u128, params.s as u128 * (params.words as u128 + 1) * 4)?;
    let sum = with_rank(py, "mg_run", |rank, stop| {
        let mut sum = vec![0u64; params.p as usize];
        for trial in first..first + trials {
            if stop.load(Ordering::Relaxed) {
                return Err(Fail::Stopped);
            }
            let o = mg::dist::play(rank.comm(), backend(rank), &params, seed, trial)?;
            sum.iter_mut().zip(o.winners(n)).for_each(|(s, w)| *s = s.wrapping_add(w));
        }
        Ok(sum)
    })?;
    let ratio = mg::winner_ratio(&sum, n, trials);
    let checksum = sum.iter().fold(0u64, |h, &v| h.rotate_left(7) ^ v);
    Ok((ratio.into_pyarray(py), checksum, sum.into_pyarray(py)))
}

type State<'py, T> = (Bound<'py, PyArray2<T>>, Bound<'py, PyArray2<T>>);

#[allow(clippy::too_many_arguments)]
fn nbody_typed<'py, T: NbodyFloat + Element>(
    py: Python<'py>,
    pos: PyReadonlyArray2<'py, T>,
    vel: PyReadonlyArray2<'py, T>,
    mass: PyReadonlyArray1<'py, T>,
    g: f64,
    eps: f64,
    dt: f64,
    steps: u64,
    method: &str,
) -> PyResult<State<'py, T>> {
    let method = match method {
        "shared" => Method::Shared,
        "global" => Method::Global,
        m => return Err(PyValueError::new_err(format!("method: {m:?} is not 'shared' or 'global'"))),
    };
    let n: usize = mass.shape()[0];
    check_alloc("the bodies (n × 8 values, gathered per stage)", n as u128 * 24, size_of::<T>() as u128)?;
    let mut s = crate::nbody::system(&pos, &vel, &mass)?;
    let params = Params { g: T::from_f64(g), eps: T::from_f64(eps), dt: T::from_f64(dt) };
    nbody::validate(&params, &s).map_err(to_py)?;
    let s = with_rank(py, "nbody_run", move |rank, _| {
        nbody::dist::run(rank.comm(), backend(rank), method, &params, &mut s, steps)?;
        Ok(s)
    })?;
    let three = |v: &[T]| -> PyResult<Array2<T>> {
        let flat: Vec<T> = (0..n).flat_map(|b| v[4 * b..4 * b + 3].iter().copied()).collect();
        Array2::from_shape_vec((n, 3), flat).map_err(|e| PyValueError::new_err(format!("{e}")))
    };
    Ok((three(&s.pos)?.into_pyarray(py), three(&s.vel)?.into_pyarray(py)))
}

macro_rules! nbody_fn {
    ($name:ident, $t:ty) => {
        /// `steps` exact RK4 steps, every rank integrating its share of the bodies: the new
        /// `(pos, vel)`, each `(n, 3)`, of the whole system on every rank.
        #[pyfunction]
        #[pyo3(signature = (pos, vel, mass, g, eps, dt, steps, method))]
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
            method: &str,
        ) -> PyResult<State<'py, $t>> {
            nbody_typed(py, pos, vel, mass, g, eps, dt, steps, method)
        }
    };
}

nbody_fn!(dist_nbody_run_f32, f32);
nbody_fn!(dist_nbody_run_f64, f64);

#[allow(clippy::too_many_arguments)]
fn bridge_typed<'py, T: Precision + Element>(
    py: Python<'py>,
    plan: &PyPlan,
    paths: usize,
    source: &str,
    seed: u64,
    z: Option<PyReadonlyArrayDyn<'py, T>>,
    output: &str,
) -> PyResult<Bound<'py, PyArray3<T>>> {
    let output = crate::bridge::output_of(output)?;
    let plan = plan.plan.clone();
    let src = crate::bridge::source_of(source, seed, &z)?;
    bridge::check_range(&plan, &src, 0, paths).map_err(to_py)?;
    // The output, and the gathered shares of the same size.
    check_alloc("the output and the gathered shares", plan.rows() as u128 * paths as u128 * 2, size_of::<T>() as u128)?;
    let (rows, d) = (plan.steps(), plan.dims());
    let data = with_rank(py, "bridge_generate", |rank, _| {
        Ok(bridge::dist::generate(rank.comm(), backend(rank), &plan, src, paths, output)?)
    })?;
    let arr = Array3::from_shape_vec((rows, d, paths), data)
        .map_err(|e| PyValueError::new_err(format!("output shape: {e}")))?;
    Ok(arr.into_pyarray(py))
}

macro_rules! bridge_fn {
    ($name:ident, $t:ty) => {
        /// Paths (or scaled increments) of a run of `paths` paths, every rank generating its
        /// share: the whole `(N+1, d, paths)` array on every rank.
        #[pyfunction]
        #[pyo3(signature = (plan, paths, source, seed, z, output))]
        fn $name<'py>(
            py: Python<'py>,
            plan: &PyPlan,
            paths: usize,
            source: &str,
            seed: u64,
            z: Option<PyReadonlyArrayDyn<'py, $t>>,
            output: &str,
        ) -> PyResult<Bound<'py, PyArray3<$t>>> {
            bridge_typed(py, plan, paths, source, seed, z, output)
        }
    };
}

bridge_fn!(dist_bridge_generate_f32, f32);
bridge_fn!(dist_bridge_generate_f64, f64);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dist_rank, m)?)?;
    m.add_function(wrap_pyfunction!(dist_finish, m)?)?;
    m.add_function(wrap_pyfunction!(dist_mg_play, m)?)?;
    m.add_function(wrap_pyfunction!(dist_mg_run, m)?)?;
    m.add_function(wrap_pyfunction!(dist_nbody_run_f32, m)?)?;
    m.add_function(wrap_pyfunction!(dist_nbody_run_f64, m)?)?;
    m.add_function(wrap_pyfunction!(dist_bridge_generate_f32, m)?)?;
    m.add_function(wrap_pyfunction!(dist_bridge_generate_f64, m)?)?;
    Ok(())
}
