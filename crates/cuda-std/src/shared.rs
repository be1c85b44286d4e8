//! Statically sized shared memory.
//!
//! rustc's NVPTX backend has no way to place a Rust `static` in the `.shared` state space, so
//! [`shared_array!`] declares the array in module-scope PTX (`global_asm!`) and converts its
//! address to a generic pointer. As with CUDA's file-scope `__shared__`, each block that runs a
//! kernel using it gets its own copy.

/// `shared_array![NAME: [T; N]]` → `*mut T` to `N` elements of block-shared memory.
///
/// `NAME` becomes the PTX symbol and must be unique across the kernel crate (the PTX builder
/// refuses a module that declares one twice). The memory is uninitialised at kernel start;
/// write before reading, and put a `sync_threads()` between one thread's write and another's
/// read. Alignment is 16 bytes.
#[macro_export]
macro_rules! shared_array {
    ($name:ident : [$ty:ty; $len:expr]) => {{
        const BYTES: usize = ::core::mem::size_of::<$ty>() * $len;
        ::core::arch::global_asm!(
            concat!(".shared .align 16 .b8 ", stringify!($name), "[{bytes}];"),
            bytes = const BYTES
        );
        let generic: u64;
        // SAFETY: converts the address of the array declared above; no memory is touched.
        unsafe {
            ::core::arch::asm!(
                concat!("cvta.shared.u64 {p}, ", stringify!($name), ";"),
                p = out(reg64) generic,
                options(pure, nomem, nostack)
            )
        };
        generic as *mut $ty
    }};
}
