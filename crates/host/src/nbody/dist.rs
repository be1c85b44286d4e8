//! N-body split over ranks: rank `r` integrates bodies `r·c .. min(N, (r+1)·c)` with
//! `c = ceil(N / ranks)` ([`crate::dist::split_padded`]) and the ranks all-gather the stage
//! positions before every force evaluation (four all-gathers per RK4 step: the step's start
//! positions and the three stage positions; on the device in stream order when the ranks are
//! GPUs joined by NCCL, else through the host). Each body's acceleration still sums every body
//! in the same order with the same operations — split over `2^split_shift(N)` lanes of the
//! *global* N, the GPU ranks launching `nbody_split_*` with their `first..first + count` when
//! that is more than one lane — so a run on any number of ranks has the bits of the one-rank
//! run and of the CPU twin. Exact mode only (the bit-exact promise is the point of
//! splitting this way).

use super::cpu::{put, v4};
use super::problem::{Method, NbodyFloat, Params, System, validate};
use crate::Backend;
use crate::dist::{Communicator, Split, all_gather_into, broadcast, split_padded};
use crate::error::{Error, Result};
use lockstep_shared::nbody::{MAX_SPLIT_SHIFT, Rk4, STAGES, V4, accel_split, combine, split_shift, stage_position};
use rayon::prelude::*;

/// `steps` exact RK4 steps of `s` by every rank of `comm` on `backend` (the GPU: `method`'s rank
/// kernels), each rank integrating its share of the bodies; on return every rank's `s` holds
/// the whole system. Rank 0's system is broadcast first, so the ranks start from the same bits.
/// Errors: what [`validate`] refuses; a system whose shape differs between ranks; a collective
/// that fails (a rank left).
pub fn run<T: NbodyFloat>(
    comm: &dyn Communicator,
    backend: Backend<'_>,
    method: Method,
    p: &Params<T>,
    s: &mut System<T>,
    steps: u64,
) -> Result<()> {
    run_split(comm, backend, method, p, s, steps, split_shift(s.len().min(u32::MAX as usize) as u32))
}

/// As [`run`] with every pair sum split over `2^shift` lanes (0 ≤ shift ≤ 5) instead of
/// `2^split_shift(N)`: the multi-rank twin of `Nbody::with_split_shift` and
/// [`super::run_seq_split`] (for tests of each split's kernels).
pub fn run_split<T: NbodyFloat>(
    comm: &dyn Communicator,
    backend: Backend<'_>,
    method: Method,
    p: &Params<T>,
    s: &mut System<T>,
    steps: u64,
    shift: u32,
) -> Result<()> {
    if shift > MAX_SPLIT_SHIFT {
        return Err(Error::InvalidInput {
            what: "split shift",
            why: format!("{shift}: use 0 to {MAX_SPLIT_SHIFT} (1 to 32 lanes per body)"),
        });
    }
    validate(p, s)?;
    let mut shape = [s.len() as u64];
    broadcast(comm, 0, &mut shape)?;
    if shape[0] != s.len() as u64 {
        return Err(Error::InvalidInput {
            what: "bodies",
            why: format!("rank {} has {} bodies, rank 0 has {}", comm.rank(), s.len(), shape[0]),
        });
    }
    broadcast(comm, 0, &mut s.pos)?;
    broadcast(comm, 0, &mut s.vel)?;
    let split = split_padded(s.len() as u64, comm.size(), comm.rank());
    match backend {
        Backend::CpuSeq | Backend::Cpu => run_cpu(comm, matches!(backend, Backend::Cpu), p, s, steps, &split, shift),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => gpu::run(comm, gpu, method, p, s, steps, &split, shift),
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => {
            let _ = method;
            match gpu.never {}
        }
    }
}

/// The whole system's bodies from every rank's padded piece (`piece` bodies, `len` of them
/// real), as `V4`s; `mine` is this rank's piece.
fn gather<T: NbodyFloat>(comm: &dyn Communicator, mine: &[V4<T>], all: &mut Vec<V4<T>>) -> Result<()> {
    let flat: Vec<T> = mine.iter().flat_map(|b| [b.x, b.y, b.z, b.w]).collect();
    let mut out = vec![T::ZERO; flat.len() * comm.size()];
    all_gather_into(comm, &flat, &mut out)?;
    all.clear();
    all.extend(out.chunks_exact(4).map(|c| V4 { x: c[0], y: c[1], z: c[2], w: c[3] }));
    Ok(())
}

