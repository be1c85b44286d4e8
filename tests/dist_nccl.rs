//! NCCL on one rank (skipped without a GPU, or without NCCL unless `LOCKSTEP_REQUIRE_NCCL=1`):
//! `NcclComm` over `Alone` makes a communicator, its device all-reduce leaves the values as they
//! are and its all-gather copies (in place too), and its host collectives are the host's.

use lockstep::dist::nccl::{self, NcclComm};
use lockstep::dist::{Alone, Communicator};
use lockstep::{CopyDestination, DeviceBuffer, Gpu};
use lockstep_parity::gpu_or_skip;
use std::error::Error;
use std::io::Write;

/// How a test skipped for want of NCCL announces itself on stderr (the start of its line).
const NO_NCCL: &str = "SKIPPED (no NCCL)";

/// Whether NCCL loads; when it does not, a skip line (or, with `LOCKSTEP_REQUIRE_NCCL=1`, the
/// error).
fn nccl_present() -> Result<bool, Box<dyn Error>> {
    match nccl::load() {
        Ok(_) => Ok(true),
        Err(e) if std::env::var("LOCKSTEP_REQUIRE_NCCL").is_ok_and(|v| v == "1") => Err(e.into()),
        Err(e) => {
            let test = std::thread::current().name().unwrap_or("unnamed test").to_string();
            let _ = writeln!(
                std::io::stderr(),
                "{NO_NCCL} {test}: {e} (set LOCKSTEP_REQUIRE_NCCL=1 to make this a failure)"
            );
            Ok(false)
        }
    }
}

/// A one-rank NCCL communicator on `gpu`, or `None` (with a skip line) without NCCL.
fn one_rank(gpu: &Gpu) -> Result<Option<NcclComm>, Box<dyn Error>> {
    if !nccl_present()? {
        return Ok(None);
    }
    Ok(Some(NcclComm::init(Box::new(Alone), gpu)?))
}

/// The communicator, or the end of the test.
macro_rules! nccl_or_skip {
    ($gpu:expr) => {
        match one_rank($gpu)? {
            Some(comm) => comm,
            None => return Ok(()),
        }
    };
}

#[test]
fn one_rank_all_reduce_leaves_the_values() -> Result<(), Box<dyn Error>> {
    let gpu = gpu_or_skip!();
    let comm = nccl_or_skip!(gpu);
    eprintln!("{}", comm.nccl().describe());
    assert!(comm.nccl().describe().starts_with("NCCL 2."), "{}", comm.nccl().describe());
    let values: Vec<u64> =
        (0..4099u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 61)).chain([0, u64::MAX]).collect();
    gpu.bind()?;
    let buf = DeviceBuffer::from_slice(&values)?;
    let device = comm.device().ok_or("NcclComm has no device collectives")?;
    // SAFETY: `buf` holds `values.len()` u64 of the GPU's context and lives past the
    // synchronisation below.
    unsafe { device.all_reduce_u64(gpu, buf.as_device_ptr().as_raw(), values.len())? };
    gpu.synchronize()?;
    let mut back = vec![0u64; values.len()];
    buf.copy_to(&mut back[..])?;
    assert_eq!(back, values);
    Ok(())
}

#[test]
fn one_rank_all_gather_copies() -> Result<(), Box<dyn Error>> {
    let gpu = gpu_or_skip!();
    let comm = nccl_or_skip!(gpu);
    let mine: Vec<u8> = (0..1001u32).map(|i| (i * 37 + 11) as u8).collect();
    gpu.bind()?;
    let send = DeviceBuffer::from_slice(&mine)?;
    let recv = DeviceBuffer::from_slice(&vec![0xA5u8; mine.len()])?;
    let device = comm.device().ok_or("NcclComm has no device collectives")?;
    // SAFETY: `send` and `recv` hold `mine.len()` bytes (one rank) of the GPU's context, apart,
    // and live past the synchronisation below.
    unsafe { device.all_gather(gpu, send.as_device_ptr().as_raw(), recv.as_device_ptr().as_raw(), mine.len())? };
    gpu.synchronize()?;
    let mut back = vec![0u8; mine.len()];
    recv.copy_to(&mut back[..])?;
    assert_eq!(back, mine);

    // In place: the send buffer is this rank's slot of the output.
    let both = DeviceBuffer::from_slice(&mine)?;
    let at = both.as_device_ptr().as_raw();
    // SAFETY: as above; `send` is exactly rank 0's slot of `recv`.
    unsafe { device.all_gather(gpu, at, at, mine.len())? };
    gpu.synchronize()?;
    both.copy_to(&mut back[..])?;
    assert_eq!(back, mine);
    Ok(())
}

#[test]
fn one_rank_host_collectives_are_the_hosts() -> Result<(), Box<dyn Error>> {
    let gpu = gpu_or_skip!();
    let comm = nccl_or_skip!(gpu);
    assert_eq!((comm.rank(), comm.size()), (0, 1));
    assert_eq!(lockstep::dist::sum_u64(&comm, 42)?, 42);
    assert_eq!(lockstep::dist::all_gather(&comm, &[1u32, 2, 3])?, [1, 2, 3]);
    let mut v = [7u64, 8];
    lockstep::dist::broadcast(&comm, 0, &mut v)?;
    assert_eq!(v, [7, 8]);
    assert!(lockstep::dist::broadcast(&comm, 1, &mut v).is_err(), "root 1 of 1 rank");
    comm.barrier()?;
    Ok(())
}

