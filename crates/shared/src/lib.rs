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
// core::{f32,f64}::math::{sqrt, mul_add} on the GPU, where std does not exist; the host uses
// std's (stable) methods, the same correctly rounded operations: see [`fmath`].
#![cfg_attr(target_arch = "nvptx64", feature(core_float_math))]
#![warn(missing_docs)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

/// `sqrt` and `mul_add` (correctly rounded, the same bits on both targets): core's functions
/// on the GPU, std's methods on the host — so the crate builds on stable Rust for the host.
pub mod fmath {
    /// f32.
    pub mod f32 {
        #[cfg(target_arch = "nvptx64")]
        pub use core::f32::math::{mul_add, sqrt};

        /// `√x`, correctly rounded.
        #[cfg(not(target_arch = "nvptx64"))]
        #[inline(always)]
        pub fn sqrt(x: f32) -> f32 {
            x.sqrt()
        }

        /// `x·a + b` with one rounding.
        #[cfg(not(target_arch = "nvptx64"))]
        #[inline(always)]
        pub fn mul_add(x: f32, a: f32, b: f32) -> f32 {
            x.mul_add(a, b)
        }
    }

    /// f64.
    pub mod f64 {
        #[cfg(target_arch = "nvptx64")]
        pub use core::f64::math::{mul_add, sqrt};

        /// `√x`, correctly rounded.
        #[cfg(not(target_arch = "nvptx64"))]
        #[inline(always)]
        pub fn sqrt(x: f64) -> f64 {
            x.sqrt()
        }

        /// `x·a + b` with one rounding.
        #[cfg(not(target_arch = "nvptx64"))]
        #[inline(always)]
        pub fn mul_add(x: f64, a: f64, b: f64) -> f64 {
            x.mul_add(a, b)
        }
    }
}

pub mod axpy;
pub mod bridge;
pub mod himeno;
pub mod histogram;
pub mod matmul;
pub mod mg;
pub mod nbody;
pub mod predicate;
pub mod reduce;
pub mod select;
pub mod special;
pub mod xsadd;
