//! The Minority Game on the GPU (Harada & Murata): tables, the per-step kernel, the grid-sync
//! persistent kernel and the standalone (one game per block) kernel. Every kernel runs the
//! per-group passes of `lockstep_shared::mg` (the contract is written there); one thread owns
//! a group at a time (groups `g = thread, thread + threads, …`), so a group's draws stay in
//! order whatever the grid.

use lockstep_cuda_std::atomic::grid_barrier;
use lockstep_cuda_std::memory::{load_global_i16, load_global_u32, store_global_i16};
use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::thread::grid_size_1d;
use lockstep_shared::mg::{
    Agents, MgBuffers, MgParams, MgStandaloneBuffers, Pass, Recorder, build_tables, group_pass, history_before,
    next_history, settle_s2, settle_s2_side, vote_s2, vote_s2_side, winning_side,
};
use lockstep_shared::xsadd::Xsadd;

// The lean pass, then the entry points: rustc emits the module in this order.
mod s2;
mod entries;

use s2::*;

/// A group's agents in the agent-fastest device layout.
struct DeviceAgents {
    params: MgParams,
    g: u64,
    tables: *mut u32,
    scores: *mut i32,
}

impl Agents for DeviceAgents {
    #[inline(always)]
    fn table(&self, j: u64, k: u32, w: u32) -> u32 {
        let a = self.params.agent(self.g, j);
        // SAFETY: a < n, k < s, w < W: inside the n·s·W words the launcher allocated.
        unsafe { *self.tables.add(self.params.table_index(a, k, w) as usize) }
    }
    #[inline(always)]
    fn set_table(&mut self, j: u64, k: u32, w: u32, v: u32) {
        let a = self.params.agent(self.g, j);
        // SAFETY: as `table`; only this thread touches group g's agents.
        unsafe { *self.tables.add(self.params.table_index(a, k, w) as usize) = v };
    }
    #[inline(always)]
    fn score(&self, j: u64, k: u32) -> i32 {
        let a = self.params.agent(self.g, j);
        // SAFETY: a < n, k < s: inside the n·s scores.
        unsafe { *self.scores.add(self.params.score_index(a, k) as usize) }
    }
    #[inline(always)]
    fn set_score(&mut self, j: u64, k: u32, v: i32) {
        let a = self.params.agent(self.g, j);
        // SAFETY: as `score`; only this thread touches group g's agents.
        unsafe { *self.scores.add(self.params.score_index(a, k) as usize) = v };
    }
}

/// Trace writer: group `g`'s draws at `draws + pos`, used tables at `used[t·n + a]`; null
/// pointers record nothing.
struct DeviceTrace {
    params: MgParams,
    g: u64,
    draws: *mut u32,
    used: *mut u8,
}

impl Recorder for DeviceTrace {
    #[inline(always)]
    fn draw(&mut self, pos: u64, u: u32) {
        if !self.draws.is_null() {
            // SAFETY: pos < L (the group's stream length); the launcher allocated G·L words.
            unsafe { *self.draws.add(pos as usize) = u };
        }
    }
    #[inline(always)]
    fn used(&mut self, t: u32, j: u64, k: u32) {
        if !self.used.is_null() {
            let a = self.params.agent(self.g, j);
            // SAFETY: t < p, a < n: inside the p·n bytes the launcher allocated.
            unsafe { *self.used.add((t as u64 * self.params.n + a) as usize) = k as u8 };
        }
    }
}

fn trace_for(params: &MgParams, g: u64, draws: u64, stride: u64, used: u64) -> DeviceTrace {
    let draws =
        if draws == 0 { core::ptr::null_mut() } else { (draws as *mut u32).wrapping_add((g * stride) as usize) };
    DeviceTrace { params: *params, g, draws, used: used as *mut u8 }
}

/// Builds the tables of groups `first, first + stride, …` and copies each generator to
/// `rng_prev` as well.
///
/// # Safety
/// The buffers hold what [`MgBuffers`] says for `params`.
#[inline(always)]
unsafe fn build_groups(params: &MgParams, b: &MgBuffers, first: u64, stride: u64) {
    let rng = b.rng as *mut Xsadd;
    let prev = b.rng_prev as *mut Xsadd;
    let mut g = first;
    while g < params.groups {
        let mut agents =
            DeviceAgents { params: *params, g, tables: b.tables as *mut u32, scores: b.scores as *mut i32 };
        let mut rec = trace_for(params, g, b.trace_draws, b.draw_stride, 0);
        // SAFETY: g < G generators.
        let mut x = unsafe { *rng.add(g as usize) };
        build_tables(params, params.group_len(g), &mut agents, &mut x, (g == 0) as u64, &mut rec);
        // SAFETY: as above.
        unsafe {
            *rng.add(g as usize) = x;
            *prev.add(g as usize) = x;
        }
        g += stride;
    }
}
