//! The CUDA driver library, opened when a GPU is first asked for — not when the program loads.
//!
//! cust calls the driver through `extern "C"` declarations (`cuInit`, `cuLaunchKernel`, …) that
//! its build script links to `libcuda`. Linked the usual way, every program that uses lockstep
//! would need `libcuda.so.1` just to start. Instead this module *defines* each of those symbols
//! as a trampoline: one indirect jump through a slot of [`SLOTS`]. The build script hands the
//! linker an empty `libcuda.so` (a linker script with no input), so nothing asks the loader for
//! the real library. [`load`] opens `libcuda.so.1` with `dlopen` and fills the slots; until it
//! has, every slot points at [`not_loaded`], which returns `CUDA_ERROR_NOT_INITIALIZED` — so a
//! cust call made before (or without) a driver fails like a driver that was never initialised.
//!
//! A trampoline keeps every argument register and the stack untouched and jumps, so it needs no
//! signature: the callee returns straight to cust. Supported on Linux x86_64 and aarch64; on
//! other targets cust links the driver as usual and [`load`] does nothing.
//!
//! Invariants: the slots are written only inside [`load`], once, before any cust call it
//! enables (cust's `init` follows it in `Gpu::new`); a symbol the installed driver lacks keeps
//! [`not_loaded`].

#[cfg(lazy_cuda)]
use std::sync::atomic::{AtomicPtr, Ordering};

/// The driver library's file name (the soname NVIDIA's driver installs).
pub const LIBRARY: &str = "libcuda.so.1";

/// `CUDA_ERROR_NOT_INITIALIZED`: what every driver call returns before [`load`] succeeded.
#[cfg(lazy_cuda)]
extern "C" fn not_loaded() -> u32 {
    3
}

/// Every driver function cust 0.3.2 calls (checked by the linker: a missing name is an
/// undefined symbol at link time), plus those lockstep calls itself through `cust::sys`:
/// `cuFuncSetAttribute`, and the graph API of [`crate::graph`] (`cuGraphCreate`,
/// `cuGraphAddKernelNode`, `cuGraphAddDependencies{,_v2}`, `cuGraphInstantiateWithFlags`,
/// `cuGraphLaunch`, `cuGraphExecDestroy`, `cuGraphDestroy`), and `cuLaunchKernelEx` of
/// [`crate::pdl`].
#[cfg(lazy_cuda)]
macro_rules! driver_functions {
    ($($name:ident),* $(,)?) => {
        /// The names, in slot order.
        const NAMES: &[&str] = &[$(stringify!($name)),*];

        /// One jump target per name: [`not_loaded`] until [`load`] resolves it.
        static SLOTS: [AtomicPtr<()>; NAMES.len()] =
            [const { AtomicPtr::new(not_loaded as *mut ()) }; NAMES.len()];

        $(
            #[unsafe(no_mangle)]
            #[unsafe(naked)]
            #[doc(hidden)]
            extern "C" fn $name() {
                trampoline!(slot_of(stringify!($name)))
            }
        )*
    };
}

/// The jump through `SLOTS[$index]`.
#[cfg(all(lazy_cuda, target_arch = "x86_64"))]
macro_rules! trampoline {
    ($index:expr) => {
        core::arch::naked_asm!(
            "jmp qword ptr [rip + {slots} + {offset}]",
            slots = sym SLOTS,
            offset = const $index * size_of::<AtomicPtr<()>>(),
        )
    };
}

/// The jump through `SLOTS[$index]` (x16 is the intra-procedure-call scratch register).
#[cfg(all(lazy_cuda, target_arch = "aarch64"))]
macro_rules! trampoline {
    ($index:expr) => {
        core::arch::naked_asm!(
            "adrp x16, {slots}",
            "add x16, x16, :lo12:{slots}",
            "ldr x16, [x16, #{offset}]",
            "br x16",
            slots = sym SLOTS,
            offset = const $index * size_of::<AtomicPtr<()>>(),
        )
    };
}

