//! The Minority Game on the GPU (Harada & Murata): tables, the per-step kernel, the grid-sync
//! persistent kernel and the standalone (one game per block) kernel. Every kernel runs the
//! per-group passes of `lockstep_shared::mg` (the contract is written there); one thread owns
//! a group at a time (groups `g = thread, thread + threads, …`), so a group's draws stay in
//! order whatever the grid.

use lockstep_cuda_std::atomic::{load_volatile_u32, threadfence};
use lockstep_cuda_std::memory::{load_global_i16, load_global_u32, store_global_i16};
use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::thread::grid_size_1d;
use lockstep_shared::mg::{
    Agents, MgBuffers, MgParams, MgStandaloneBuffers, Pass, Recorder, build_tables, group_pass, history_before,
    next_history, settle_s2, vote_s2, winning_side,
};
use lockstep_shared::xsadd::Xsadd;

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

/// Agents whose data one thread loads at once in the lean `s = 2` pass (memory-level
/// parallelism: the loads of a batch are all issued before its first store).
const S2_BATCH: usize = 8;

/// The lean `s = 2` pass (the `*_s2` kernels): per agent one packed `i16` state `(d << 1) | k`
/// in the scores buffer (see `lockstep_shared::mg::choose_s2`) and the two table words; no
/// replayed draw (the state keeps the used table), so `rng_prev` is not used. Agents are
/// handled in batches of [`S2_BATCH`]: all loads of a batch first, then the agents in order.
///
/// # Safety
/// As [`build_groups`]; `params.s == 2`, `params.p ≤ S2_MAX_P`, the scores buffer zeroed
/// before pass 0 (state 0: both scores 0).
#[inline(always)]
unsafe fn pass_groups_s2<const STANDALONE: bool>(
    params: &MgParams,
    b: &MgBuffers,
    pass: Pass,
    first: u64,
    stride: u64,
) -> u64 {
    // One monomorphised loop per kind of pass (no per-agent branches on it): settle and vote
    // (the same table word when h div 32 agrees, always for m ≤ 5), vote only (pass 0),
    // settle only (pass p).
    // SAFETY: forwarded (every arm).
    unsafe {
        match (pass.settle, pass.vote) {
            (Some((hs, _)), Some((_, hv))) if hs >> 5 == hv >> 5 => {
                s2_pass_kind::<STANDALONE, true, true, true>(params, b, pass, first, stride)
            }
            (Some(_), Some(_)) => s2_pass_kind::<STANDALONE, true, true, false>(params, b, pass, first, stride),
            (None, _) => s2_pass_kind::<STANDALONE, false, true, false>(params, b, pass, first, stride),
            (Some(_), None) => s2_pass_kind::<STANDALONE, true, false, false>(params, b, pass, first, stride),
        }
    }
}

/// One kind of pass in the distributed form ([`s2_groups`]) or the standalone one
/// ([`s2_groups_standalone`], `STANDALONE`).
///
/// # Safety
/// As [`s2_groups`].
#[inline(always)]
unsafe fn s2_pass_kind<const STANDALONE: bool, const SETTLE: bool, const VOTE: bool, const SAME: bool>(
    params: &MgParams,
    b: &MgBuffers,
    pass: Pass,
    first: u64,
    stride: u64,
) -> u64 {
    // SAFETY: forwarded.
    unsafe {
        if STANDALONE {
            s2_groups_standalone::<SETTLE, VOTE, SAME>(params, b, pass, first, stride)
        } else {
            s2_groups::<SETTLE, VOTE, SAME>(params, b, pass, first, stride)
        }
    }
}