fn run_cpu<T: NbodyFloat>(
    comm: &dyn Communicator,
    par: bool,
    p: &Params<T>,
    s: &mut System<T>,
    steps: u64,
    split: &Split,
    shift: u32,
) -> Result<()> {
    let n = s.len();
    let (g, eps2, c) = (p.g, p.eps2(), Rk4::new(p.dt));
    let (first, len, piece) = (split.range.start as usize, split.len() as usize, split.piece as usize);
    let zero = V4::new(T::ZERO, T::ZERO, T::ZERO, T::ZERO);
    let mut x: Vec<V4<T>> = (0..piece).map(|i| if i < len { v4(&s.pos, first + i) } else { zero }).collect();
    let mut v: Vec<V4<T>> = (0..piece).map(|i| if i < len { v4(&s.vel, first + i) } else { zero }).collect();
    let mut src = Vec::new();
    for _ in 0..steps {
        gather(comm, &x, &mut src)?;
        let mut kv: Vec<Vec<V4<T>>> = Vec::with_capacity(4);
        for stage in 0..STAGES {
            let accel = |t: usize| {
                let i = first + t;
                if t < len {
                    accel_split(i as u32, src[i], n as u32, shift, |j| src[j as usize], eps2, g)
                } else {
                    zero
                }
            };
            let a: Vec<V4<T>> =
                if par { (0..piece).into_par_iter().map(accel).collect() } else { (0..piece).map(accel).collect() };
            if stage < 3 {
                let before = if stage >= 1 { &kv[stage as usize - 1] } else { &a };
                let next: Vec<V4<T>> =
                    (0..piece).map(|t| stage_position(stage + 1, x[t], v[t], before[t], c)).collect();
                gather(comm, &next, &mut src)?;
            }
            kv.push(a);
        }
        for t in 0..len {
            let (x1, v1) = combine(x[t], v[t], [kv[0][t], kv[1][t], kv[2][t], kv[3][t]], c);
            x[t] = x1;
            v[t] = v1;
        }
    }
    let mut all = Vec::new();
    gather(comm, &x, &mut all)?;
    (0..n).for_each(|i| put(&mut s.pos, i, all[i]));
    gather(comm, &v, &mut all)?;
    (0..n).for_each(|i| put(&mut s.vel, i, all[i]));
    Ok(())
}

#[cfg(feature = "gpu")]
mod gpu {
    use super::super::gpu::{SplitStage, split_kernel};
    use super::super::problem::Mode;
    use super::*;
    use crate::error::cuda;
    use crate::gpu::{Gpu, upload, zeroed};
    use crate::kernel::Kernel;
    use crate::launch::Grid1d;
    use cust::memory::{CopyDestination, DeviceBuffer, DevicePointer};

    /// `(n, first, count, stage, g, eps2, h, src, x, v, k, dst)`: one stage of a rank's bodies.
    type RankStage<'g, T> = Kernel<
        'g,
        (
            u32,
            u32,
            u32,
            u32,
            T,
            T,
            T,
            DevicePointer<T>,
            DevicePointer<T>,
            DevicePointer<T>,
            DevicePointer<T>,
            DevicePointer<T>,
        ),
    >;