/// GPU 1 beside the shared GPU 0, or `None` (with a skip line) on a machine of one GPU, or when
/// `NCCL_NVLS_ENABLE` is not `0` (a run of several ranks needs NVLink multicast off; the
/// test never changes the environment).
fn second_gpu() -> Result<Option<Gpu>, Box<dyn Error>> {
    let test = std::thread::current().name().unwrap_or("unnamed test").to_string();
    if !std::env::var("NCCL_NVLS_ENABLE").is_ok_and(|v| v.trim() == "0") {
        let _ = writeln!(std::io::stderr(), "{NO_NCCL} {test}: two ranks need NCCL_NVLS_ENABLE=0 in the environment");
        return Ok(None);
    }
    match Gpu::open(1) {
        Ok(gpu) => Ok(Some(gpu)),
        Err(lockstep::Error::NoDevice { reason }) => {
            let _ = writeln!(std::io::stderr(), "SKIPPED (one GPU) {test}: {reason}");
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Runs `work(rank, comm, gpu)` for two ranks, one thread each, GPU `rank` for rank `rank`
/// (host collectives through a `CpuGroup`); the results in rank order.
fn two_ranks<T: Send>(
    gpus: [&Gpu; 2],
    work: impl Fn(usize, &NcclComm, &Gpu) -> Result<T, String> + Sync,
) -> Vec<Result<T, String>> {
    let comms = lockstep::dist::CpuGroup::new(2).expect("two ranks").comms();
    std::thread::scope(|scope| {
        let handles: Vec<_> = comms
            .into_iter()
            .zip(gpus)
            .enumerate()
            .map(|(rank, (host, gpu))| {
                let work = &work;
                scope.spawn(move || {
                    let comm = NcclComm::init(Box::new(host), gpu).map_err(|e| e.to_string())?;
                    work(rank, &comm, gpu)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("the rank's thread panicked".into()))).collect()
    })
}

#[test]
fn two_ranks_sum_and_gather_on_two_gpus() -> Result<(), Box<dyn Error>> {
    let gpu0 = gpu_or_skip!();
    if !nccl_present()? {
        return Ok(());
    }
    let Some(gpu1) = second_gpu()? else { return Ok(()) };
    let n = 3001usize;
    let value =
        |rank: usize, i: usize| (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(rank as u32 * 17);
    let piece = |rank: usize| -> Vec<u8> { (0..777).map(|i| (i * 31 + rank * 101) as u8).collect() };
    let results = two_ranks([gpu0, &gpu1], |rank, comm, gpu| {
        let run = || -> Result<(Vec<u64>, Vec<u8>), Box<dyn Error>> {
            assert_eq!((comm.rank(), comm.size()), (rank, 2));
            gpu.bind()?;
            let sums = DeviceBuffer::from_slice(&(0..n).map(|i| value(rank, i)).collect::<Vec<_>>())?;
            let mine = DeviceBuffer::from_slice(&piece(rank))?;
            let all = DeviceBuffer::from_slice(&vec![0u8; 2 * 777])?;
            let device = comm.device().ok_or("NcclComm has no device collectives")?;
            // SAFETY: the buffers are of `gpu`'s context, of the lengths given (`all` holds two
            // pieces), and live past the synchronisation below.
            unsafe {
                device.all_reduce_u64(gpu, sums.as_device_ptr().as_raw(), n)?;
                device.all_gather(gpu, mine.as_device_ptr().as_raw(), all.as_device_ptr().as_raw(), 777)?;
            }
            gpu.synchronize()?;
            let (mut s, mut a) = (vec![0u64; n], vec![0u8; 2 * 777]);
            sums.copy_to(&mut s[..])?;
            all.copy_to(&mut a[..])?;
            Ok((s, a))
        };
        run().map_err(|e| e.to_string())
    });
    let want_sums: Vec<u64> = (0..n).map(|i| value(0, i).wrapping_add(value(1, i))).collect();
    let want_all: Vec<u8> = [piece(0), piece(1)].concat();
    for (rank, result) in results.into_iter().enumerate() {
        let (sums, all) = result.map_err(|e| format!("rank {rank}: {e}"))?;
        assert!(sums == want_sums, "rank {rank}: wrong sums");
        assert!(all == want_all, "rank {rank}: wrong gather");
    }
    Ok(())
}

/// Debug builds check that every rank calls the same device collective (NCCL would hang).
#[cfg(debug_assertions)]
#[test]
fn two_ranks_calling_different_device_collectives_both_fail() -> Result<(), Box<dyn Error>> {
    let gpu0 = gpu_or_skip!();
    if !nccl_present()? {
        return Ok(());
    }
    let Some(gpu1) = second_gpu()? else { return Ok(()) };
    let results = two_ranks([gpu0, &gpu1], |rank, comm, gpu| {
        gpu.bind().map_err(|e| e.to_string())?;
        let buf = DeviceBuffer::from_slice(&[0u64; 8]).map_err(|e| e.to_string())?;
        let at = buf.as_device_ptr().as_raw();
        let device = comm.device().ok_or("NcclComm has no device collectives")?;
        // SAFETY: `buf` holds 8 u64 (64 bytes) of `gpu`'s context; the mismatch is caught
        // before anything is enqueued.
        let outcome =
            unsafe { if rank == 0 { device.all_reduce_u64(gpu, at, 8) } else { device.all_gather(gpu, at, at, 32) } };
        Ok(outcome.map_err(|e| e.to_string()))
    });
    for (rank, result) in results.into_iter().enumerate() {
        let outcome = result.map_err(|e| format!("rank {rank}: {e}"))?;
        let e = outcome.expect_err("a mismatched device collective must fail");
        assert!(e.contains("all_reduce_u64 of 8 u64") && e.contains("all_gather of 32 bytes"), "rank {rank}: {e}");
    }
    Ok(())
}
