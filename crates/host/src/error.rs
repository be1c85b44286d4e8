//! The one error type of the host API.

#[cfg(feature = "gpu")]
use cust::error::CudaError;

/// What went wrong, with enough context to act on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No CUDA driver: `libcuda.so.1` cannot be opened (no NVIDIA driver installed), or lockstep
    /// was built without its `gpu` feature. The CPU twins still run.
    #[error("no CUDA driver: {reason}")]
    NoDriver {
        /// Why (the loader's message, or the missing feature).
        reason: String,
    },
    /// No usable CUDA device: the driver is installed but has no GPU, or refused to initialise.
    #[error("no CUDA device: {reason}")]
    NoDevice {
        /// What the driver said.
        reason: String,
    },
    /// A buffer has the wrong length for this launch.
    #[error("`{arg}` has {got} elements, but this launch needs {expected}")]
    LengthMismatch {
        /// The argument's name.
        arg: &'static str,
        /// The length the launch needs.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A size is beyond what the kernel can index or the device can launch.
    #[error("{what} is {value}, but at most {max} is supported")]
    TooLarge {
        /// Which size.
        what: &'static str,
        /// The size given.
        value: u64,
        /// The largest supported.
        max: u64,
    },
    /// A size derived from the inputs does not fit in 64 bits (the expression says which and
    /// from what), so no value can be stated against a limit.
    #[error("{what} = {expr} passes 2^64 − 1")]
    Overflow {
        /// Which size.
        what: &'static str,
        /// How it is computed, with the inputs' values (e.g. `4096 · 2^60`).
        expr: String,
    },
    /// A parameter is outside its domain (zero block size, a non-finite bound, …).
    #[error("invalid {what}: {why}")]
    InvalidInput {
        /// Which parameter.
        what: &'static str,
        /// Why it is refused.
        why: String,
    },
    /// The driver could not load the module (PTX or cubin).
    #[cfg(feature = "gpu")]
    #[error(
        "the {image} failed to load ({source}); was it built for a newer architecture than this GPU, or is it not PTX?"
    )]
    ModuleLoad {
        /// What was loaded (`sm_90 cubin`, `sm_70 PTX`, `caller's PTX`).
        image: String,
        /// The driver's error.
        source: CudaError,
    },
    /// The PTX text cannot even be handed to the driver.
    #[error("invalid PTX text: {why}")]
    InvalidPtx {
        /// What is wrong with it.
        why: String,
    },
    /// The loaded module has no kernel of this name.
    #[error("kernel `{name}` is missing from the PTX module")]
    MissingKernel {
        /// The kernel's name.
        name: &'static str,
    },
    /// An architecture-specific kernel that the loaded image lacks: it exists only in another
    /// image (e.g. the sm_90 cubin), and this GPU loaded a different one.
    #[error(
        "kernel `{name}` exists only in the {holder} of lockstep's device code; this GPU loaded the {loaded} (a device of another architecture, or LOCKSTEP_MODULE=ptx)"
    )]
    KernelNotLoaded {
        /// The kernel's name.
        name: &'static str,
        /// The image that holds it (`sm_90 cubin`).
        holder: String,
        /// The image this GPU loaded.
        loaded: String,
    },
    /// An embedded image of the device code does not decode (a damaged binary or source file).
    #[error("the embedded {image} does not decode ({why}); rebuild lockstep from a clean checkout")]
    CorruptImage {
        /// Which image (`sm_90 cubin`).
        image: String,
        /// The decoder's message.
        why: String,
    },
    /// No embedded image runs on this device under the requested choice (`LOCKSTEP_MODULE`).
    #[error(
        "no image of lockstep's device code runs on a device of {device} with LOCKSTEP_MODULE={choice} (images: {available})"
    )]
    NoImage {
        /// The device's compute capability.
        device: String,
        /// `auto`, `ptx` or `cubin`.
        choice: String,
        /// The embedded images.
        available: String,
    },
    /// A checkpoint that cannot be written, or is refused on reading: corrupt, truncated, of
    /// another format version or family, or written for a run with other parameters.
    #[error("checkpoint {path}: {why}")]
    Checkpoint {
        /// The file.
        path: String,
        /// What is wrong, or why it cannot be written.
        why: String,
    },
    /// A collective of a distributed run failed on this rank: the ranks called different
    /// collectives (each rank names both), a rank left or died, the rendezvous failed, or a
    /// peer did not answer in time. Every rank of the run gets one; none hangs.
    #[error("rank {rank} of {size}: {why}")]
    Collective {
        /// This rank.
        rank: usize,
        /// Ranks in the run.
        size: usize,
        /// What went wrong, naming the collective.
        why: String,
    },
    /// A typed launch handle whose parameters disagree with the kernel's declaration in the PTX
    /// (their count or a size): the host did not follow a kernel signature change.
    #[error("kernel `{kernel}`: the host's parameter sizes {host} differ from the PTX's {device}")]
    KernelSignature {
        /// The kernel.
        kernel: String,
        /// The PTX's parameter sizes in bytes.
        device: String,
        /// The handle's parameter sizes in bytes.
        host: String,
    },
    /// An NCCL call failed (the library is loaded at run time: `LOCKSTEP_NCCL`, the
    /// `nvidia-nccl-cu13` Python package, or the loader path).
    #[error("NCCL call `{call}` failed: {why}")]
    Nccl {
        /// The call, e.g. `ncclCommInitRank`.
        call: &'static str,
        /// NCCL's error string (or why the library could not be loaded).
        why: String,
    },
    /// A kernel launch failed (or the kernel failed, reported at launch).
    #[cfg(feature = "gpu")]
    #[error("CUDA call `cuLaunchKernel({kernel})` failed: {source}")]
    Launch {
        /// The kernel's name.
        kernel: &'static str,
        /// The driver's error.
        source: CudaError,
    },
    /// A CUDA driver call failed.
    #[cfg(feature = "gpu")]
    #[error("CUDA call `{call}` failed: {source}")]
    Cuda {
        /// The call, e.g. `cuMemAlloc`.
        call: &'static str,
        /// The driver's error.
        source: CudaError,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(feature = "gpu")]
