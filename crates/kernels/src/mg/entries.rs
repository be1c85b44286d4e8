//! The Minority Game kernels (`#[no_mangle]` entry points) and the passes they run.

use super::*;

/// Pass `pass` for groups `first, first + stride, …`; returns this thread's side-1 votes.
/// `S2`: the lean `s = 2` pass without trace (the `*_s2` kernels, [`pass_groups_s2`]).
///
/// # Safety
/// As [`build_groups`]; with `S2`, as [`pass_groups_s2`].
#[inline(always)]
pub(super) unsafe fn pass_groups<const S2: bool>(
    params: &MgParams,
    b: &MgBuffers,
    pass: Pass,
    first: u64,
    stride: u64,
) -> u64 {
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
    unsafe { step_impl::<false>(params, b, k, h0, params.n) }
}

/// [`mg_step`] for `s = 2` without trace (fewer registers, loads issued together).
///
/// # Safety
/// As [`mg_step`]; `params.s == 2`, trace addresses unused.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_step_s2(params: MgParams, b: MgBuffers, k: u32, h0: u32) {
    // SAFETY: forwarded from the launch contract.
    unsafe { step_impl::<true>(params, b, k, h0, params.n) }
}

/// Pass `k` of one rank's share of a game split over ranks (`lockstep::mg::dist`): `params`
/// describe the rank's groups stored as a game of their own (its agent count, its group count),
/// `n_total` is the whole game's agent count, which decides the minority. `ones[k]` receives
/// this rank's votes; the host sums the ranks' counts into every rank's `ones[k]` before pass
/// `k + 1` (an all-reduce in stream order).
///
/// # Safety
/// As [`mg_step`], with `ones[0..k]` holding the whole game's counts.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_step_rank(params: MgParams, b: MgBuffers, k: u32, h0: u32, n_total: u64) {
    // SAFETY: forwarded from the launch contract.
    unsafe { step_impl::<false>(params, b, k, h0, n_total) }
}

/// [`mg_step_rank`] for `s = 2` without trace.
///
/// # Safety
/// As [`mg_step_rank`]; `params.s == 2`, trace addresses unused.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_step_rank_s2(params: MgParams, b: MgBuffers, k: u32, h0: u32, n_total: u64) {
    // SAFETY: forwarded from the launch contract.
    unsafe { step_impl::<true>(params, b, k, h0, n_total) }
}

/// One pass; `n_vote` is the agent count the minority is taken of (`params.n`, or the whole
/// game's for a rank's share).
#[inline(always)]
pub(super) unsafe fn step_impl<const S2: bool>(params: MgParams, b: MgBuffers, k: u32, h0: u32, n_vote: u64) {
    let ones = b.ones as *mut u64;
    // SAFETY: t < k ≤ p counts, written by earlier launches.
    let read = |t: u32| unsafe { *ones.add(t as usize) };
    let pass = if k == 0 {
        Pass::new(0, params.p, h0, 0, h0)
    } else {
        let whole = MgParams { n: n_vote, ..params };
        let h_prev = history_before(h0, k - 1, &whole, read);
        let w_prev = winning_side(read(k - 1), n_vote);
        Pass::new(k, params.p, h_prev, w_prev, next_history(h_prev, w_prev, params.history_mask()))
    };
    // SAFETY: forwarded from the launch contract.
    let votes = unsafe { pass_groups::<S2>(&params, &b, pass, index_1d() as u64, grid_size_1d()) };
    if k < params.p && votes > 0 {
        // SAFETY: k < p counts.
        unsafe { atomic_add(ones.add(k as usize), votes) };
    }
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
pub(super) unsafe fn grid_sync_impl<const S2: bool>(
    params: MgParams,
    b: MgBuffers,
    h0: u32,
    bar: *mut u32,
    votes_now: *mut u64,
) {
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
    unsafe { standalone_impl::<false, false>(params, sb, votes) }
}

/// [`mg_standalone`] for `s = 2` without trace.
///
/// # Safety
/// As [`mg_standalone`]; `params.s == 2`, trace addresses unused.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_standalone_s2(params: MgParams, sb: MgStandaloneBuffers) {
    let votes = shared_array![MG_STANDALONE_S2_VOTES: [u64; 3]];
    // SAFETY: forwarded from the launch contract.
    unsafe { standalone_impl::<true, false>(params, sb, votes) }
}

/// [`mg_standalone_s2`] with the tables transposed after the build (one word a table for a
/// warp's 32 agents, [`transpose_tables_s2`]) and the played side kept in the state, so a step
/// reads 2 bytes of state and about 1/4 byte of tables per agent instead of 10
/// ([`s2_standalone`]). The same game, bit for bit.
///
/// # Safety
/// As [`mg_standalone_s2`]; `params.p ≤ S2_SIDE_MAX_P`; blocks of a multiple of 32 threads.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn mg_standalone_s2t(params: MgParams, sb: MgStandaloneBuffers) {
    let votes = shared_array![MG_STANDALONE_S2T_VOTES: [u64; 3]];
    // SAFETY: forwarded from the launch contract.
    unsafe { standalone_impl::<true, true>(params, sb, votes) }
}

/// The standalone kernels' body; `S2T` (with `S2`): `mg_standalone_s2t`'s transposed tables
/// and pass.
#[inline(always)]
pub(super) unsafe fn standalone_impl<const S2: bool, const S2T: bool>(
    params: MgParams,
    sb: MgStandaloneBuffers,
    votes: *mut u64,
) {
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
        if S2T {
            // SAFETY: the tables are built (barrier above); s = 2 and blocks of a multiple of
            // 32 threads (the launch contract).
            unsafe { transpose_tables_s2(&params, &b, t, threads) };
        }
        let mask = params.history_mask();
        let (mut h_prev, mut w_prev, mut h_cur) = (h0, 0u32, h0);
        for k in 0..=params.p {
            let pass = Pass::new(k, params.p, h_prev, w_prev, h_cur);
            // SAFETY: as above.
            let mine = unsafe {
                if S2T {
                    pass_standalone_s2t(&params, &b, pass, t, threads)
                } else if S2 {
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
pub(super) fn gridsize_blocks() -> u64 {
    grid_dim_x() as u64
}
