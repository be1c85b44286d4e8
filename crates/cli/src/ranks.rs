//! A family command run as one rank of a launched run (`lockstep run --gpus N <family> …`,
//! `mpirun`, `srun`): joining it, the rank's backend, timing between barriers, and the lines
//! rank 0 prints. Every rank computes its share; rank 0 alone reports and writes files.
//!
//! Rank 0's summary line is the same in every family and machine-read by
//! `scripts/multi-gpu-check.sh`: `ranks: K, place: …, transport: …, bits: <sha256>,
//! seconds: T` — `bits` is the SHA-256 of the result's bits (the same on any number of ranks,
//! and on the CPU), `seconds` the wall time of the computation between two barriers.

use crate::common::Device;
use anyhow::Result;
use lockstep::Backend;
use lockstep::dist::{Place, Rank};
use sha2::{Digest, Sha256};

/// Joins the run this process was launched into (`None`: a plain run). The place: the
/// launcher's `LOCKSTEP_DEVICE` (`gpu`/`cpu`, set by `lockstep run --gpus/--ranks`), else
/// `--device` (`auto`: the GPU when one is visible). When another rank dies, this rank prints
/// one `error:` line and exits with status 3 (its main thread may be blocked in a GPU call).
pub fn join(device: Device) -> Result<Option<Rank>> {
    let place = match std::env::var("LOCKSTEP_DEVICE").ok().as_deref() {
        Some("gpu") => Place::Gpu,
        Some("cpu") => Place::Cpu,
        _ => match device {
            Device::Gpu => Place::Gpu,
            Device::Cpu => Place::Cpu,
            Device::Auto => {
                if lockstep::gpu::device_count().is_ok_and(|c| c > 0) {
                    Place::Gpu
                } else {
                    Place::Cpu
                }
            }
        },
    };
    Ok(lockstep::dist::join(place, |why| {
        eprintln!("error: {why}");
        std::process::exit(3);
    })?)
}

/// The rank's backend: its GPU, else the CPU twin on every core.
pub fn backend(rank: &Rank) -> Backend<'_> {
    match rank.gpu() {
        Some(gpu) => Backend::Gpu(gpu),
        None => Backend::Cpu,
    }
}

/// Where the rank computes, in words.
pub fn place(rank: &Rank) -> String {
    rank.gpu().map_or_else(|| "CPU".to_string(), |g| g.name().to_string())
}

/// `work` between two barriers, with its wall time on this rank (every rank's equals the
/// slowest rank's, give or take the barrier).
pub fn timed<T>(rank: &Rank, work: impl FnOnce() -> Result<T>) -> Result<(T, f64)> {
    rank.comm().barrier()?;
    let t0 = std::time::Instant::now();
    let out = work()?;
    if let Some(gpu) = rank.gpu() {
        gpu.synchronize()?;
    }
    rank.comm().barrier()?;
    Ok((out, t0.elapsed().as_secs_f64()))
}

/// The SHA-256 of values' little-endian bytes, in hex.
pub fn sha256<I: IntoIterator<Item = B>, B: AsRef<[u8]>>(parts: I) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_ref());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Rank 0's summary line (see the module docs); nothing on other ranks.
pub fn summary(rank: &Rank, family: &str, what: &str, bits: &str, seconds: f64) {
    if rank.comm().rank() == 0 {
        println!(
            "{family} {what}: ranks: {}, place: {}, transport: {}, bits: {bits}, seconds: {seconds:.4}",
            rank.comm().size(),
            place(rank),
            rank.transport()
        );
    }
}

/// The path digest of paths `first..first + count` (`values` is `[row][count]`): the wrapping
/// sum over the paths of a hash of the path's index and its values' bits, in row order. Sums
/// of disjoint ranges add up, so ranks all-reduce their digests into the run's, whatever the
/// split (a cheap, order-free identity of a run too large to gather; not cryptographic).
pub fn path_digest<T: Copy + Into<f64> + Send + Sync>(values: &[T], rows: usize, count: usize, first: u64) -> u64 {
    use rayon::prelude::*;
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h: Vec<u64> = (0..count as u64).map(|j| (first + j).wrapping_mul(K) ^ 0x5bd1_e995).collect();
    for r in 0..rows {
        let row = &values[r * count..(r + 1) * count];
        h.par_iter_mut().zip(row.par_iter()).for_each(|(h, &v)| {
            let x = (*h ^ v.into().to_bits()).wrapping_mul(K);
            *h = x ^ (x >> 29);
        });
    }
    h.into_par_iter().map(|x| x.wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 31)).reduce(|| 0, u64::wrapping_add)
}
