//! Per-element math of every lockstep kernel, written once.
//!
//! This crate is `no_std` and is compiled twice: for `nvptx64-nvidia-cuda` inside the kernel
//! crate, and for the host inside the CPU references. Both call the same functions, so the GPU
//! and the CPU perform the same IEEE operations in the same order and round the same way:
//! bit-for-bit parity holds by construction. Rules for code here:
//!
//! - plain `a * b + c` (never contracted into FMA by rustc on either target); `mul_add` only
//!   where both sides should compute a fused, correctly rounded result;
//! - transcendental functions from the pure-Rust [`libm`] crate, never from a platform library;
//! - no approximate instructions, no `f32::sqrt` of a platform library (core's `sqrt` is
//!   correctly rounded on both targets);
//! - every reduction order is written down as data (see [`reduce`]) so the device's shuffle or
//!   shared-memory tree and the host's loop combine the same pairs.
#![no_std]
#![feature(core_float_math)] // core::{f32,f64}::math::{sqrt, mul_add} (nbody, bridge::normal)
#![warn(missing_docs)]

pub mod axpy;
pub mod bridge;
pub mod himeno;
pub mod histogram;
pub mod matmul;
pub mod mg;
pub mod nbody;
pub mod predicate;
pub mod reduce;
pub mod special;
pub mod xsadd;