/// [`pass_groups_s2`] for one kind of pass: `SETTLE`/`VOTE` as `pass` says, `SAME` when both
/// use the same table word.
///
/// # Safety
/// As [`pass_groups_s2`], with the const parameters matching `pass`.
#[inline(always)]
unsafe fn s2_groups<const SETTLE: bool, const VOTE: bool, const SAME: bool>(
    params: &MgParams,
    b: &MgBuffers,
    pass: Pass,
    first: u64,
    stride: u64,
) -> u64 {
    let n = params.n as usize;
    let gs = params.groups;
    let (hs, ws) = pass.settle.unwrap_or((0, 0));
    let hv = match pass.vote {
        Some((_, h)) => h,
        None => 0,
    };
    // Word h div 32 of table 0 at history h starts at (h div 32)·n, table 1's W·n words later.
    let tables = b.tables as *const u32;
    let t1 = params.words as usize * n;
    let ts0 = tables.wrapping_add((hs >> 5) as usize * n);
    let tv0 = tables.wrapping_add((hv >> 5) as usize * n);
    let state = b.scores as *mut i16;
    let rng = b.rng as *mut Xsadd;
    // One agent's data: (packed state, settle words of tables 0 and 1, vote words), from the
    // agent's element index `o` past the bases (`st`: states, `s`: settle word of table 0,
    // `v`: vote word of table 0).
    // SAFETY (callers): the bases plus o address agent g + j·G < n for a local agent j < len:
    // inside the n states (the scores buffer holds 2n i32) and each table's n words.
    let load = |st: *const i16, s: *const u32, v: *const u32, o: usize| -> (i32, u32, u32, u32, u32) {
        // SAFETY: see above.
        unsafe {
            let x = *st.add(o) as i32;
            let (s0, s1) = if SETTLE { (*s.add(o), *s.add(o + t1)) } else { (0, 0) };
            let (v0, v1) = if !VOTE || SAME { (s0, s1) } else { (*v.add(o), *v.add(o + t1)) };
            (x, s0, s1, v0, v1)
        }
    };
    // Batches (offsets i·G as u32) in the hot pass kind only (settle and vote from one word:
    // every pass but the first and last when m ≤ 5), so the others add no registers.
    let narrow = SETTLE && VOTE && SAME && gs < 1 << 28;
    let step32 = gs as u32;
    let mut ones = 0u64;
    let mut g = first;
    while g < gs {
        // SAFETY: g < G generators (a settle-only pass draws nothing: no copy).
        let mut cur = if VOTE { unsafe { *rng.add(g as usize) } } else { Xsadd { s: [0; 4] } };
        let mut play = |x: (i32, u32, u32, u32, u32), st: *mut i16| {
            // SAFETY: as `load`; only this thread touches group g's agents.
            unsafe { s2_agent::<SETTLE, VOTE>(x, st, (hs, ws), hv, &mut cur, &mut ones) }
        };
        let mut left = params.group_len(g);
        let mut a = g as usize;
        let step = gs as usize;
        if narrow {
            // Whole batches: every load of the batch, then the agents in order.
            // The last `cnt < 8` agents of the group as one guarded batch (their loads in flight
            // together too, instead of one round trip each).
            macro_rules! batch {
                ($cnt:expr; $($i:literal => $x:ident),*) => {{
                    let cnt: usize = $cnt;
                    let (bs, b0, bv) = (state.wrapping_add(a), ts0.wrapping_add(a), tv0.wrapping_add(a));
                    $( let $x = if $i < cnt { load(bs, b0, bv, (step32 * $i) as usize) } else { (0, 0, 0, 0, 0) }; )*
                    $( if $i < cnt { play($x, bs.wrapping_add((step32 * $i) as usize)); } )*
                    a += step * cnt;
                }};
            }
            while left >= S2_BATCH as u64 {
                batch!(S2_BATCH; 0 => x0, 1 => x1, 2 => x2, 3 => x3, 4 => x4, 5 => x5, 6 => x6, 7 => x7);
                left -= S2_BATCH as u64;
            }
            if left > 0 {
                batch!(left as usize; 0 => x0, 1 => x1, 2 => x2, 3 => x3, 4 => x4, 5 => x5, 6 => x6);
                left = 0;
            }
        }
        while left > 0 {
            play(load(state, ts0, tv0, a), state.wrapping_add(a));
            a += step;
            left -= 1;
        }
        if VOTE {
            // SAFETY: as above (a settle-only pass draws nothing).
            unsafe { *rng.add(g as usize) = cur };
        }
        g += stride;
    }
    ones
}

