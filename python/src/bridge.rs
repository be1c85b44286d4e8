//! `lockstep.bridge`: a reusable [`Plan`] and generation into a new `(N+1, d, paths)` array.

use crate::run::{Device, Fail, Work, check_alloc, single_pass, to_py};
use lockstep::bridge::{self, BridgeSpec, Noise, Output, Plan, Precision, Source};
use numpy::ndarray::Array3;
use numpy::{Element, IntoPyArray, PyArray3, PyReadonlyArrayDyn};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// A validated Brownian-bridge problem with its construction strategy (Rust `bridge::Plan`).
#[pyclass(name = "_Plan", module = "lockstep._native", frozen)]
pub struct PyPlan {
    pub(crate) plan: Arc<Plan>,
}

#[pymethods]
impl PyPlan {
    #[new]
    #[pyo3(signature = (t0, times, t_end, order, start, cov=None, chol=None))]
    fn new(
        t0: f64,
        times: Vec<f64>,
        t_end: f64,
        order: Vec<usize>,
        start: Vec<f64>,
        cov: Option<Vec<f64>>,
        chol: Option<Vec<f64>>,
    ) -> PyResult<Self> {
        let noise = match (cov, chol) {
            (Some(c), None) => Noise::Covariance(c),
            (None, Some(c)) => Noise::Cholesky(c),
            _ => return Err(PyValueError::new_err("give exactly one of cov and chol")),
        };
        let spec = BridgeSpec { t0, times, t_end, order, start, noise };
        Ok(PyPlan { plan: Arc::new(Plan::new(&spec).map_err(to_py)?) })
    }

    /// Rows of the output: N + 1 (t1..tN and T).
    #[getter]
    fn steps(&self) -> usize {
        self.plan.steps()
    }
    /// The dimension d.
    #[getter]
    fn dims(&self) -> usize {
        self.plan.dims()
    }
    /// Normals per path: (N + 1)·d.
    #[getter]
    fn rows(&self) -> usize {
        self.plan.rows()
    }
    /// Stack slots of the strategy.
    #[getter]
    fn stack_slots(&self) -> usize {
        self.plan.stack_slots()
    }
    /// The time grid t0, t1, …, tN, T.
    #[getter]
    fn grid(&self) -> Vec<f64> {
        self.plan.grid().to_vec()
    }
    /// The construction order (1-based time indices).
    #[getter]
    fn order(&self) -> Vec<usize> {
        self.plan.order().to_vec()
    }
}

pub(crate) fn output_of(output: &str) -> PyResult<Output> {
    match output {
        "paths" => Ok(Output::Paths),
        "increments" => Ok(Output::Increments),
        o => Err(PyValueError::new_err(format!("output: {o:?} is not 'paths' or 'increments'"))),
    }
}

/// Which normals, without the buffer (that is borrowed separately).
#[derive(Clone, Copy)]
enum Kind {
    Philox(u64),
    PhiloxBm(u64),
    Sobol(u32),
    Buffer,
}

fn kind_of(source: &str, seed: u64) -> PyResult<Kind> {
    match source {
        "philox" => Ok(Kind::Philox(seed)),
        "philox-bm" => Ok(Kind::PhiloxBm(seed)),
        "sobol" => u32::try_from(seed)
            .map(Kind::Sobol)
            .map_err(|_| PyValueError::new_err(format!("seed: {seed} is past 2^32 - 1 (Sobol's point index)"))),
        "buffer" => Ok(Kind::Buffer),
        s => Err(PyValueError::new_err(format!("source: {s:?} is not 'philox', 'philox-bm', 'sobol' or an ndarray"))),
    }
}

/// The normals `source` names (`"buffer"`: the array `z`, borrowed, C-contiguous), for every
/// binding that generates (here and the runs over ranks of `dist.rs`).
pub(crate) fn source_of<'a, T: Element>(
    source: &str,
    seed: u64,
    z: &'a Option<PyReadonlyArrayDyn<'_, T>>,
) -> PyResult<Source<'a, T>> {
    Ok(match (kind_of(source, seed)?, z) {
        (Kind::Philox(seed), _) => Source::Philox { seed },
        (Kind::PhiloxBm(seed), _) => Source::PhiloxBoxMuller { seed },
        (Kind::Sobol(offset), _) => Source::Sobol { offset },
        (Kind::Buffer, Some(z)) => {
            Source::Buffer(z.as_slice().map_err(|_| PyValueError::new_err("source: not C-contiguous"))?)
        }
        (Kind::Buffer, None) => return Err(PyValueError::new_err("source 'buffer' needs the array `z`")),
    })
}

