//! The thread-block cluster probe: the one architecture-specific kernel (`cluster_probe`, in the
//! sm_90 image only, `crates/kernels/src/hopper.rs`) — the mechanism by which a kernel exists
//! in one image of the device code and its launcher finds out whether the loaded module has it.

use crate::error::Result;
use crate::gpu::{Gpu, download, zeroed};
use crate::kernel::Kernel;
use crate::launch::Dims;
use cust::memory::DevicePointer;

/// The architecture-specific kernels of the sm_90 image, loaded and ready.
pub struct Hopper<'g> {
    gpu: &'g Gpu,
    probe: Kernel<'g, (u32, DevicePointer<u32>)>,
}

impl<'g> Hopper<'g> {
    /// Looks up the sm_90 kernels: [`Error::KernelNotLoaded`](crate::Error::KernelNotLoaded)
    /// where `gpu` loaded another image (not a Hopper GPU, or `LOCKSTEP_MODULE=ptx`).
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        Ok(Hopper { gpu, probe: gpu.kernel("cluster_probe")? })
    }

    /// `cluster_probe` on `blocks` blocks of 32 threads, launched without a cluster dimension:
    /// `(blocks in its cluster, rank in it, cluster x index)` per block. Errors: more than
    /// [`MAX_PROBE_BLOCKS`](super::MAX_PROBE_BLOCKS) blocks.
    pub fn probe(&self, blocks: u32) -> Result<Vec<[u32; 3]>> {
        super::check_probe_blocks(blocks)?;
        if blocks == 0 {
            return Ok(Vec::new());
        }
        let out = zeroed::<u32>(3 * blocks as usize)?;
        let dims = Dims::new([blocks, 1, 1], [32, 1, 1])?;
        // SAFETY: `(blocks, out)` is the kernel's parameter list; `out` holds 3·blocks u32 and
        // the grid has `blocks` blocks.
        unsafe { self.probe.launch(self.gpu, dims, 0, (blocks, out.as_device_ptr()))? };
        self.gpu.synchronize()?;
        let flat = download(&out)?;
        Ok(flat.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
    }
}