/// One agent of the lean pass: settle (with `SETTLE`: history and winner `settle`), vote (with
/// `VOTE`, at history `hv`, drawing from `cur`, counting side 1 in `ones`) and store the new
/// packed state at `st`.
///
/// # Safety
/// `st` is the agent's state, which only this thread touches.
#[inline(always)]
unsafe fn s2_agent<const SETTLE: bool, const VOTE: bool>(
    x: (i32, u32, u32, u32, u32),
    st: *mut i16,
    settle: (u32, u32),
    hv: u32,
    cur: &mut Xsadd,
    ones: &mut u64,
) {
    let (x, s0, s1, v0, v1) = x;
    let d = if SETTLE { settle_s2(x, s0, s1, settle.0, settle.1) } else { x >> 1 };
    let mut out = d << 1;
    if VOTE {
        let (side, packed) = vote_s2(d, cur.next_u32(), v0, v1, hv);
        *ones += side as u64;
        out = packed;
    }
    // SAFETY: the caller's contract.
    unsafe { *st = out as i16 };
}

/// [`s2_groups`] for the standalone kernel: the batches load and store through
/// `ld.global`/`st.global` at 32-bit offsets (`lockstep_cuda_std::memory`: no 64-bit address
/// per agent or per offset stays live) and a group's last `len mod 8` agents are played one
/// round trip each instead of as a guarded batch (1,024-agent groups: no tail but one). sm_90
/// registers of `mg_standalone_s2` 128 → 80, so 2 blocks of 352 or 384 fit an SM and all 224
/// games of the standalone configuration stay resident with at most 3 groups per thread.
/// (The distributed kernels keep [`s2_groups`]: at 96 registers `mg_step_s2` ran 5 blocks per
/// SM and its capped one-wave grid got 11 % slower on an H200.)
///
/// # Safety
/// As [`s2_groups`].
#[inline(always)]
unsafe fn s2_groups_standalone<const SETTLE: bool, const VOTE: bool, const SAME: bool>(
    params: &MgParams,
    b: &MgBuffers,
    pass: Pass,
    first: u64,
    stride: u64,
) -> u64 {
    let n = params.n as usize;
    let gs = params.groups;
    let (hs, ws) = pass.settle.unwrap_or((0, 0));
    let hv = match pass.vote {
        Some((_, h)) => h,
        None => 0,
    };
    // Word h div 32 of table 0 at history h starts at (h div 32)·n, table 1's W·n words later.
    let tables = b.tables as *const u32;
    let t1 = params.words as usize * n;
    let ts0 = tables.wrapping_add((hs >> 5) as usize * n);
    let tv0 = tables.wrapping_add((hv >> 5) as usize * n);
    let state = b.scores as *mut i16;
    let rng = b.rng as *mut Xsadd;
    // One agent's data: (packed state, settle words of tables 0 and 1, vote words), from the
    // agent's element index `o` past the bases (`st`: states, `s`: settle word of table 0,
    // `v`: vote word of table 0).
    // SAFETY (callers): the bases plus o address agent g + j·G < n for a local agent j < len:
    // inside the n states (the scores buffer holds 2n i32) and each table's n words.
    let load = |st: *const i16, s: *const u32, v: *const u32, o: usize| -> (i32, u32, u32, u32, u32) {
        // SAFETY: see above.
        unsafe {
            let x = *st.add(o) as i32;
            let (s0, s1) = if SETTLE { (*s.add(o), *s.add(o + t1)) } else { (0, 0) };
            let (v0, v1) = if !VOTE || SAME { (s0, s1) } else { (*v.add(o), *v.add(o + t1)) };
            (x, s0, s1, v0, v1)
        }
    };
    // Batches (offsets i·G as u32) in the hot pass kind only (settle and vote from one word:
    // every pass but the first and last when m ≤ 5), so the others add no registers.
    let narrow = SETTLE && VOTE && SAME && gs < 1 << 28;
    let step32 = gs as u32;
    let mut ones = 0u64;
    let mut g = first;
    while g < gs {
        // SAFETY: g < G generators (a settle-only pass draws nothing: no copy).
        let mut cur = if VOTE { unsafe { *rng.add(g as usize) } } else { Xsadd { s: [0; 4] } };
        let mut play = |x: (i32, u32, u32, u32, u32)| s2_play::<SETTLE, VOTE>(x, (hs, ws), hv, &mut cur, &mut ones);
        let mut left = params.group_len(g);
        let mut a = g as usize;
        let step = gs as usize;
        if narrow {
            // Whole batches: every load of the batch, then the agents in order.
            // The last `cnt < 8` agents of the group as one guarded batch (their loads in flight
            // together too, instead of one round trip each).
            // Global loads and stores at 32-bit offsets `i·G` from three bases per batch
            // (`lockstep_cuda_std::memory`): no 64-bit address per agent stays live, which
            // keeps the registers down.
            // SAFETY (every use below): the bases plus i·G address agent g + (j + i)·G < n for
            // a local agent j + i < len (as `load`); only this thread touches group g's agents.
            macro_rules! batch {
                ($cnt:expr; $($i:literal => $x:ident),*) => {{
                    let cnt: usize = $cnt;
                    let (bs, b0, b1) = (state.wrapping_add(a), ts0.wrapping_add(a), ts0.wrapping_add(a + t1));
                    $( let $x = if $i < cnt {
                        let o = step32 * $i;
                        // SAFETY: see above.
                        let (x, s0, s1) = unsafe { (load_global_i16(bs, o), load_global_u32(b0, o), load_global_u32(b1, o)) };
                        (x, s0, s1, s0, s1)
                    } else { (0, 0, 0, 0, 0) }; )*
                    $( if $i < cnt {
                        let out = play($x);
                        // SAFETY: see above.
                        unsafe { store_global_i16(bs, step32 * $i, out) };
                    } )*
                    a += step * cnt;
                }};
            }
            while left >= S2_BATCH as u64 {
                batch!(S2_BATCH; 0 => x0, 1 => x1, 2 => x2, 3 => x3, 4 => x4, 5 => x5, 6 => x6, 7 => x7);
                left -= S2_BATCH as u64;
            }
        }
        while left > 0 {
            let out = play(load(state, ts0, tv0, a));
            // SAFETY: as `load`; only this thread touches group g's agents.
            unsafe { *state.add(a) = out as i16 };
            a += step;
            left -= 1;
        }
        if VOTE {
            // SAFETY: as above (a settle-only pass draws nothing).
            unsafe { *rng.add(g as usize) = cur };
        }
        g += stride;
    }
    ones
}

