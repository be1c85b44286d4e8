//! What every family shares: the device choice, the error mapping, the memory check and the
//! interruptible run on a worker thread.

use lockstep::{Backend, Error, Gpu};
use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

pyo3::create_exception!(lockstep, LockstepError, PyRuntimeError, "A lockstep computation failed (a CUDA call, the PTX module, …).");
pyo3::create_exception!(
    lockstep,
    GpuUnavailableError,
    LockstepError,
    "No GPU: no CUDA driver library, or no usable device. The CPU twins still run."
);

/// The process's one GPU, opened on first use (the embedded PTX module is JIT-compiled then).
static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();

fn gpu(py: Python<'_>) -> Result<&'static Gpu, &'static str> {
    py.allow_threads(|| GPU.get_or_init(|| Gpu::new().map_err(|e| e.to_string())))
        .as_ref()
        .map_err(String::as_str)
}

/// Where a call runs, from the Python `device=` argument.
#[derive(Clone, Copy)]
pub enum Device {
    CpuSeq,
    Cpu,
    Gpu(&'static Gpu),
}

impl Device {
    /// `"auto"` (the GPU when there is one, else every CPU thread), `"cpu"`, `"cpu-seq"`
    /// (one thread) or `"gpu"` (a [`GpuUnavailableError`] without one).
    pub fn parse(py: Python<'_>, name: &str) -> PyResult<Device> {
        match name {
            "cpu" => Ok(Device::Cpu),
            "cpu-seq" => Ok(Device::CpuSeq),
            "gpu" => gpu(py).map(Device::Gpu).map_err(|e| GpuUnavailableError::new_err(e.to_string())),
            "auto" => Ok(gpu(py).map_or(Device::Cpu, Device::Gpu)),
            other => Err(PyValueError::new_err(format!(
                "device: {other:?} is not one of 'auto', 'cpu', 'cpu-seq', 'gpu'"
            ))),
        }
    }

    pub fn backend(self) -> Backend<'static> {
        match self {
            Device::CpuSeq => Backend::CpuSeq,
            Device::Cpu => Backend::Cpu,
            Device::Gpu(g) => Backend::Gpu(g),
        }
    }
}

/// A Rust error as a Python exception with the Rust message: bad input (`InvalidInput`,
/// `LengthMismatch`, `TooLarge`, a refused or unwritable `Checkpoint`) is a `ValueError`; no
/// driver or device a [`GpuUnavailableError`]; anything else a [`LockstepError`].
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::InvalidInput { .. }
        | Error::LengthMismatch { .. }
        | Error::TooLarge { .. }
        | Error::Checkpoint { .. } => PyValueError::new_err(msg),
        Error::NoDriver { .. } | Error::NoDevice { .. } => GpuUnavailableError::new_err(msg),
        _ => LockstepError::new_err(msg),
    }
}

/// What a worker returns: a Rust error, or "stopped" (Ctrl-C).
pub enum Fail {
    Rust(Error),
    Stopped,
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Rust(e)
    }
}

pub type Work<T> = Result<T, Fail>;

/// This machine's physical memory in bytes (Linux `/proc/meminfo`), if known.
fn physical_memory() -> Option<u128> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The physical memory the size checks compare against (0 when unknown).
#[pyfunction]
pub fn memory_bytes() -> u128 {
    physical_memory().unwrap_or(0)
}

/// Refuses, before anything is allocated, a result of `count` elements of `elem` bytes that
/// could not fit this machine's memory (a `MemoryError` naming `what`), so a huge size is an
/// exception rather than an aborted process.
pub fn check_alloc(what: &str, count: u128, elem: u128) -> PyResult<()> {
    let bytes = count.saturating_mul(elem);
    let limit = physical_memory().unwrap_or(isize::MAX as u128).min(isize::MAX as u128);
    if bytes > limit {
        return Err(PyMemoryError::new_err(format!(
            "{what} would need {bytes} bytes, more than this machine's {limit} bytes of memory; refused before allocating"
        )));
    }
    Ok(())
}

