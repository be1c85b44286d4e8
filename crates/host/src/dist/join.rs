//! Joining a launched run: a process started by `lockstep run`, `mpirun` or `srun` reads its
//! rank from the launcher's variables ([`Launch`]), meets the others at the rendezvous store
//! ([`StoreComm`], whose watchdog stops this rank within seconds when another dies) and, for
//! GPU ranks, opens GPU `local_rank mod count` and joins NCCL (`nccl::NcclComm`) —
//! unless two ranks share a GPU (NCCL takes one rank per GPU) or `LOCKSTEP_COLLECTIVES=host`
//! is set on every rank: then device data goes through the store's host collectives, with
//! the same bits.

use super::{Communicator, Launch, StoreComm};
use crate::error::{Error, Result};

/// Where a rank computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// On the CPU (the CPU twins).
    Cpu,
    /// On one GPU.
    Gpu,
}

/// A rank of a launched run: its communicator and, on a GPU, its `Gpu`.
pub struct Rank {
    // Drop order: the communicator (NCCL) before the GPU whose context it uses.
    comm: Box<dyn Communicator>,
    #[cfg(feature = "gpu")]
    gpu: Option<Box<crate::Gpu>>,
    launch: Launch,
    transport: String,
}

impl std::fmt::Debug for Rank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rank").field("launch", &self.launch).field("transport", &self.transport).finish()
    }
}

impl Rank {
    /// The run's communicator.
    pub fn comm(&self) -> &dyn Communicator {
        &*self.comm
    }

    /// This rank's GPU (GPU ranks).
    #[cfg(feature = "gpu")]
    pub fn gpu(&self) -> Option<&crate::Gpu> {
        self.gpu.as_deref()
    }

    /// What the launcher said.
    pub fn launch(&self) -> &Launch {
        &self.launch
    }

    /// How device data travels, in words: `NCCL 2.28.3 from …`, `host collectives (store)`.
    pub fn transport(&self) -> &str {
        &self.transport
    }

    /// Ends the run on this rank after its work completed: every rank says goodbye, so exits
    /// are not taken for deaths.
    pub fn finish(self) -> Result<()> {
        self.comm.finish()
    }
}

/// Joins the run this process was launched into, or `None` when no launcher variables are set
/// (a plain run). `on_abort` runs on a background thread when another rank dies or the run
/// breaks (it typically prints the message and exits the process: this rank's main thread may
/// be blocked in a GPU call that would never return).
pub fn join(place: Place, on_abort: impl Fn(String) + Send + 'static) -> Result<Option<Rank>> {
    let Some(launch) = Launch::from_env()? else {
        return Ok(None);
    };
    let store = StoreComm::connect(&launch)?;
    store.watch(on_abort)?;
    match place {
        Place::Cpu => Ok(Some(Rank {
            comm: Box::new(store),
            #[cfg(feature = "gpu")]
            gpu: None,
            launch,
            transport: "host collectives (store)".into(),
        })),
        #[cfg(feature = "gpu")]
        Place::Gpu => join_gpu(store, launch).map(Some),
        #[cfg(not(feature = "gpu"))]
        Place::Gpu => {
            Err(Error::InvalidInput { what: "device", why: "GPU ranks need lockstep built with feature `gpu`".into() })
        }
    }
}

#[cfg(feature = "gpu")]
fn join_gpu(store: StoreComm, launch: Launch) -> Result<Rank> {
    use cust::device::DeviceAttribute;
    // Every rank reports whether it has its GPU, which one (host and PCI address) and whether
    // it was told to keep device data on the host; all decide the same from the same table.
    let opened = crate::gpu::device_count().and_then(|count| {
        if count == 0 {
            return Err(Error::NoDevice { reason: "no GPU visible".into() });
        }
        crate::Gpu::open(launch.local_rank as u32 % count)
    });
    let host_only = std::env::var("LOCKSTEP_COLLECTIVES").is_ok_and(|v| v == "host");
    let mut mine = [0u64; 4];
    if let Ok(gpu) = &opened {
        let attr = |a| gpu.attribute(a).map(|v| v.max(0) as u64).unwrap_or(u64::MAX);
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let host_hash =
            host.trim().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        let pci = (attr(DeviceAttribute::PciDomainId) << 40)
            | (attr(DeviceAttribute::PciBusId) << 20)
            | attr(DeviceAttribute::PciDeviceId);
        mine = [1, host_hash, pci, host_only as u64];
    }
    let table = super::all_gather(&store, &mine)?;
    let gpu = opened?;
    if let Some(r) = table.chunks_exact(4).position(|t| t[0] == 0) {
        return Err(Error::Collective {
            rank: launch.rank,
            size: launch.size,
            why: format!("rank {r} could not open its GPU"),
        });
    }
    let rows: Vec<&[u64]> = table.chunks_exact(4).collect();
    let shared = rows.iter().enumerate().any(|(i, a)| rows[..i].iter().any(|b| a[1] == b[1] && a[2] == b[2]));
    let forced = rows.iter().any(|t| t[3] == 1);
    if shared || forced {
        let why = if shared { "ranks share a GPU" } else { "LOCKSTEP_COLLECTIVES=host" };
        return Ok(Rank {
            comm: Box::new(store),
            gpu: Some(Box::new(gpu)),
            launch,
            transport: format!("host collectives (store; {why})"),
        });
    }
    let nccl = super::nccl::NcclComm::init(Box::new(store), &gpu)?;
    warm_up(&nccl, &gpu)?;
    let transport = nccl.nccl().describe();
    Ok(Rank { comm: Box::new(nccl), gpu: Some(Box::new(gpu)), launch, transport })
}

/// One all-reduce and one all-gather of a few bytes: NCCL connects its peers on a
/// communicator's first collectives (hundreds of milliseconds), which belongs to joining the
/// run, not to the first step of the work.
#[cfg(feature = "gpu")]
fn warm_up(nccl: &super::nccl::NcclComm, gpu: &crate::Gpu) -> Result<()> {
    use super::{Communicator, DeviceCollectives};
    let size = nccl.size();
    let buf = crate::gpu::zeroed::<u64>(size + 1)?;
    let base = buf.as_device_ptr().as_raw();
    // SAFETY: `buf` holds size + 1 u64: one summed in place, then each rank's slot `rank` of
    // the first `size` gathered from the last (8 bytes); it lives past the synchronisation.
    unsafe {
        DeviceCollectives::all_reduce_u64(nccl, gpu, base, 1)?;
        DeviceCollectives::all_gather(nccl, gpu, base + 8 * size as u64, base, 8)?;
    }
    gpu.synchronize()?;
    nccl.barrier()
}
