//! The lean `s = 2` pass of the `*_s2` kernels: one packed `i16` state per agent, agents in
//! batches whose loads are all issued before the first store.

use super::*;

/// Agents whose data one thread loads at once in the lean `s = 2` pass (memory-level
/// parallelism: the loads of a batch are all issued before its first store).
pub(super) const S2_BATCH: usize = 8;

/// The lean `s = 2` pass (the `*_s2` kernels): per agent one packed `i16` state `(d << 1) | k`
/// in the scores buffer (see `lockstep_shared::mg::choose_s2`) and the two table words; no
/// replayed draw (the state keeps the used table), so `rng_prev` is not used. Agents are
/// handled in batches of [`S2_BATCH`]: all loads of a batch first, then the agents in order.
///
/// # Safety
/// As [`build_groups`]; `params.s == 2`, `params.p ≤ S2_MAX_P`, the scores buffer zeroed
/// before pass 0 (state 0: both scores 0).
#[inline(always)]
pub(super) unsafe fn pass_groups_s2<const STANDALONE: bool>(
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
pub(super) unsafe fn s2_pass_kind<const STANDALONE: bool, const SETTLE: bool, const VOTE: bool, const SAME: bool>(
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
pub(super) unsafe fn s2_groups<const SETTLE: bool, const VOTE: bool, const SAME: bool>(
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
pub(super) unsafe fn s2_agent<const SETTLE: bool, const VOTE: bool>(
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
pub(super) unsafe fn s2_groups_standalone<const SETTLE: bool, const VOTE: bool, const SAME: bool>(
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
pub(super) fn s2_play<const SETTLE: bool, const VOTE: bool>(
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
