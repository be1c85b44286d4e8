//! Typed kernel handles: a kernel is looked up once, by the one place that writes its name, with
//! its parameter types — `Kernel<'g, (u32, f32, DevicePointer<f32>, DevicePointer<f32>)>` — so a
//! launch with the wrong arity or a wrong type is a compile error, and the error of a failed
//! launch names the kernel from the handle.
//!
//! A family with kernels for several element types (f32 and f64, i32 and i64, …) chooses them
//! by one mechanism: a marker type beside the family's problem types stands for its kernels
//! ([`Family`]), and the element types it has implement [`Element`] of that marker, whose
//! `pick` returns the member of the family's launcher that holds that type's kernels. The
//! family's element trait (`bridge::Precision`, `nbody::NbodyFloat`, …) has `Element<Marker>`
//! as a supertrait, so its generic launches pick without naming a type, and [`family!`] writes
//! both impls in one line in the launcher's file.

use crate::error::Result;
use crate::gpu::Gpu;
use crate::launch::Dims;
use crate::pdl::Edge;
use cust::function::Function;
use cust::memory::DeviceCopy;
use std::ffi::c_void;
use std::marker::PhantomData;

/// A kernel of the module whose parameters are the tuple `A`, in order.
pub(crate) struct Kernel<'g, A> {
    name: &'static str,
    function: Function<'g>,
    params: PhantomData<fn(A)>,
}