/// One agent of the lean pass: settle (with `SETTLE`: history and winner `settle`), vote (with
/// `VOTE`, at history `hv`, drawing from `cur`, counting side 1 in `ones`); returns the new
/// packed state (the caller stores its low 16 bits).
#[inline(always)]
fn s2_play<const SETTLE: bool, const VOTE: bool>(
    x: (i32, u32, u32, u32, u32),
    settle: (u32, u32),
    hv: u32,
    cur: &mut Xsadd,
    ones: &mut u64,
) -> i32 {
    let (x, s0, s1, v0, v1) = x;
    let d = if SETTLE { settle_s2(x, s0, s1, settle.0, settle.1) } else { x >> 1 };
    let mut out = d << 1;
    if VOTE {
        let (side, packed) = vote_s2(d, cur.next_u32(), v0, v1, hv);
        *ones += side as u64;
        out = packed;
    }
    out
}

/// Pass `pass` for groups `first, first + stride, …`; returns this thread's side-1 votes.
/// `S2`: the lean `s = 2` pass without trace (the `*_s2` kernels, [`pass_groups_s2`]).
///
/// # Safety
/// As [`build_groups`]; with `S2`, as [`pass_groups_s2`].
#[inline(always)]
unsafe fn pass_groups<const S2: bool>(params: &MgParams, b: &MgBuffers, pass: Pass, first: u64, stride: u64) -> u64 {
    if S2 {
        // SAFETY: forwarded.
        return unsafe { pass_groups_s2::<false>(params, b, pass, first, stride) };
    }
    let rng = b.rng as *mut Xsadd;
    let prevs = b.rng_prev as *mut Xsadd;
    let mut ones = 0u64;
    let mut g = first;
    while g < params.groups {
        let mut agents =
            DeviceAgents { params: *params, g, tables: b.tables as *mut u32, scores: b.scores as *mut i32 };
        let mut rec = trace_for(params, g, b.trace_draws, b.draw_stride, b.trace_used);
        // SAFETY: g < G generators in both arrays.
        let (mut cur, mut prev) = unsafe { (*rng.add(g as usize), *prevs.add(g as usize)) };
        let snapshot = cur;
        let len = params.group_len(g);
        ones += group_pass(params, g, len, &mut agents, &mut prev, &mut cur, pass, &mut rec);
        // SAFETY: as above.
        unsafe {
            *rng.add(g as usize) = cur;
            *prevs.add(g as usize) = snapshot;
        }
        g += stride;
    }
    ones
}

