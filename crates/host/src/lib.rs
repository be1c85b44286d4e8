//! lockstep's host crate: GPU kernels written in Rust whose output agrees with a CPU reference
//! bit for bit.
//!
//! Data flow: the device crate (`crates/kernels`) is compiled to PTX by the PTX builder at
//! build time and embedded here ([`ptx`]). [`Gpu`] owns the CUDA context, the loaded module
//! and a stream. Each kernel family has a launcher type in [`kernels`] that checks every
//! length and parameter before its one `unsafe` launch, and a CPU twin in [`reference`] that
//! calls the same per-element functions of `lockstep-shared`.
//!
//! Errors are [`Error`]: bad input (what was wrong), a CUDA call that failed (which call), no
//! device. Nothing reachable from this API panics on caller input, and no public function is
//! `unsafe`.
#![warn(missing_docs)]

pub mod error;
pub mod gpu;
pub mod kernels;
pub mod launch;
pub mod ptx;
pub mod reference;
pub mod timing;

pub use cust::memory::{CopyDestination, DeviceBuffer, DeviceSlice};
pub use error::{Error, Result};
pub use gpu::Gpu;
