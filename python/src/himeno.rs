//! `lockstep.himeno`: the benchmark's Jacobi sweeps, pressure as a new `(mi, mj, mk)` array.

use crate::run::{Device, Work, check_alloc, chunked, interruptible, to_py};
use lockstep::himeno::{self, HimenoProblem, gosa_via};
use numpy::ndarray::Array3;
use numpy::{IntoPyArray, PyArray3};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `sweeps` sweeps from the benchmark's initial state, in chunks of sweeps (each chunk starts
/// from the previous chunk's pressure: the same bits as one run). Returns the pressure and the
/// last sweep's gosa (`tree`: the two-level tree, every device; `seq`: the benchmark's
/// sequential sum, CPU only).
fn run_on(device: Device, mut problem: HimenoProblem, sweeps: u32, seq_gosa: bool, stop: &std::sync::atomic::AtomicBool) -> Work<(Vec<f32>, f32)> {
    let mut gosa = 0.0f32;
    chunked(sweeps as u64, stop, |count| {
        let count = count as u32;
        let (p, g) = match device {
            Device::Gpu(gpu) => himeno::Himeno::new(gpu)?.himeno(&problem, count, gosa_via::TREE, (128, 2))?,
            Device::CpuSeq | Device::Cpu => {
                let r = if matches!(device, Device::CpuSeq) {
                    himeno::himeno_seq(&problem, count)?
                } else {
                    himeno::himeno_par(&problem, count)?
                };
                (r.p, if seq_gosa { r.gosa_seq } else { r.gosa_tree })
            }
        };
        problem.p = p;
        gosa = g;
        Ok(())
    })?;
    Ok((problem.p, gosa))
}

#[pyfunction]
#[pyo3(signature = (mi, mj, mk, sweeps, gosa, device))]
fn himeno_run<'py>(
    py: Python<'py>,
    mi: u32,
    mj: u32,
    mk: u32,
    sweeps: u32,
    gosa: &str,
    device: &str,
) -> PyResult<(Bound<'py, PyArray3<f32>>, f32)> {
    let n = HimenoProblem::plane(mi, mj, mk).map_err(to_py)?;
    // 13 planes of the problem, the pressure's two copies during a sweep and gosa's terms.
    check_alloc("the Himeno grid (16 planes of f32)", n as u128 * 16, 4)?;
    let device = Device::parse(py, device)?;
    let seq_gosa = match gosa {
        "tree" => false,
        "seq" if !matches!(device, Device::Gpu(_)) => true,
        "seq" => return Err(PyValueError::new_err("gosa: 'seq' (the benchmark's sequential sum) is CPU only; use 'tree'")),
        g => return Err(PyValueError::new_err(format!("gosa: {g:?} is not 'tree' or 'seq'"))),
    };
    let (p, g) = interruptible(py, |stop| {
        let problem = HimenoProblem::benchmark(mi, mj, mk)?;
        run_on(device, problem, sweeps, seq_gosa, stop)
    })?;
    let arr = Array3::from_shape_vec((mi as usize, mj as usize, mk as usize), p)
        .map_err(|e| PyValueError::new_err(format!("pressure shape: {e}")))?;
    Ok((arr.into_pyarray(py), g))
}

/// `(mi, mj, mk)` of a size name (XS, S, M, L, XL).
#[pyfunction]
fn himeno_grid(name: &str) -> PyResult<(u32, u32, u32)> {
    himeno::grid_of(name).map_err(to_py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(himeno_run, m)?)?;
    m.add_function(wrap_pyfunction!(himeno_grid, m)?)?;
    Ok(())
}