/// Builds every agent's tables, one thread per group (grid-stride).
///
/// # Safety
/// `b` holds device buffers of the sizes [`MgBuffers`] documents for `params`; `b.rng` holds
/// each group's generator at its first table draw.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_init_tables(params: MgParams, b: MgBuffers) {
    // SAFETY: forwarded from the launch contract.
    unsafe { build_groups(&params, &b, index_1d() as u64, grid_size_1d()) };
}

/// Pass `k` of a distributed game (`0 ≤ k ≤ p`), one launch per pass: settles step `k − 1`
/// and votes in step `k` (adding this grid's side-1 votes to `ones[k]`). The history comes
/// from `h0` and the counts of earlier launches, which the kernel boundary makes visible.
///
/// # Safety
/// As [`mg_init_tables`], after it and after passes `0..k` completed.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_step(params: MgParams, b: MgBuffers, k: u32, h0: u32) {
    // SAFETY: forwarded from the launch contract.
    unsafe { step_impl::<false>(params, b, k, h0) }
}

/// [`mg_step`] for `s = 2` without trace (fewer registers, loads issued together).
///
/// # Safety
/// As [`mg_step`]; `params.s == 2`, trace addresses unused.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_step_s2(params: MgParams, b: MgBuffers, k: u32, h0: u32) {
    // SAFETY: forwarded from the launch contract.
    unsafe { step_impl::<true>(params, b, k, h0) }
}

#[inline(always)]
unsafe fn step_impl<const S2: bool>(params: MgParams, b: MgBuffers, k: u32, h0: u32) {
    let ones = b.ones as *mut u64;
    // SAFETY: t < k ≤ p counts, written by earlier launches.
    let read = |t: u32| unsafe { *ones.add(t as usize) };
    let pass = if k == 0 {
        Pass::new(0, params.p, h0, 0, h0)
    } else {
        let h_prev = history_before(h0, k - 1, &params, read);
        let w_prev = winning_side(read(k - 1), params.n);
        Pass::new(k, params.p, h_prev, w_prev, next_history(h_prev, w_prev, params.history_mask()))
    };
    // SAFETY: forwarded from the launch contract.
    let votes = unsafe { pass_groups::<S2>(&params, &b, pass, index_1d() as u64, grid_size_1d()) };
    if k < params.p && votes > 0 {
        // SAFETY: k < p counts.
        unsafe { atomic_add(ones.add(k as usize), votes) };
    }
}

/// Grid-wide barrier from an arrival counter and a generation flag (`bar[0]`, `bar[1]`, both
/// zero at launch). Correct only when every block of the grid is resident at once, which the
/// launcher checks against the occupancy before launching.
///
/// # Safety
/// `bar` points to two `u32` in global memory used by nothing else; every thread of every
/// block calls it the same number of times.
#[inline(always)]
unsafe fn grid_barrier(bar: *mut u32, blocks: u32) {
    sync_threads();
    if thread_idx_x() == 0 {
        // SAFETY: bar[0..2] are valid (contract); all accesses are atomic or volatile.
        unsafe {
            let generation = bar.add(1);
            let seen = load_volatile_u32(generation);
            threadfence();
            if atomic_add(bar, 1u32) == blocks - 1 {
                atomic_cas(bar, blocks, 0u32);
                threadfence();
                atomic_add(generation, 1u32);
            } else {
                while load_volatile_u32(generation) == seen {}
            }
            threadfence();
        }
    }
    sync_threads();
}

