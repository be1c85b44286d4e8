//! [`Gpu`]: the one owner of a CUDA context, the loaded module (an embedded image of the device
//! code, [`crate::ptx`]) and a stream.

use crate::error::{Error, Result, cuda};
use crate::launch::Dims;
use crate::pdl::Edge;
use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::function::Function;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use std::ffi::c_void;

/// A GPU ready to run lockstep's kernels.
///
/// Holds the device's primary context (retained while the `Gpu` lives), the module — the
/// embedded image that runs on the device ([`crate::ptx::select`]; [`Gpu::loaded`] says which)
/// — and a stream that synchronises with the legacy default stream (so host↔device copies and launches
/// are ordered). It is `Send + Sync`; every operation first makes the context current on the
/// calling thread.
pub struct Gpu {
    // Drop order is declaration order: module and stream before the context they live in.
    module: Module,
    stream: Stream,
    name: String,
    ordinal: u32,
    loaded: Loaded,
    context: Context,
}

/// Which module a [`Gpu`] loaded, and how long the load took.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The embedded image (`None` for a caller's PTX, [`Gpu::with_ptx`]).
    pub image: Option<&'static crate::ptx::Image>,
    /// What was loaded, in words: `sm_90 cubin`, `sm_70 PTX`, `caller's PTX`.
    pub what: String,
    /// Decoding the image and `cuModuleLoadData` (with the driver's JIT for PTX).
    pub load_time: std::time::Duration,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("ordinal", &self.ordinal).field("name", &self.name).finish()
    }
}

impl Gpu {
    /// The first GPU, with lockstep's device code ([`Gpu::open`]).
    pub fn new() -> Result<Gpu> {
        Gpu::open(0)
    }

    /// GPU number `ordinal`, with the embedded image that runs on it: its cubin, else the
    /// portable PTX ([`crate::ptx::select`]; `LOCKSTEP_MODULE=ptx|cubin|auto` forces a kind).
    ///
    /// Errors: as [`Gpu::with_ptx`], plus [`Error::InvalidInput`] for another value of
    /// `LOCKSTEP_MODULE` and [`Error::NoImage`] when no image runs on the device under it.
    pub fn open(ordinal: u32) -> Result<Gpu> {
        let choice = crate::ptx::ModuleChoice::from_env()?;
        let device = open_device(ordinal)?;
        let (major, minor) = capability(&device)?;
        let image = crate::ptx::select(major, minor, choice)?;
        Gpu::load(device, ordinal, Source::Image(image))
    }

    /// GPU number `ordinal` with the given PTX module text (the embedded images are not used).
    ///
    /// Errors: [`Error::NoDriver`] when no CUDA driver is installed (`libcuda.so.1` cannot be
    /// opened), [`Error::NoDevice`] when the driver cannot initialise or there is no such GPU,
    /// [`Error::InvalidPtx`] for text the driver cannot take (a NUL byte), and
    /// [`Error::ModuleLoad`] when the driver rejects the module.
    pub fn with_ptx(ordinal: u32, ptx: &str) -> Result<Gpu> {
        if ptx.contains('\0') {
            return Err(Error::InvalidPtx { why: "the text contains a NUL byte".into() });
        }
        let device = open_device(ordinal)?;
        Gpu::load(device, ordinal, Source::Ptx(ptx))
    }

    /// Retains the device's primary context, loads the module (decoding an embedded image) and
    /// makes the stream.
    fn load(device: Device, ordinal: u32, source: Source<'_>) -> Result<Gpu> {
        let name = device.name().map_err(cuda("cuDeviceGetName"))?;
        let context = Context::new(device).map_err(cuda("cuDevicePrimaryCtxRetain"))?;
        let (image, what) = match source {
            Source::Image(image) => (Some(image), image.describe()),
            Source::Ptx(_) => (None, "caller's PTX".to_string()),
        };
        let start = std::time::Instant::now();
        let (bytes, kind) = match source {
            Source::Image(image) => (image.bytes()?, image.kind()),
            Source::Ptx(ptx) => (ptx.as_bytes(), crate::ptx::ImageKind::Ptx),
        };
        let module = match kind {
            crate::ptx::ImageKind::Ptx => {
                let text = std::str::from_utf8(bytes)
                    .map_err(|e| Error::InvalidPtx { why: format!("the text is not UTF-8 ({e})") })?;
                Module::from_ptx(text, &[])
            }
            crate::ptx::ImageKind::Cubin => Module::from_cubin(bytes, &[]),
        }
        .map_err(|source| Error::ModuleLoad { image: what.clone(), source })?;
        let loaded = Loaded { image, what, load_time: start.elapsed() };
        let stream = Stream::new(StreamFlags::DEFAULT, None).map_err(cuda("cuStreamCreate"))?;
        Ok(Gpu { module, stream, name, ordinal, loaded, context })
    }

    /// Which module this GPU loaded (`sm_90 cubin`, `sm_70 PTX`, …) and how long it took.
    pub fn loaded(&self) -> &Loaded {
        &self.loaded
    }

