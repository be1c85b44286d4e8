//! `lockstep.mg`: the Minority Game's averaged winner ratio, its checksum and a small game's
//! trace.

use crate::run::{Device, Fail, check_alloc, interruptible, to_py};
use lockstep::mg::{self, Engine, MgParams, RunState, Schedule, Trace};
use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The most bytes a trace may take (tables, used tables, draws): small games only.
const MAX_TRACE_BYTES: u128 = 1 << 28;

/// Winner counts summed over trials `first..first + trials` (integers: the same on every
/// device and for any chunking). CPU: trials in chunks of the rayon pool's width, the stop flag
/// checked between chunks.
fn winner_sums(
    device: Device,
    params: &MgParams,
    seed: u32,
    first: u64,
    trials: u64,
    stop: &AtomicBool,
) -> Result<Vec<u64>, Fail> {
    let mut sum = vec![0u64; params.p as usize];
    let add = |sum: &mut Vec<u64>, w: Vec<u64>| sum.iter_mut().zip(w).for_each(|(s, w)| *s += w);
    match device {
        Device::Gpu(gpu) => {
            for (outcome, _) in mg::Mg::new(gpu)?.play_standalone(params, seed, first, trials, None, false)? {
                add(&mut sum, outcome.winners(params.n));
            }
        }
        Device::CpuSeq | Device::Cpu => {
            let width = if matches!(device, Device::Cpu) { rayon::current_num_threads() as u64 } else { 1 };
            let mut next = first;
            let end = first + trials;
            while next < end {
                if stop.load(Ordering::Relaxed) {
                    return Err(Fail::Stopped);
                }
                let upto = end.min(next + width);
                let play = |tr: u64| mg::play(params, seed, tr, None, false).map(|(o, _)| o.winners(params.n));
                let parts: Vec<Vec<u64>> = if width > 1 {
                    (next..upto).into_par_iter().map(play).collect::<lockstep::Result<_>>()?
                } else {
                    (next..upto).map(play).collect::<lockstep::Result<_>>()?
                };
                parts.into_iter().for_each(|w| add(&mut sum, w));
                next = upto;
            }
        }
    }
    Ok(sum)
}

/// Winner sums with checkpoints (`lockstep::mg::run_resumable`: trials in order, each game's
/// groups on rayon's pool or the GPU's standalone model), from the start or the `resume` file;
/// Ctrl-C writes the checkpoint, then raises `KeyboardInterrupt`.
#[allow(clippy::too_many_arguments)]
fn resumable_sums(
    device: Device,
    params: &MgParams,
    seed: u32,
    first: u64,
    trials: u64,
    checkpoint: Option<&Path>,
    every: u64,
    resume: Option<&Path>,
    stop: &AtomicBool,
) -> Result<Vec<u64>, Fail> {
    let mut state = match resume {
        Some(file) => RunState::load(file, params, seed, first, trials, &[])?,
        None => RunState::start(params, seed, first, trials)?,
    };
    let schedule = Schedule { checkpoint: checkpoint.or(resume), every, extra: &[], stop: Some(stop) };
    let ended = match device {
        Device::Gpu(gpu) => {
            let mg = mg::Mg::new(gpu)?;
            mg::run_resumable(Engine::GpuStandalone(&mg), &mut state, &schedule, |_| {})?
        }
        Device::Cpu => mg::run_resumable(Engine::Cpu { parallel: true }, &mut state, &schedule, |_| {})?,
        Device::CpuSeq => mg::run_resumable(Engine::Cpu { parallel: false }, &mut state, &schedule, |_| {})?,
    };
    match ended {
        mg::Ended::Finished => Ok(state.sums),
        mg::Ended::Stopped { .. } => Err(Fail::Stopped),
    }
}

fn trace_dict<'py>(py: Python<'py>, t: Trace) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("winners", t.winners.into_pyarray(py))?;
    d.set_item("history", t.history.into_pyarray(py))?;
    d.set_item("tables", t.tables.into_pyarray(py))?;
    d.set_item("used", t.used.into_pyarray(py))?;
    let draws: Vec<Bound<'py, PyArray1<u32>>> = t.draws.into_iter().map(|v| v.into_pyarray(py)).collect();
    d.set_item("draws", draws)?;
    d.set_item("ones", t.outcome.ones.into_pyarray(py))?;
    d.set_item("h0", t.outcome.h0)?;
    Ok(d)
}

/// `(ratio, checksum, sums, trace)`: the winner ratio per step averaged over the trials, the
/// CLI's checksum of the summed winner counts, the sums, and (with `trace`) trial `first`'s
/// trace on the CPU.
#[pyfunction]
#[pyo3(signature = (n, m, s, p, trials, groups, seed, first, trace, device, checkpoint=None, checkpoint_every=None, resume=None))]
#[allow(clippy::too_many_arguments)]
#[allow(clippy::type_complexity)]
fn mg_run<'py>(
    py: Python<'py>,
    n: u64,
    m: u32,
    s: u32,
    p: u32,
    trials: u64,
    groups: u64,
    seed: u32,
    first: u64,
    trace: bool,
    device: &str,
    checkpoint: Option<PathBuf>,
    checkpoint_every: Option<u64>,
    resume: Option<PathBuf>,
) -> PyResult<(Bound<'py, PyArray1<f64>>, u64, Bound<'py, PyArray1<u64>>, Option<Bound<'py, PyDict>>)> {
    let params = mg::validate(n, m, s, p, groups).map_err(to_py)?;
    if trials == 0 || first.checked_add(trials).is_none() {
        return Err(PyValueError::new_err(format!(
            "invalid trials: first = {first}, trials = {trials}: need 1 or more trials ending at most at 2^64 - 1"
        )));
    }
    let per_agent = params.s as u128 * (params.words as u128 + 1) * 4;
    let games = (rayon::current_num_threads() as u128).min(trials as u128);
    check_alloc("the games played at once (agents × tables)", n as u128 * games, per_agent)?;
    if trace {
        let bytes = n as u128 * (per_agent + p as u128 * 5);
        if bytes > MAX_TRACE_BYTES {
            return Err(PyValueError::new_err(format!(
                "trace: a trace of this game takes about {bytes} bytes; traces are for small games (at most {MAX_TRACE_BYTES})"
            )));
        }
    }
    let device = Device::parse(py, device)?;
    let (sum, tr) = interruptible(py, |stop| {
        let sum = if checkpoint.is_some() || resume.is_some() {
            let every = checkpoint_every.unwrap_or(0);
            resumable_sums(device, &params, seed, first, trials, checkpoint.as_deref(), every, resume.as_deref(), stop)?
        } else {
            winner_sums(device, &params, seed, first, trials, stop)?
        };
        let tr = if trace { mg::play(&params, seed, first, None, true)?.1 } else { None };
        Ok((sum, tr))
    })?;
    let ratio = mg::winner_ratio(&sum, n, trials);
    let checksum = sum.iter().fold(0u64, |h, &v| h.rotate_left(7) ^ v);
    let tr = tr.map(|t| trace_dict(py, t)).transpose()?;
    Ok((ratio.into_pyarray(py), checksum, sum.into_pyarray(py), tr))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mg_run, m)?)?;
    Ok(())
}
