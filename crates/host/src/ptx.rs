//! The PTX module built from `crates/kernels` by `build.rs`, embedded in the binary.

/// The module's text, for the architecture in [`ARCH`].
pub const MODULE: &str = include_str!(concat!(env!("OUT_DIR"), "/lockstep_kernels.ptx"));

/// The architecture the module was built for (`sm_70` unless `LOCKSTEP_PTX_ARCH` said otherwise).
pub const ARCH: &str = include_str!(concat!(env!("OUT_DIR"), "/ptx_arch.txt"));

/// Every kernel (`.entry`) in the module, in module order.
pub const KERNELS: &[&str] = include!(concat!(env!("OUT_DIR"), "/kernel_names.rs"));