/// Maps a driver error to [`Error::Cuda`] naming the call: `.map_err(cuda("cuMemAlloc"))`.
pub fn cuda(call: &'static str) -> impl Fn(CudaError) -> Error {
    move |source| Error::Cuda { call, source }
}

#[cfg(feature = "gpu")]
/// The result of a driver call lockstep makes itself through `cust::sys` (cust's own
/// conversion is private): [`Error::Cuda`] naming the call, with the errors such calls (the
/// function and device attributes, the graph API) document; any other as `UnknownError`.
pub(crate) fn driver(call: &'static str, result: cust::sys::CUresult) -> Result<()> {
    use cust::sys::CUresult as R;
    let source = match result {
        R::CUDA_SUCCESS => return Ok(()),
        R::CUDA_ERROR_INVALID_VALUE => CudaError::InvalidValue,
        R::CUDA_ERROR_OUT_OF_MEMORY => CudaError::OutOfMemory,
        R::CUDA_ERROR_NOT_INITIALIZED => CudaError::NotInitialized,
        R::CUDA_ERROR_DEINITIALIZED => CudaError::Deinitialized,
        R::CUDA_ERROR_INVALID_DEVICE => CudaError::InvalidDevice,
        R::CUDA_ERROR_INVALID_CONTEXT => CudaError::InvalidContext,
        R::CUDA_ERROR_INVALID_HANDLE => CudaError::InvalidHandle,
        R::CUDA_ERROR_NOT_PERMITTED => CudaError::NotPermitted,
        R::CUDA_ERROR_NOT_SUPPORTED => CudaError::NotSupported,
        R::CUDA_ERROR_LAUNCH_FAILED => CudaError::LaunchFailed,
        R::CUDA_ERROR_ILLEGAL_ADDRESS => CudaError::IllegalAddress,
        _ => CudaError::UnknownError,
    };
    Err(Error::Cuda { call, source })
}