    fn kernel_name(method: Method, float: &str) -> &'static str {
        match (method, float) {
            (Method::Global, "f32") => "nbody_rank_global_f32",
            (Method::Global, _) => "nbody_rank_global_f64",
            (Method::Shared, "f32") => "nbody_rank_shared_f32",
            (Method::Shared, _) => "nbody_rank_shared_f64",
        }
    }

    /// Gathers every rank's `piece` bodies at `send` into `all` (`size·piece` bodies).
    fn gather_device<T: NbodyFloat>(
        comm: &dyn Communicator,
        gpu: &Gpu,
        send: &DeviceBuffer<T>,
        piece: usize,
        all: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let bytes = 4 * piece * size;
        match comm.device() {
            Some(dev) => {
                // SAFETY: `send` holds `piece` bodies, `all` `size·piece`; separate allocations,
                // both alive until the caller's final synchronisation.
                unsafe { dev.all_gather(gpu, send.as_device_ptr().as_raw(), all.as_device_ptr().as_raw(), bytes) }
            }
            None => {
                gpu.synchronize()?;
                let mut mine = vec![T::ZERO; 4 * piece];
                send.copy_to(&mut mine[..]).map_err(cuda("cuMemcpyDtoH"))?;
                let mut host = vec![T::ZERO; 4 * piece * comm.size()];
                all_gather_into(comm, &mine, &mut host)?;
                all.copy_from(&host[..]).map_err(cuda("cuMemcpyHtoD"))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn run<T: NbodyFloat>(
        comm: &dyn Communicator,
        gpu: &Gpu,
        method: Method,
        p: &Params<T>,
        s: &mut System<T>,
        steps: u64,
        split: &Split,
        shift: u32,
    ) -> Result<()> {
        let n = s.len();
        let (first, len, piece) = (split.range.start as usize, split.len() as usize, split.piece as usize);
        let total = piece * comm.size();
        let need = (28 * piece as u64 + 8 * total as u64) * std::mem::size_of::<T>() as u64;
        let (free, _) = gpu.memory_info()?;
        crate::launch::ensure_fits("device memory needed for this rank's bodies (bytes)", need, free as u64)?;
        let f: RankStage<'_, T> = gpu.kernel(kernel_name(method, T::NAME))?;
        // The split and its order come from the global N (the one-GPU run's), via `shift`.
        let fs: SplitStage<'_, T> = split_kernel::<T>(gpu, Mode::Exact)?;
        gpu.bind()?;
        let max = if shift > 0 { fs.max_threads()? } else { f.max_threads()? };
        let block = (super::super::gpu::DEFAULT_BLOCK).min(max.clamp(32, 1024) / 32 * 32);
        let local = |data: &[T]| -> Result<DeviceBuffer<T>> {
            let mut v = vec![T::ZERO; 4 * piece];
            v[..4 * len].copy_from_slice(&data[4 * first..4 * (first + len)]);
            upload(&v)
        };
        let x = local(&s.pos)?;
        let v = local(&s.vel)?;
        let k = zeroed::<T>(12 * piece)?;
        let mut a = zeroed::<T>(4 * total)?;
        let mut b = zeroed::<T>(4 * total)?;
        let grid = Grid1d::for_len(len.max(1) as u64, block)?;
        let split_grid = Grid1d::for_len((len.max(1) as u64) << shift, block)?;
        let (g, eps2, h) = (p.g, p.eps2(), p.dt);
        let (nn, fi, cnt) = (n as u32, first as u32, len as u32);
        let rank_slot = comm.rank() * piece;
        for _ in 0..steps {
            gather_device(comm, gpu, &x, piece, &mut b)?;
            for stage in 0..STAGES {
                // Stage 0 reads b (the gathered start positions) and writes a; 1 reads a, writes
                // b; 2 reads b, writes a; 3 reads a and updates x, v. The read buffer is never
                // a written one.
                let (src, dst) = match stage {
                    0 => (b.as_device_ptr(), a.as_device_ptr()),
                    1 => (a.as_device_ptr(), b.as_device_ptr()),
                    2 => (b.as_device_ptr(), a.as_device_ptr()),
                    _ => (a.as_device_ptr(), b.as_device_ptr()),
                };
                let (x, v, k) = (x.as_device_ptr(), v.as_device_ptr(), k.as_device_ptr());
                if len > 0 && shift > 0 {
                    // SAFETY: parameters mirror the split kernels' `(n, first, count, shift, stage,
                    // g, eps2, h, src, x, v, k, dst)`; src, dst hold total ≥ n bodies, x, v piece ≥
                    // count, k 3·piece; first + count ≤ n < 2^31; src is none of x, v, k, dst;
                    // shift ≤ 5 (run_split); block a multiple of 32 ≤ the kernel's limit ≤ 1024.
                    unsafe {
                        fs.launch(gpu, split_grid, 0, (nn, fi, cnt, shift, stage, g, eps2, h, src, x, v, k, dst))?
                    };
                } else if len > 0 {
                    // SAFETY: parameters mirror `(n, first, count, stage, g, eps2, h, src, x, v,
                    // k, dst)` of the rank kernels; src and dst hold total ≥ n bodies, x and v
                    // piece ≥ count bodies, k 3·piece; first + count ≤ n < 2^31 (validate);
                    // src is neither x, v, k nor dst; block ≤ the kernel's limit and 1024.
                    unsafe { f.launch(gpu, grid, 0, (nn, fi, cnt, stage, g, eps2, h, src, x, v, k, dst))? };
                }
                if stage < 3 {
                    gather_in_place(comm, gpu, if stage == 1 { &mut b } else { &mut a }, rank_slot, piece)?;
                }
            }
        }
        gpu.synchronize()?;
        let mut all = zeroed::<T>(4 * total)?;
        gather_device(comm, gpu, &x, piece, &mut all)?;
        gpu.synchronize()?;
        let mut host = vec![T::ZERO; 4 * total];
        all.copy_to(&mut host[..]).map_err(cuda("cuMemcpyDtoH"))?;
        s.pos.copy_from_slice(&host[..4 * n]);
        gather_device(comm, gpu, &v, piece, &mut all)?;
        gpu.synchronize()?;
        all.copy_to(&mut host[..]).map_err(cuda("cuMemcpyDtoH"))?;
        s.vel.copy_from_slice(&host[..4 * n]);
        Ok(())
    }

    /// All-gathers `buf` in place: this rank's slot (`piece` bodies at `slot`) to every rank.
    fn gather_in_place<T: NbodyFloat>(
        comm: &dyn Communicator,
        gpu: &Gpu,
        buf: &mut DeviceBuffer<T>,
        slot: usize,
        piece: usize,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        match comm.device() {
            Some(dev) => {
                let base = buf.as_device_ptr().as_raw();
                // SAFETY: the slot lies inside `buf` (size·piece bodies) and is this rank's own.
                unsafe { dev.all_gather(gpu, base + (4 * slot * size) as u64, base, 4 * piece * size) }
            }
            None => {
                gpu.synchronize()?;
                let mut mine = vec![T::ZERO; 4 * piece];
                buf.index(4 * slot..4 * (slot + piece)).copy_to(&mut mine[..]).map_err(cuda("cuMemcpyDtoH"))?;
                let mut host = vec![T::ZERO; 4 * piece * comm.size()];
                all_gather_into(comm, &mine, &mut host)?;
                buf.copy_from(&host[..]).map_err(cuda("cuMemcpyHtoD"))
            }
        }
    }
}
