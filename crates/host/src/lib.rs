//! lockstep: GPU kernels written in Rust whose output agrees with a CPU reference bit for bit.
//!
//! One module per family — [`bridge`], [`histogram`], [`himeno`], [`nbody`], [`matmul`],
//! [`mg`], [`foundation`] — holds the family's problem types and validation, its CPU twin
//! (`*_seq` on one thread, `*_par` with rayon) and its GPU launcher, and one function that runs
//! on any [`Backend`]: switching CPU and GPU is one value.
//!
//! GPU support is the `gpu` feature. With it, the device crate's PTX module ([`ptx`]) is
//! embedded and [`Gpu`] owns the CUDA context, the module and a stream; the driver library is
//! opened when a GPU is first asked for, so a program starts on a machine without one and
//! [`Gpu::new`] returns [`Error::NoDriver`] there. Without the feature lockstep builds on any
//! machine (no CUDA needed) and [`Gpu::new`] says the feature is off.
//!
//! Errors are [`Error`]: bad input (what was wrong), a CUDA call that failed (which call), no
//! driver or device. Nothing reachable from this API panics on caller input, and no public
//! function is `unsafe`.
#![warn(missing_docs)]

#[cfg(feature = "gpu")]
mod aggregation;
mod backend;
pub mod bridge;
pub mod checkpoint;
pub mod dist;
#[cfg(feature = "gpu")]
mod driver;
pub mod error;
pub mod foundation;
#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(feature = "gpu")]
mod graph;
#[cfg(not(feature = "gpu"))]
#[path = "gpu_absent.rs"]
pub mod gpu;
pub mod himeno;
pub mod histogram;
#[cfg(feature = "gpu")]
mod kernel;
pub mod launch;
pub mod matmul;
pub mod mg;
pub mod nbody;
#[cfg(feature = "gpu")]
mod pdl;
#[cfg(feature = "gpu")]
mod pinned;
pub mod ptx;
pub mod stream;
#[cfg(feature = "gpu")]
pub mod timing;

pub use backend::{Backend, DeviceValue};
#[cfg(feature = "gpu")]
pub use cust::memory::{CopyDestination, DeviceBuffer, DeviceSlice};
pub use error::{Error, Result};
pub use gpu::Gpu;
#[cfg(feature = "gpu")]
pub use pinned::Pinned;
pub use stream::{STREAM_VERSION, VERSION, check_stream};

/// README.md's Rust blocks, compiled and run as doctests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
