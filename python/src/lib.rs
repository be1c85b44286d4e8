//! `lockstep._native`: the PyO3 half of lockstep's Python package.
//!
//! The Python modules in `lockstep/` check arguments (types, dtypes, shapes, contiguity) and
//! name them in their errors; the functions here borrow numpy's buffers without copying, run
//! the family's entry function on a worker thread with the GIL released ([`run::interruptible`]:
//! the calling thread polls for Ctrl-C every 50 ms and sets a stop flag the computation checks
//! between chunks), and hand the Rust `Vec` to numpy without copying. Every `lockstep::Error`
//! becomes a Python exception carrying its message ([`run::to_py`]).

mod bridge;
mod dist;
mod histogram;
mod himeno;
mod matmul;
mod mg;
mod nbody;
mod run;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("LockstepError", py.get_type::<run::LockstepError>())?;
    m.add("GpuUnavailableError", py.get_type::<run::GpuUnavailableError>())?;
    m.add_function(wrap_pyfunction!(run::gpu_info, m)?)?;
    m.add_function(wrap_pyfunction!(run::memory_bytes, m)?)?;
    bridge::register(m)?;
    histogram::register(m)?;
    himeno::register(m)?;
    nbody::register(m)?;
    mg::register(m)?;
    matmul::register(m)?;
    dist::register(m)?;
    Ok(())
}