impl Gpu {
    /// Looks up kernel `name`, to be launched with parameters `A`
    /// ([`Error::MissingKernel`] when the module has none of that name).
    /// Errors also when `A` does not match the kernel's parameters in the PTX (their count and
    /// each one's size: [`check_params`]).
    pub(crate) fn kernel<A: KernelArgs>(&self, name: &'static str) -> Result<Kernel<'_, A>> {
        check_params(name, &A::sizes())?;
        Ok(Kernel { name, function: self.function(name)?, params: PhantomData })
    }

    /// [`Gpu::kernel`] for a kernel only an architecture-specific image holds (the sm_90
    /// `*_pdl_*` kernels): `None` where the loaded module lacks it ([`Gpu::has_kernel`]), any
    /// other failure an error as there.
    pub(crate) fn kernel_if_loaded<A: KernelArgs>(&self, name: &'static str) -> Result<Option<Kernel<'_, A>>> {
        if self.has_kernel(name) { self.kernel(name).map(Some) } else { Ok(None) }
    }
}

/// Checks a handle's parameter sizes against the PTX's declaration of kernel `name`
/// ([`crate::ptx::parameter_sizes`]; kernels only an architecture-specific image holds are not
/// in the portable PTX and pass). The driver copies each parameter's declared size from the
/// pointer the host gives it, so a count or size that differs would launch with garbage:
/// [`Error::KernelSignature`] instead, naming both lists.
pub(crate) fn check_params(name: &str, host: &[usize]) -> Result<()> {
    let Some(device) = crate::ptx::parameter_sizes(name) else { return Ok(()) };
    if device.len() != host.len() || device.iter().zip(host).any(|(&d, &h)| d as usize != h) {
        return Err(crate::error::Error::KernelSignature {
            kernel: name.to_string(),
            device: format!("{device:?}"),
            host: format!("{host:?}"),
        });
    }
    Ok(())
}

impl<'g, A: KernelArgs> Kernel<'g, A> {
    /// The driver's handle (attributes, occupancy).
    pub(crate) fn function(&self) -> &Function<'g> {
        &self.function
    }

    /// The most threads per block this kernel launches with on this GPU, as the driver reports it
    /// (`cuFuncGetAttribute`, `MAX_THREADS_PER_BLOCK`): what its registers allow, and its launch
    /// bounds' `.maxntid` where it has them.
    pub(crate) fn max_threads(&self) -> Result<u32> {
        use cust::function::FunctionAttribute::MaxThreadsPerBlock;
        let max = self.function.get_attribute(MaxThreadsPerBlock).map_err(crate::error::cuda("cuFuncGetAttribute"))?;
        Ok(max.max(0) as u32)
    }

    /// Blocks of this kernel, `threads` threads and `shared_bytes` of dynamic shared memory each,
    /// resident at once on `gpu`: the driver's occupancy per multiprocessor
    /// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) × multiprocessors.
    pub(crate) fn resident_blocks(&self, gpu: &Gpu, threads: u32, shared_bytes: u32) -> Result<u32> {
        use cust::device::DeviceAttribute::MultiprocessorCount;
        gpu.bind()?;
        let per_sm = self
            .function
            .max_active_blocks_per_multiprocessor(cust::function::BlockSize::x(threads), shared_bytes as usize)
            .map_err(crate::error::cuda("cuOccupancyMaxActiveBlocksPerMultiprocessor"))?;
        let sms = gpu.attribute(MultiprocessorCount)?;
        Ok(per_sm.saturating_mul(sms.max(0) as u32))
    }

    /// Lets launches of this kernel ask for up to `bytes` of dynamic shared memory, past the
    /// 48 KiB a launch gets without asking (`cuFuncSetAttribute`; at most the GPU's
    /// [`Gpu::shared_memory_per_block_optin`]).
    pub(crate) fn allow_dynamic_shared(&self, bytes: u32) -> crate::Result<()> {
        use cust::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYNAMIC;
        let bytes = i32::try_from(bytes).unwrap_or(i32::MAX);
        // SAFETY: the handle is a function of the module `gpu` keeps loaded for `'g`; the call
        // sets one of its attributes and touches no other memory.
        let r = unsafe { cust::sys::cuFuncSetAttribute(self.function.to_raw(), MAX_DYNAMIC, bytes) };
        crate::error::driver("cuFuncSetAttribute", r)
    }

    /// Launches the kernel on `gpu`'s stream (nothing for an empty grid); a failed launch is
    /// [`Error::Launch`](crate::error::Error::Launch) naming it.
    ///
    /// # Safety
    /// `A` is the kernel's parameter list (the handle's type says so; the kernel's source must
    /// agree), and every device address among `args` is valid for what the kernel reads and
    /// writes for this grid.
    pub(crate) unsafe fn launch(&self, gpu: &Gpu, dims: impl Into<Dims>, shared_bytes: u32, args: A) -> Result<()> {
        args.with_pointers(|pointers| {
            // SAFETY: one pointer per parameter, each to a value of the parameter's type
            // (`A`), alive for the call; the rest is the caller's contract.
            unsafe { gpu.launch(&self.function, self.name, dims, shared_bytes, pointers) }
        })
    }

    /// As [`Kernel::launch`], to `target`: the GPU's stream, or a graph being recorded
    /// ([`crate::graph::Recorder`]), after the launch before it there by a full edge.
    ///
    /// # Safety
    /// As [`Kernel::launch`]; for a graph, the device addresses stay valid while it lives.
    pub(crate) unsafe fn launch_to(
        &self,
        gpu: &Gpu,
        target: &mut crate::graph::Target<'_>,
        dims: impl Into<Dims>,
        shared_bytes: u32,
        args: A,
    ) -> Result<()> {
        // SAFETY: the caller's contract; a full edge asks nothing of the kernel.
        unsafe { self.launch_after(gpu, target, Edge::Full, dims, shared_bytes, args) }
    }

    /// As [`Kernel::launch_to`], following the launch before it on `target` by `edge`.
    ///
    /// # Safety
    /// As [`Kernel::launch_to`]; with [`Edge::Programmatic`], `crate::pdl`'s invariant: the
    /// kernel is a `*_pdl_*` kernel.
    pub(crate) unsafe fn launch_after(
        &self,
        gpu: &Gpu,
        target: &mut crate::graph::Target<'_>,
        edge: Edge,
        dims: impl Into<Dims>,
        shared_bytes: u32,
        args: A,
    ) -> Result<()> {
        match (target, edge) {
            // SAFETY: the caller's contract.
            (crate::graph::Target::Stream, edge) => args.with_pointers(|pointers| {
                // SAFETY: one pointer per parameter, each to a value of the parameter's type
                // (`A`), alive for the call; the rest is the caller's contract.
                unsafe { gpu.launch_after(edge, &self.function, self.name, dims.into(), shared_bytes, pointers) }
            }),
            (crate::graph::Target::Graph(recorder), edge) => args.with_pointers(|pointers| {
                // SAFETY: one pointer per parameter, each to a value of the parameter's type
                // (`A`), alive for the call; the rest is the caller's contract.
                unsafe { recorder.add(&self.function, dims, shared_bytes, pointers, edge) }
            }),
        }
    }
}

/// A kernel family, by the marker type that stands for it: its launcher `Loaded<'g>` holds one
/// kernel set `Set<'g, T>` per element type `T` it has (the types that are its [`Element`]s).
pub(crate) trait Family {
    /// The launcher holding the kernels (`Bridge<'g>`, `Nbody<'g>`, …).
    type Loaded<'g>;
    /// The kernels of element type `T` (one handle, an array or a tuple of handles).
    type Set<'g, T: DeviceCopy>;
}

mod sealed {
    /// The element types kernels are written for.
    pub trait Scalar {}
    impl Scalar for u32 {}
    impl Scalar for i32 {}
    impl Scalar for u64 {}
    impl Scalar for i64 {}
    impl Scalar for f32 {}
    impl Scalar for f64 {}
}

/// An element type of family `F` (sealed: implemented only for the scalar types `u32`, `i32`,
/// `u64`, `i64`, `f32`, `f64`, by [`family!`]): picks its kernels from the family's launcher.
pub(crate) trait Element<F: Family>: sealed::Scalar + DeviceCopy + cust::memory::bytemuck::Zeroable {
    /// `loaded`'s kernels of `Self`.
    fn pick<'a, 'g>(loaded: &'a F::Loaded<'g>) -> &'a F::Set<'g, Self>;
}

/// `family!(Marker: Launcher holds Set { f32: field, f64: field })` makes `Marker` the
/// [`Family`] whose kernels `Launcher<'g>` holds, `Set<'g, T>` per type, and each listed type
/// its [`Element`], picking the named field.
macro_rules! family {
    ($family:ty: $loaded:ident holds $set:ident { $($t:ident: $field:ident),+ $(,)? }) => {
        impl $crate::kernel::Family for $family {
            type Loaded<'g> = $loaded<'g>;
            type Set<'g, T: ::cust::memory::DeviceCopy> = $set<'g, T>;
        }
        $(
            impl $crate::kernel::Element<$family> for $t {
                fn pick<'a, 'g>(
                    loaded: &'a <$family as $crate::kernel::Family>::Loaded<'g>,
                ) -> &'a <$family as $crate::kernel::Family>::Set<'g, $t> {
                    &loaded.$field
                }
            }
        )+
    };
}
pub(crate) use family;

/// A `#[repr(C)]` struct of `lockstep-shared` passed to a kernel by value (`MgParams`, `Bins`,
/// …): the family that passes it implements `DeviceCopy` for `Param<ItsStruct>`, with the
/// reason its layout is plain data.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Param<T>(pub T);

/// A kernel's parameter list: a tuple of values the driver copies to the device.
pub(crate) trait KernelArgs {
    /// Calls `f` with one pointer per parameter, in order.
    fn with_pointers<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R;
    /// Each parameter's size in bytes, in order (what the driver copies from each pointer).
    fn sizes() -> Vec<usize>;
}

macro_rules! kernel_args {
    ($($t:ident $i:tt),+) => {
        impl<$($t: DeviceCopy),+> KernelArgs for ($($t,)+) {
            fn with_pointers<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R {
                f(&[$(&self.$i as *const $t as *mut c_void),+])
            }
            fn sizes() -> Vec<usize> {
                vec![$(std::mem::size_of::<$t>()),+]
            }
        }
    };
}

kernel_args!(A 0);
kernel_args!(A 0, B 1);
kernel_args!(A 0, B 1, C 2);
kernel_args!(A 0, B 1, C 2, D 3);
kernel_args!(A 0, B 1, C 2, D 3, E 4);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

#[cfg(test)]
mod tests {
    use super::*;
    use cust::memory::DevicePointer;

