//! Every lockstep GPU kernel, one module per kernel family.
//!
//! Built only for `nvptx64-nvidia-cuda` (by `lockstep-ptx-builder`); on the host the crate is
//! empty. Each kernel finds its element (or path, or group) from the thread index, checks the
//! bound, and calls the per-element functions in `lockstep-shared` that the CPU twin calls
//! too. Argument order and types are the contract with the host launcher in
//! `crates/host/src/<family>/gpu.rs`, which validates every length before launching.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]

// Probe, histogram and Himeno first, in this order: the module is emitted in declaration order.
#[cfg(target_arch = "nvptx64")]
pub mod probe;
#[cfg(target_arch = "nvptx64")]
pub mod histogram;
#[cfg(target_arch = "nvptx64")]
pub mod himeno;
#[cfg(target_arch = "nvptx64")]
pub mod bridge;
#[cfg(target_arch = "nvptx64")]
pub mod foundation;
#[cfg(target_arch = "nvptx64")]
pub mod matmul;
#[cfg(target_arch = "nvptx64")]
pub mod mg;
#[cfg(target_arch = "nvptx64")]
pub mod nbody;
// Last: kernels of the sm_90 build only (see hopper.rs).
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub mod hopper;