/// A whole distributed game in one persistent kernel: tables, then passes `0..=p` with a
/// grid-wide barrier after each (the pass's votes complete before anyone reads them).
/// `bar` is two zeroed `u32`.
///
/// # Safety
/// As [`mg_init_tables`]; every block of the grid is co-resident (the launcher refuses larger
/// grids: a non-resident block would never arrive and the barrier would deadlock).
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_grid_sync(params: MgParams, b: MgBuffers, h0: u32, bar: *mut u32) {
    let votes_now = shared_array![MG_GRID_SYNC_VOTES: [u64; 1]];
    // SAFETY: forwarded from the launch contract.
    unsafe { grid_sync_impl::<false>(params, b, h0, bar, votes_now) }
}

/// [`mg_grid_sync`] for `s = 2` without trace.
///
/// # Safety
/// As [`mg_grid_sync`]; `params.s == 2`, trace addresses unused.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_grid_sync_s2(params: MgParams, b: MgBuffers, h0: u32, bar: *mut u32) {
    let votes_now = shared_array![MG_GRID_SYNC_S2_VOTES: [u64; 1]];
    // SAFETY: forwarded from the launch contract.
    unsafe { grid_sync_impl::<true>(params, b, h0, bar, votes_now) }
}

#[inline(always)]
unsafe fn grid_sync_impl<const S2: bool>(params: MgParams, b: MgBuffers, h0: u32, bar: *mut u32, votes_now: *mut u64) {
    let first = index_1d() as u64;
    let stride = grid_size_1d();
    let blocks = grid_dim_x();
    let ones = b.ones as *mut u64;
    // SAFETY: forwarded from the launch contract.
    unsafe { build_groups(&params, &b, first, stride) };
    let mask = params.history_mask();
    let (mut h_prev, mut w_prev, mut h_cur) = (h0, 0u32, h0);
    for k in 0..=params.p {
        let pass = Pass::new(k, params.p, h_prev, w_prev, h_cur);
        // SAFETY: forwarded from the launch contract.
        let votes = unsafe { pass_groups::<S2>(&params, &b, pass, first, stride) };
        if k == params.p {
            break;
        }
        if votes > 0 {
            // SAFETY: k < p counts.
            unsafe { atomic_add(ones.add(k as usize), votes) };
        }
        // SAFETY: bar is two zeroed u32 (contract); every thread calls the barrier each pass.
        unsafe { grid_barrier(bar, blocks) };
        if thread_idx_x() == 0 {
            // SAFETY: the atomic read sees every block's adds (they precede the barrier).
            unsafe { *votes_now = atomic_add(ones.add(k as usize), 0u64) };
        }
        sync_threads();
        // SAFETY: written by thread 0 before the barrier above.
        let total = unsafe { *votes_now };
        sync_threads();
        w_prev = winning_side(total, params.n);
        h_prev = h_cur;
        h_cur = next_history(h_cur, w_prev, mask);
    }
}

/// The standalone model: block `b` plays trials `b, b + gridDim, …`, each a whole game in the
/// block's own workspace, its threads owning groups `thread, thread + blockDim, …`; votes meet
/// in shared memory and a block barrier ends each pass.
///
/// # Safety
/// `sb` holds device buffers of the sizes [`MgStandaloneBuffers`] documents for `params`, with
/// one workspace per block of the grid.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_standalone(params: MgParams, sb: MgStandaloneBuffers) {
    let votes = shared_array![MG_STANDALONE_VOTES: [u64; 3]];
    // SAFETY: forwarded from the launch contract.
    unsafe { standalone_impl::<false>(params, sb, votes) }
}