    /// A kernel of the module whose PTX parameters are `sizes` (tidy wants each kernel's name
    /// written once in the host crate, by its handle).
    fn kernel_with(sizes: &[usize]) -> &'static str {
        crate::ptx::KERNELS
            .iter()
            .copied()
            .find(|k| {
                crate::ptx::parameter_sizes(k).is_some_and(|p| p.iter().map(|&x| x as usize).eq(sizes.iter().copied()))
            })
            .expect("a kernel with these parameter sizes")
    }

    #[test]
    fn handles_are_checked_against_the_ptx_parameters() {
        // (n: u32, a: f32, x: *const f32, y: *mut f32), as the foundation's axpy
        type Axpy = (u32, f32, DevicePointer<f32>, DevicePointer<f32>);
        let k = kernel_with(&Axpy::sizes());
        check_params(k, &Axpy::sizes()).unwrap();
        // one parameter short, or a u64 where a u32 is declared: refused, naming both lists
        let short = check_params(k, &<(u32, f32, DevicePointer<f32>)>::sizes()).unwrap_err().to_string();
        assert!(short.contains(k) && short.contains("[4, 4, 8, 8]") && short.contains("[4, 4, 8]"), "{short}");
        assert!(check_params(k, &<(u64, f32, DevicePointer<f32>, DevicePointer<f32>)>::sizes()).is_err());
        // structs by value: the Minority Game's (params, buffers, k, h0)
        let mg = [size_of::<lockstep_shared::mg::MgParams>(), size_of::<lockstep_shared::mg::MgBuffers>(), 4, 4];
        check_params(kernel_with(&mg), &mg).unwrap();
    }
}