#[cfg(lazy_cuda)]
driver_functions![
    cuArray3DCreate_v2,
    cuArray3DGetDescriptor_v2,
    cuArrayDestroy,
    cuCtxCreate_v2,
    cuCtxDestroy_v2,
    cuCtxGetApiVersion,
    cuCtxGetCacheConfig,
    cuCtxGetCurrent,
    cuCtxGetDevice,
    cuCtxGetFlags,
    cuCtxGetLimit,
    cuCtxGetSharedMemConfig,
    cuCtxGetStreamPriorityRange,
    cuCtxPopCurrent_v2,
    cuCtxPushCurrent_v2,
    cuCtxSetCacheConfig,
    cuCtxSetCurrent,
    cuCtxSetLimit,
    cuCtxSetSharedMemConfig,
    cuCtxSynchronize,
    cuDestroyExternalMemory,
    cuDeviceGet,
    cuDeviceGetAttribute,
    cuDeviceGetCount,
    cuDeviceGetName,
    cuDevicePrimaryCtxRelease_v2,
    cuDevicePrimaryCtxReset_v2,
    cuDevicePrimaryCtxRetain,
    cuDevicePrimaryCtxSetFlags_v2,
    cuDeviceTotalMem_v2,
    cuDriverGetVersion,
    cuEventCreate,
    cuEventDestroy_v2,
    cuEventElapsedTime,
    cuEventQuery,
    cuEventRecord,
    cuEventSynchronize,
    cuExternalMemoryGetMappedBuffer,
    cuFuncGetAttribute,
    cuFuncSetAttribute,
    cuFuncSetCacheConfig,
    cuFuncSetSharedMemConfig,
    cuGetErrorString,
    cuGraphAddDependencies,
    cuGraphAddDependencies_v2,
    cuGraphAddKernelNode,
    cuGraphCreate,
    cuGraphDebugDotPrint,
    cuGraphDestroy,
    cuGraphExecDestroy,
    cuGraphGetEdges,
    cuGraphGetNodes,
    cuGraphInstantiateWithFlags,
    cuGraphKernelNodeGetParams,
    cuGraphLaunch,
    cuGraphNodeGetType,
    cuImportExternalMemory,
    cuInit,
    cuLaunchHostFunc,
    cuLaunchKernel,
    cuLaunchKernelEx,
    cuLinkAddData_v2,
    cuLinkComplete,
    cuLinkCreate_v2,
    cuLinkDestroy,
    cuMemAdvise,
    cuMemAllocAsync,
    cuMemAllocHost_v2,
    cuMemAllocManaged,
    cuMemAllocPitch_v2,
    cuMemAlloc_v2,
    cuMemFreeAsync,
    cuMemFreeHost,
    cuMemFree_v2,
    cuMemGetInfo_v2,
    cuMemPrefetchAsync,
    cuMemcpy2D_v2,
    cuMemcpyAtoH_v2,
    cuMemcpyDtoDAsync_v2,
    cuMemcpyDtoD_v2,
    cuMemcpyDtoHAsync_v2,
    cuMemcpyDtoH_v2,
    cuMemcpyHtoA_v2,
    cuMemcpyHtoDAsync_v2,
    cuMemcpyHtoD_v2,
    cuMemsetD16Async,
    cuMemsetD16_v2,
    cuMemsetD32Async,
    cuMemsetD32_v2,
    cuMemsetD8Async,
    cuMemsetD8_v2,
    cuModuleGetFunction,
    cuModuleGetGlobal_v2,
    cuModuleLoad,
    cuModuleLoadData,
    cuModuleLoadDataEx,
    cuModuleUnload,
    cuOccupancyAvailableDynamicSMemPerBlock,
    cuOccupancyMaxActiveBlocksPerMultiprocessor,
    cuOccupancyMaxPotentialBlockSize,
    cuStreamCreateWithPriority,
    cuStreamDestroy_v2,
    cuStreamGetFlags,
    cuStreamGetPriority,
    cuStreamSynchronize,
    cuStreamWaitEvent,
    cuSurfObjectCreate,
    cuSurfObjectDestroy,
    cuSurfObjectGetResourceDesc,
    cuTexObjectCreate,
    cuTexObjectDestroy,
    cuTexObjectGetResourceDesc,
    cuTexObjectGetResourceViewDesc,
];

/// The slot of `name` in [`NAMES`] (evaluated at compile time; an unknown name fails the build).
#[cfg(lazy_cuda)]
const fn slot_of(name: &str) -> usize {
    let mut i = 0;
    while i < NAMES.len() {
        if NAMES[i].len() == name.len() {
            let (a, b) = (NAMES[i].as_bytes(), name.as_bytes());
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a driver function of this table")
}

/// Opens the driver library (once per process) and points every trampoline at it.
///
/// `LOCKSTEP_LIBCUDA` names another file to open (a driver outside the loader's path).
/// Errors: the library cannot be opened — no NVIDIA driver is installed — with the loader's
/// message. The outcome is remembered: later calls return it without trying again.
pub fn load() -> Result<(), String> {
    #[cfg(lazy_cuda)]
    {
        static LOADED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
        LOADED.get_or_init(open_and_resolve).clone()
    }
    #[cfg(not(lazy_cuda))]
    Ok(())
}

#[cfg(lazy_cuda)]
fn open_and_resolve() -> Result<(), String> {
    let file = std::env::var_os("LOCKSTEP_LIBCUDA").unwrap_or_else(|| LIBRARY.into());
    // SAFETY: loading the NVIDIA driver library runs its initialisers, which have no
    // preconditions on the calling program.
    let library = unsafe { libloading::Library::new(&file) }
        .map_err(|e| format!("cannot open {} ({e})", file.to_string_lossy()))?;
    for (slot, name) in SLOTS.iter().zip(NAMES) {
        // SAFETY: the symbol's address is only stored, and only jumped to by the trampoline of
        // the same name, which cust calls with the driver's own signature.
        if let Ok(symbol) = unsafe { library.get::<unsafe extern "C" fn()>(name.as_bytes()) } {
            slot.store(*symbol as *mut (), Ordering::Release);
        }
    }
    // The slots point into the library for the rest of the process: never unload it.
    std::mem::forget(library);
    Ok(())
}

#[cfg(all(test, lazy_cuda))]
mod tests {
    use super::*;

    #[test]
    fn every_name_has_its_own_slot() {
        for (i, name) in NAMES.iter().enumerate() {
            assert_eq!(slot_of(name), i, "{name}");
        }
    }

    #[test]
    fn a_driver_call_before_load_reports_not_initialised() {
        // Whatever the machine has, a slot never resolved answers CUDA_ERROR_NOT_INITIALIZED.
        let f: extern "C" fn() -> u32 = not_loaded;
        assert_eq!(f(), 3);
    }
}