    /// The device's name as the driver reports it (e.g. "NVIDIA H100 80GB HBM3").
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The stream every launcher uses.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Makes this GPU's context current on the calling thread. Every launcher calls it first.
    pub fn bind(&self) -> Result<()> {
        CurrentContext::set_current(&self.context).map_err(cuda("cuCtxSetCurrent"))
    }

    /// Waits for all work on the stream; reports a failed kernel (e.g. a device `trap`).
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(cuda("cuStreamSynchronize"))
    }

    /// Looks up a kernel of the module by name: [`Error::KernelNotLoaded`] for an
    /// architecture-specific kernel of another image, [`Error::MissingKernel`] for any other
    /// name the module lacks.
    pub fn function(&self, name: &'static str) -> Result<Function<'_>> {
        // an architecture-specific kernel of another image: refused before asking the driver
        if let Some(holder) = crate::ptx::image_holding(name)
            && !self.loaded_is(holder)
        {
            return Err(Error::KernelNotLoaded { name, holder: holder.describe(), loaded: self.loaded.what.clone() });
        }
        self.bind()?;
        self.module.get_function(name).map_err(|_| Error::MissingKernel { name })
    }

    /// Whether the loaded module holds kernel `name` (an architecture-specific kernel only
    /// where its image was loaded).
    pub fn has_kernel(&self, name: &str) -> bool {
        match crate::ptx::image_holding(name) {
            Some(holder) => self.loaded_is(holder),
            None => crate::ptx::KERNELS.contains(&name),
        }
    }

    /// Whether this GPU loaded the embedded image `image`.
    fn loaded_is(&self, image: &crate::ptx::Image) -> bool {
        self.loaded.image.is_some_and(|i| std::ptr::eq(i, image))
    }

    /// Free and total device memory in bytes.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.bind()?;
        cust::memory::mem_get_info().map_err(cuda("cuMemGetInfo"))
    }

    /// The device's compute capability `(major, minor)`: (9, 0) for an H100 or H200.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        capability(&Device::get_device(self.ordinal).map_err(cuda("cuDeviceGet"))?)
    }

    /// A device attribute (multiprocessor count, compute capability, …).
    pub fn attribute(&self, attribute: cust::device::DeviceAttribute) -> Result<i32> {
        let device = Device::get_device(self.ordinal).map_err(cuda("cuDeviceGet"))?;
        device.get_attribute(attribute).map_err(cuda("cuDeviceGetAttribute"))
    }

    /// The most shared memory one block may ask for once its kernel allows it
    /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`, which cust's `DeviceAttribute`
    /// lacks): 227 KiB on an H100.
    pub fn shared_memory_per_block_optin(&self) -> Result<u32> {
        use cust::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN as OPTIN;
        let device = Device::get_device(self.ordinal).map_err(cuda("cuDeviceGet"))?;
        let mut v = 0i32;
        // SAFETY: writes one i32 through a valid pointer; `device` is a valid ordinal's handle.
        let r = unsafe { cust::sys::cuDeviceGetAttribute(&mut v, OPTIN, device.as_raw()) };
        crate::error::driver("cuDeviceGetAttribute", r)?;
        Ok(v.max(0) as u32)
    }

    /// Launches `function` on the stream (nothing happens for an empty grid).
    ///
    /// # Safety
    /// `args` holds one pointer per kernel parameter, in order, each to a value of exactly the
    /// parameter's type, and every device pointer among them is valid for what the kernel
    /// reads and writes for this grid.
    pub(crate) unsafe fn launch(
        &self,
        function: &Function<'_>,
        kernel: &'static str,
        dims: impl Into<Dims>,
        shared_bytes: u32,
        args: &[*mut c_void],
    ) -> Result<()> {
        // SAFETY: forwarded; a full edge asks nothing more of the kernel.
        unsafe { self.launch_after(Edge::Full, function, kernel, dims.into(), shared_bytes, args) }
    }

    /// As [`Gpu::launch`], following the kernel before it on the stream by `edge`: with
    /// [`Edge::Programmatic`] a programmatic launch (`crate::pdl`), plain where the driver
    /// refuses it (the plain launch reports any real launch error).
    ///
    /// # Safety
    /// As [`Gpu::launch`]; with [`Edge::Programmatic`], `crate::pdl`'s invariant (a `*_pdl_*`
    /// kernel).
    pub(crate) unsafe fn launch_after(
        &self,
        edge: Edge,
        function: &Function<'_>,
        kernel: &'static str,
        dims: Dims,
        shared_bytes: u32,
        args: &[*mut c_void],
    ) -> Result<()> {
        if dims.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: forwarded from the caller, whose contract includes the invariant.
        if edge == Edge::Programmatic && unsafe { crate::pdl::launch(&self.stream, function, dims, shared_bytes, args) }
        {
            return Ok(());
        }
        let grid = cust::function::GridSize::xyz(dims.grid[0], dims.grid[1], dims.grid[2]);
        let block = cust::function::BlockSize::xyz(dims.block[0], dims.block[1], dims.block[2]);
        // SAFETY: forwarded from the caller.
        unsafe { self.stream.launch(function, grid, block, shared_bytes, args) }
            .map_err(|source| Error::Launch { kernel, source })
    }
}

/// A device's compute capability `(major, minor)`.
fn capability(device: &Device) -> Result<(u32, u32)> {
    let attribute = |a| device.get_attribute(a).map_err(cuda("cuDeviceGetAttribute"));
    let major = attribute(cust::device::DeviceAttribute::ComputeCapabilityMajor)?;
    let minor = attribute(cust::device::DeviceAttribute::ComputeCapabilityMinor)?;
    Ok((major.max(0) as u32, minor.max(0) as u32))
}

/// What [`Gpu::load`] loads.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// An embedded image of lockstep's device code.
    Image(&'static crate::ptx::Image),
    /// A caller's PTX text.
    Ptx(&'a str),
}

/// How many GPUs the driver shows this process (after `CUDA_VISIBLE_DEVICES`). Errors: no
/// driver, or one that does not initialise.
pub fn device_count() -> Result<u32> {
    crate::driver::load().map_err(|reason| Error::NoDriver { reason })?;
    cust::init(cust::CudaFlags::empty())
        .map_err(|e| Error::NoDevice { reason: format!("the CUDA driver did not initialise ({e})") })?;
    Device::num_devices().map_err(|e| Error::NoDevice { reason: format!("cannot count devices ({e})") })
}

/// Initialises the driver and opens GPU `ordinal`, or says why there is none.
fn open_device(ordinal: u32) -> Result<Device> {
    crate::driver::load().map_err(|reason| Error::NoDriver { reason })?;
    cust::init(cust::CudaFlags::empty())
        .map_err(|e| Error::NoDevice { reason: format!("the CUDA driver did not initialise ({e})") })?;
    let count = Device::num_devices().map_err(|e| Error::NoDevice { reason: format!("cannot count devices ({e})") })?;
    if ordinal >= count {
        return Err(Error::NoDevice { reason: format!("GPU {ordinal} requested, {count} present") });
    }
    Device::get_device(ordinal).map_err(cuda("cuDeviceGet"))
}

/// A new device buffer of `len` zeros (the one way lockstep allocates zeroed device memory).
pub(crate) fn zeroed<T: DeviceCopy + cust::memory::bytemuck::Zeroable>(len: usize) -> Result<DeviceBuffer<T>> {
    DeviceBuffer::zeroed(len).map_err(cuda("cuMemAlloc"))
}

/// Enqueues zeroing `buf` on `gpu`'s stream (ordered before every later launch there).
pub(crate) fn zero_async<T: DeviceCopy + cust::memory::bytemuck::Zeroable>(
    gpu: &Gpu,
    buf: &mut cust::memory::DeviceSlice<T>,
) -> Result<()> {
    gpu.bind()?;
    // SAFETY: the slice is a live allocation borrowed mutably for the call; the memset is
    // ordered on the stream before the kernels that use it.
    unsafe { buf.set_zero_async(gpu.stream()) }.map_err(cuda("cuMemsetD8Async"))
}

/// Copies `data` to a new device buffer.
pub(crate) fn upload<T: DeviceCopy>(data: &[T]) -> Result<DeviceBuffer<T>> {
    DeviceBuffer::from_slice(data).map_err(cuda("cuMemcpyHtoD"))
}

/// Copies a device buffer back into a new vector (same length by construction).
pub(crate) fn download<T: DeviceCopy + Default + Clone>(buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
    let mut out = vec![T::default(); buf.len()];
    buf.copy_to(&mut out[..]).map_err(cuda("cuMemcpyDtoH"))?;
    Ok(out)
}

/// Copies a device buffer into `dst`, whose length the caller has checked.
pub(crate) fn download_into<T: DeviceCopy>(buf: &DeviceBuffer<T>, dst: &mut [T]) -> Result<()> {
    crate::launch::expect_len("output", dst.len(), buf.len())?;
    buf.copy_to(dst).map_err(cuda("cuMemcpyDtoH"))
}

/// Enqueues a device-to-device copy of `src` into `dst` on the GPU's stream (the bandwidth
/// yardstick of the benchmarks). Lengths must match.
pub fn copy_on_device<T: DeviceCopy>(
    gpu: &Gpu,
    src: &cust::memory::DeviceSlice<T>,
    dst: &mut cust::memory::DeviceSlice<T>,
) -> Result<()> {
    use cust::memory::AsyncCopyDestination;
    crate::launch::expect_len("dst", dst.len(), src.len())?;
    gpu.bind()?;
    // SAFETY: both slices are live device allocations of equal length (checked), borrowed for
    // the call; the copy is ordered on the stream before any later use of `dst`.
    unsafe { dst.async_copy_from(src, gpu.stream()) }.map_err(cuda("cuMemcpyDtoDAsync"))
}