/// Runs `work` on a worker thread with the GIL released. The calling thread wakes every 50 ms
/// to run Python's signal handlers; when one raises (Ctrl-C: `KeyboardInterrupt`), it sets the
/// stop flag that `work` checks between chunks, waits for the worker to return, and raises.
pub fn interruptible<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&AtomicBool) -> Work<T> + Send,
{
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (tx, mut rx) = sync_channel::<()>(1);
        let stop = &stop;
        let handle = scope.spawn(move || {
            let out = work(stop);
            let _ = tx.send(());
            out
        });
        let mut interrupt = None;
        loop {
            let (got, back) = py.allow_threads(move || (rx.recv_timeout(Duration::from_millis(50)), rx));
            rx = back;
            match got {
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        stop.store(true, Ordering::Relaxed);
                        interrupt = Some(e);
                        break;
                    }
                }
                _ => break,
            }
        }
        let joined = py.allow_threads(move || handle.join());
        if let Some(e) = interrupt {
            return Err(e);
        }
        match joined {
            Ok(out) => settle(out),
            Err(panic) => {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Err(LockstepError::new_err(format!("lockstep's worker thread panicked: {why}")))
            }
        }
    })
}

/// The Python outcome of a computation's result.
fn settle<T>(out: Work<T>) -> PyResult<T> {
    match out {
        Ok(v) => Ok(v),
        Err(Fail::Rust(e)) => Err(to_py(e)),
        Err(Fail::Stopped) => Err(PyKeyboardInterrupt::new_err("stopped")),
    }
}

/// As [`interruptible`] for a computation that is one GPU pass on `device` (it cannot stop
/// half-way): on the GPU it runs on the calling thread with the GIL released — no worker thread,
/// so no per-thread CUDA set-up on every call — and Ctrl-C is seen when it returns; on the CPU
/// it is [`interruptible`].
pub fn single_pass<T, F>(py: Python<'_>, device: Device, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&AtomicBool) -> Work<T> + Send,
{
    match device {
        Device::Gpu(_) => settle(py.allow_threads(move || work(&AtomicBool::new(false)))),
        _ => interruptible(py, work),
    }
}

/// Runs `total` units of work as `step(count)` calls, growing the chunk while a chunk takes
/// less than 100 ms (so a long run checks `stop` about every 0.1–0.2 s and a short one makes
/// few calls). Used where running `a` then `b` units has the same bits as `a + b` at once.
pub fn chunked(total: u64, stop: &AtomicBool, mut step: impl FnMut(u64) -> Work<()>) -> Work<()> {
    let mut done = 0u64;
    let mut chunk = 1u64;
    while done < total {
        if stop.load(Ordering::Relaxed) {
            return Err(Fail::Stopped);
        }
        let count = chunk.min(total - done);
        let t = Instant::now();
        step(count)?;
        done += count;
        if t.elapsed() < Duration::from_millis(100) {
            chunk = chunk.saturating_mul(2);
        }
    }
    Ok(())
}

/// The GPU (name, memory, compute capability, the loaded module) and the embedded device code, as a dict;
/// `available` is False (with the reason) when there is none.
#[pyfunction]
pub fn gpu_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ptx_arch", lockstep::ptx::ARCH)?;
    d.set_item("kernels", lockstep::ptx::KERNELS.len())?;
    match gpu(py) {
        Ok(g) => {
            d.set_item("available", true)?;
            d.set_item("name", g.name())?;
            d.set_item("ordinal", g.ordinal())?;
            let (free, total) = g.memory_info().map_err(to_py)?;
            d.set_item("memory_free", free)?;
            d.set_item("memory_total", total)?;
            use cust::device::DeviceAttribute as A;
            let major = g.attribute(A::ComputeCapabilityMajor).map_err(to_py)?;
            let minor = g.attribute(A::ComputeCapabilityMinor).map_err(to_py)?;
            d.set_item("compute_capability", (major, minor))?;
            // which embedded image the GPU loaded (`sm_90 cubin`, `sm_70 PTX`) and how long it took
            d.set_item("module", g.loaded().what.clone())?;
            d.set_item("module_load_ms", g.loaded().load_time.as_secs_f64() * 1e3)?;
        }
        Err(reason) => {
            d.set_item("available", false)?;
            d.set_item("reason", reason)?;
        }
    }
    Ok(d)
}