/// Paths `first..first + paths` of the run (`first = 0`: a whole run), the bits a one-shot run
/// gives them.
fn generate_on<T: Precision>(
    device: Device,
    plan: &Plan,
    source: Source<'_, T>,
    first: u64,
    paths: usize,
    output: Output,
    stop: &AtomicBool,
) -> Work<Vec<T>> {
    match device {
        Device::Cpu => bridge::generate_range_par_stoppable(plan, source, first, paths, output, |_, _| {}, stop)?
            .ok_or(Fail::Stopped),
        // One thread and the GPU: one call each (not stopped mid-way; see the docstring).
        d => Ok(bridge::generate_range(d.backend(), plan, source, first, paths, output)?),
    }
}

#[allow(clippy::too_many_arguments)]
fn generate_typed<'py, T: Precision + Element>(
    py: Python<'py>,
    plan: &PyPlan,
    paths: usize,
    source: &str,
    seed: u64,
    z: Option<PyReadonlyArrayDyn<'py, T>>,
    output: &str,
    device: &str,
    first: u64,
) -> PyResult<Bound<'py, PyArray3<T>>> {
    let output = output_of(output)?;
    let plan = plan.plan.clone();
    let (rows, d) = (plan.steps(), plan.dims());
    let src = source_of(source, seed, &z)?;
    bridge::check_range(&plan, &src, first, paths).map_err(to_py)?;
    check_alloc("the output ((N+1)·d·paths values)", plan.rows() as u128 * paths as u128, size_of::<T>() as u128)?;
    let device = Device::parse(py, device)?;
    let data = single_pass(py, device, |stop| generate_on(device, &plan, src, first, paths, output, stop))?;
    let arr = Array3::from_shape_vec((rows, d, paths), data)
        .map_err(|e| PyValueError::new_err(format!("output shape: {e}")))?;
    Ok(arr.into_pyarray(py))
}

/// Paths (or scaled increments) `first..first + paths` of a run as a new `(N+1, d, paths)`
/// array of float32.
#[pyfunction]
#[pyo3(signature = (plan, paths, source, seed, z, output, device, first=0))]
#[allow(clippy::too_many_arguments)]
fn bridge_generate_f32<'py>(
    py: Python<'py>,
    plan: &PyPlan,
    paths: usize,
    source: &str,
    seed: u64,
    z: Option<PyReadonlyArrayDyn<'py, f32>>,
    output: &str,
    device: &str,
    first: u64,
) -> PyResult<Bound<'py, PyArray3<f32>>> {
    generate_typed(py, plan, paths, source, seed, z, output, device, first)
}

/// Paths (or scaled increments) `first..first + paths` of a run as a new `(N+1, d, paths)`
/// array of float64.
#[pyfunction]
#[pyo3(signature = (plan, paths, source, seed, z, output, device, first=0))]
#[allow(clippy::too_many_arguments)]
fn bridge_generate_f64<'py>(
    py: Python<'py>,
    plan: &PyPlan,
    paths: usize,
    source: &str,
    seed: u64,
    z: Option<PyReadonlyArrayDyn<'py, f64>>,
    output: &str,
    device: &str,
    first: u64,
) -> PyResult<Bound<'py, PyArray3<f64>>> {
    generate_typed(py, plan, paths, source, seed, z, output, device, first)
}

/// Seconds of `repeats` calls of `lockstep::bridge::generate` (Philox normals) with no Python
/// in between: the Rust side of the overhead benchmark.
#[pyfunction]
#[pyo3(signature = (plan, paths, precision, seed, output, device, repeats))]
#[allow(clippy::too_many_arguments)]
fn _rust_timing_bridge(
    py: Python<'_>,
    plan: &PyPlan,
    paths: usize,
    precision: &str,
    seed: u64,
    output: &str,
    device: &str,
    repeats: usize,
) -> PyResult<Vec<f64>> {
    let output = output_of(output)?;
    let backend = Device::parse(py, device)?.backend();
    let plan = plan.plan.clone();
    py.allow_threads(move || {
        let mut times = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let t = Instant::now();
            let n = match precision {
                "f32" => {
                    bridge::generate::<f32>(backend, &plan, Source::Philox { seed }, paths, output).map(|v| v.len())
                }
                _ => bridge::generate::<f64>(backend, &plan, Source::Philox { seed }, paths, output).map(|v| v.len()),
            }
            .map_err(to_py)?;
            times.push(t.elapsed().as_secs_f64());
            std::hint::black_box(n);
        }
        Ok(times)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPlan>()?;
    m.add_function(wrap_pyfunction!(bridge_generate_f32, m)?)?;
    m.add_function(wrap_pyfunction!(bridge_generate_f64, m)?)?;
    m.add_function(wrap_pyfunction!(_rust_timing_bridge, m)?)?;
    Ok(())
}
