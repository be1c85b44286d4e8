//! CPU twins of every kernel: the same per-element functions of `lockstep-shared`, looped over
//! on one thread and with rayon. For every input the single-threaded twin, the parallel twin
//! and the GPU give the same bits.

pub mod atomics;
pub mod bridge;
pub mod foundation;
pub mod matmul;
pub mod mg;
pub mod nbody;
