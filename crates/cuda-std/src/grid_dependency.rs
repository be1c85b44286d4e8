//! Programmatic dependent launch (sm_90 and newer): a kernel that may start while the kernel
//! before it on the stream or in the graph is still running, and waits for it on its own.
//!
//! Exists only when the device crate is built for sm_90 (`target_feature = "sm_90"`): the
//! `griddepcontrol` instructions are PTX ISA 7.8 and are refused by ptxas for older targets.
//! Launched without a programmatic dependency (a plain launch, a full graph edge) both are
//! no-ops: the grids before it have completed when it starts.

use core::arch::asm;

/// `griddepcontrol.wait`: blocks the thread until every grid this one depends on has completed
/// and its memory operations are visible — the wait a kernel launched early makes before it
/// reads or writes memory those grids touch. Orders memory (a compiler barrier too).
#[inline(always)]
pub fn wait_for_prerequisite_grids() {
    // SAFETY: waits on the launch's dependencies; no operands, no stack.
    unsafe { asm!("griddepcontrol.wait;", options(nostack)) };
}

/// `griddepcontrol.launch_dependents`: this block no longer holds back the launch of the grids
/// that depend on this one programmatically (they start once every block has signalled or
/// exited, and still wait for this grid's completion in [`wait_for_prerequisite_grids`]).
#[inline(always)]
pub fn launch_dependents() {
    // SAFETY: a scheduling hint on the launch's dependents; no operands, no stack.
    unsafe { asm!("griddepcontrol.launch_dependents;", options(nostack)) };
}