/// [`mg_standalone`] for `s = 2` without trace.
///
/// # Safety
/// As [`mg_standalone`]; `params.s == 2`, trace addresses unused.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_standalone_s2(params: MgParams, sb: MgStandaloneBuffers) {
    let votes = shared_array![MG_STANDALONE_S2_VOTES: [u64; 3]];
    // SAFETY: forwarded from the launch contract.
    unsafe { standalone_impl::<true>(params, sb, votes) }
}

#[inline(always)]
unsafe fn standalone_impl<const S2: bool>(params: MgParams, sb: MgStandaloneBuffers, votes: *mut u64) {
    let t = thread_idx_x() as u64;
    let threads = block_dim_x() as u64;
    let block = block_idx_x() as u64;
    let groups = params.groups;
    let mut trial = block;
    while trial < sb.trials {
        let b = MgBuffers {
            tables: sb.tables + 4 * block * params.n * (params.s * params.words) as u64,
            scores: sb.scores + 4 * block * params.n * params.s as u64,
            rng: sb.rng + 16 * block * groups,
            rng_prev: sb.rng_prev + 16 * block * groups,
            ones: 0,
            trace_draws: if sb.trace_draws == 0 { 0 } else { sb.trace_draws + 4 * trial * groups * sb.draw_stride },
            trace_used: if sb.trace_used == 0 { 0 } else { sb.trace_used + trial * params.p as u64 * params.n },
            draw_stride: sb.draw_stride,
        };
        let scores = b.scores as *mut i32;
        let mut i = t;
        while i < params.n * params.s as u64 {
            // SAFETY: i < n·s, this block's scores.
            unsafe { *scores.add(i as usize) = 0 };
            i += threads;
        }
        let mut g = t;
        while g < groups {
            // SAFETY: trial < trials and g < G: inside rng_init; g < G in this block's rng.
            unsafe {
                *(b.rng as *mut Xsadd).add(g as usize) =
                    *(sb.rng_init as *const Xsadd).add((trial * groups + g) as usize)
            };
            g += threads;
        }
        if t < 3 {
            // SAFETY: t < 3 slots.
            unsafe { *votes.add(t as usize) = 0 };
        }
        // SAFETY: trial < trials initial histories.
        let h0 = unsafe { *(sb.h0 as *const u32).add(trial as usize) };
        // SAFETY: workspace sizes per the contract; this thread's groups only.
        unsafe { build_groups(&params, &b, t, threads) };
        sync_threads();
        let mask = params.history_mask();
        let (mut h_prev, mut w_prev, mut h_cur) = (h0, 0u32, h0);
        for k in 0..=params.p {
            let pass = Pass::new(k, params.p, h_prev, w_prev, h_cur);
            // SAFETY: as above.
            let mine = unsafe {
                if S2 {
                    pass_groups_s2::<true>(&params, &b, pass, t, threads)
                } else {
                    pass_groups::<false>(&params, &b, pass, t, threads)
                }
            };
            let slot = (k % 3) as usize;
            if mine > 0 && k < params.p {
                // SAFETY: slot < 3; shared-memory atomic.
                unsafe { atomic_add(votes.add(slot), mine) };
            }
            if t == 0 {
                // SAFETY: the slot after next was last read before the previous barrier.
                unsafe { *votes.add(((k + 1) % 3) as usize) = 0 };
            }
            sync_threads();
            if k == params.p {
                break;
            }
            // SAFETY: every thread's add to this slot precedes the barrier above.
            let total = unsafe { *votes.add(slot) };
            if t == 0 {
                // SAFETY: trial < trials, k < p.
                unsafe { *(sb.ones as *mut u64).add((trial * params.p as u64 + k as u64) as usize) = total };
            }
            w_prev = winning_side(total, params.n);
            h_prev = h_cur;
            h_cur = next_history(h_cur, w_prev, mask);
        }
        sync_threads();
        trial += gridsize_blocks();
    }
}

#[inline(always)]
fn gridsize_blocks() -> u64 {
    grid_dim_x() as u64
}
