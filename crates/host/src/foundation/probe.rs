//! Launcher for `crates/kernels/src/probe.rs`: each thread adds its value to its target counter
//! by one aggregation method and records the old value (the aggregated atomics' own test).

use crate::aggregation::Method;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, download, upload, zeroed};
use crate::kernel::{Element, Kernel};
use crate::launch::{Grid1d, block_size, expect_len, len_u32};
use cust::memory::{DeviceCopy, DevicePointer};

/// `(method, n, targets, values, counters, olds)` of the aggregation probes.
type Probe<'g, T> = Kernel<'g, (u32, u32, DevicePointer<u32>, DevicePointer<T>, DevicePointer<T>, DevicePointer<T>)>;

/// The probe kernels as a family: a [`ProbeValue`]'s `Element<ProbeKernels>` picks its own.
pub(crate) enum ProbeKernels {}

crate::kernel::family!(ProbeKernels: Probes holds Probe {
    u32: aggregate_probe_u32,
    i32: aggregate_probe_i32,
    u64: aggregate_probe_u64,
    f32: aggregate_probe_f32,
    f64: aggregate_probe_f64,
});

/// Value types of the probes.
#[allow(private_bounds)] // sealed: `Element` picks the kernel of each type
pub trait ProbeValue: DeviceCopy + Default + Clone + Element<ProbeKernels> {
    #[doc(hidden)]
    const IS_F64: bool = false;
}

impl ProbeValue for u32 {}
impl ProbeValue for i32 {}
impl ProbeValue for u64 {}
impl ProbeValue for f32 {}
impl ProbeValue for f64 {
    const IS_F64: bool = true;
}

/// The probe kernels, loaded and ready.
pub struct Probes<'g> {
    gpu: &'g Gpu,
    aggregate_probe_u32: Probe<'g, u32>,
    aggregate_probe_i32: Probe<'g, i32>,
    aggregate_probe_u64: Probe<'g, u64>,
    aggregate_probe_f32: Probe<'g, f32>,
    aggregate_probe_f64: Probe<'g, f64>,
}

impl<'g> Probes<'g> {
    /// Looks up the five probe kernels.
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        Ok(Probes {
            gpu,
            aggregate_probe_u32: gpu.kernel("aggregate_probe_u32")?,
            aggregate_probe_i32: gpu.kernel("aggregate_probe_i32")?,
            aggregate_probe_u64: gpu.kernel("aggregate_probe_u64")?,
            aggregate_probe_f32: gpu.kernel("aggregate_probe_f32")?,
            aggregate_probe_f64: gpu.kernel("aggregate_probe_f64")?,
        })
    }

    /// Adds `values[i]` at `counters[targets[i]]` on the GPU with `method` (one thread per i,
    /// `block` threads per block) and returns each call's returned old value; `counters` are
    /// updated in place.
    pub fn probe<T: ProbeValue>(
        &self,
        method: Method,
        block: u32,
        targets: &[u32],
        values: &[T],
        counters: &mut [T],
    ) -> Result<Vec<T>> {
        let n = len_u32("targets", targets.len())?;
        expect_len("values", values.len(), targets.len())?;
        let block = block_size(block)?;
        if matches!(method, Method::Private | Method::Wide | Method::Partition)
            || (!T::IS_F64 && matches!(method, Method::Cas | Method::CasAggregated))
        {
            return Err(Error::InvalidInput {
                what: "probe method",
                why: format!("`{}` is not an atomic of this type", method.name()),
            });
        }
        if let Some(i) = targets.iter().position(|&t| t as usize >= counters.len()) {
            return Err(Error::InvalidInput {
                what: "targets",
                why: format!("target {i} is {}, but there are {} counters", targets[i], counters.len()),
            });
        }
        let grid = Grid1d::for_len(n as u64, block)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let f = T::pick(self);
        let dt = upload(targets)?;
        let dv = upload(values)?;
        let dc = upload(counters)?;
        let olds = zeroed::<T>(targets.len())?;
        let code = method.code();
        let (tp, vp, cp, op) = (dt.as_device_ptr(), dv.as_device_ptr(), dc.as_device_ptr(), olds.as_device_ptr());
        // SAFETY: parameters mirror `(method: u32, n: u32, targets: *const u32, values: *const T,
        // counters: *mut T, olds: *mut T)`; targets/values/olds hold n, every target < counters'
        // length (checked); 1-D blocks of at most 1024 threads (block_size).
        unsafe { f.launch(self.gpu, grid, 0, (code, n, tp, vp, cp, op))? };
        self.gpu.synchronize()?;
        crate::gpu::download_into(&dc, counters)?;
        download(&olds)
    }
}
