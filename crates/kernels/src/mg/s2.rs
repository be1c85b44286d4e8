//! The lean `s = 2` passes of the `*_s2` kernels: one packed `i16` state per agent, agents in
//! batches whose loads are all issued before the first store; `mg_standalone_s2t`'s pass reads
//! its tables transposed (one word a table for a warp's 32 agents) and keeps the played side.

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

/// One agent's data: (packed state, settle words of tables 0 and 1, vote words), from the
/// agent's element index `o` past the bases (`st`: states, `s`: settle word of table 0, `v`:
/// vote word of table 0; table 1 `t1` words on), for the kind of pass the const parameters
/// name (as [`s2_groups`]).
///
/// # Safety
/// The bases plus `o` address agent `g + j·G < n` for a local agent `j < len`: inside the `n`
/// states (the scores buffer holds `2n` i32) and each table's `n` words.
#[inline(always)]
unsafe fn s2_load<const SETTLE: bool, const VOTE: bool, const SAME: bool>(
    t1: usize,
    st: *const i16,
    s: *const u32,
    v: *const u32,
    o: usize,
) -> (i32, u32, u32, u32, u32) {
    // SAFETY: the caller's contract.
    unsafe {
        let x = *st.add(o) as i32;
        let (s0, s1) = if SETTLE { (*s.add(o), *s.add(o + t1)) } else { (0, 0) };
        let (v0, v1) = if !VOTE || SAME { (s0, s1) } else { (*v.add(o), *v.add(o + t1)) };
        (x, s0, s1, v0, v1)
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
    // One agent's data ([`s2_load`]).
    // SAFETY (callers): as [`s2_load`]: the bases plus o address agent g + j·G < n.
    let load = |st: *const i16, s: *const u32, v: *const u32, o: usize| {
        // SAFETY: see above.
        unsafe { s2_load::<SETTLE, VOTE, SAME>(t1, st, s, v, o) }
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
            let out = s2_play::<SETTLE, VOTE>(x, (hs, ws), hv, &mut cur, &mut ones);
            // SAFETY: as `load`; only this thread touches group g's agents.
            unsafe { *st = out as i16 };
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
    // One agent's data ([`s2_load`]).
    // SAFETY (callers): as [`s2_load`]: the bases plus o address agent g + j·G < n.
    let load = |st: *const i16, s: *const u32, v: *const u32, o: usize| {
        // SAFETY: see above.
        unsafe { s2_load::<SETTLE, VOTE, SAME>(t1, st, s, v, o) }
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

/// The table layout of `mg_standalone_s2t`, made from the built tables between the
/// build and pass 0: in every row (table `k`, word `w`: `n` words at `(k·W + w)·n`) the words of
/// the agents in whole 32-agent tiles (`a < n_full = n − n mod 32`, `T = n_full / 32` tiles)
/// are transposed so that word `i·T + a div 32` holds bit `i` (history `32·w + i`) of the 32
/// agents of tile `a div 32`, agent `a` at bit `a mod 32`; the last `n mod 32` agents keep their
/// words (`row[a]`, bit `h mod 32`). A step then reads one word a table for a warp's 32 agents
/// instead of one each, and 8 consecutive tiles share a 32-byte sector.
///
/// Each row is copied to the scores buffer past the `n` `i16` states (words `⌈n/2⌉ …`; the
/// buffer holds `n·s = 2n` words), then each warp turns tiles `warp, warp + warps, …` with 32
/// ballots. Every thread of the block calls it (it has block barriers).
///
/// # Safety
/// As [`build_groups`], after the tables are built and a block barrier; `params.s == 2`; the
/// block's threads are `threads`, a multiple of 32, with `t` this thread's index.
#[inline(always)]
pub(super) unsafe fn transpose_tables_s2(params: &MgParams, b: &MgBuffers, t: u64, threads: u64) {
    let n = params.n;
    let full = n & !31;
    let tiles = full >> 5;
    let rows = (params.s * params.words) as u64;
    let tables = b.tables as *mut u32;
    let temp = (b.scores as *mut u32).wrapping_add(n.div_ceil(2) as usize);
    let lane = t & 31;
    for r in 0..rows {
        let row = tables.wrapping_add((r * n) as usize);
        let mut i = t;
        while i < full {
            // SAFETY: i < n_full ≤ n: inside row r's n words and the n temporary words
            // (⌈n/2⌉ + n ≤ 2n words of this block's scores).
            unsafe { *temp.add(i as usize) = *row.add(i as usize) };
            i += threads;
        }
        sync_threads();
        let mut tile = t >> 5;
        while tile < tiles {
            // SAFETY: 32·tile + lane < n_full: inside the temporary words.
            let word = unsafe { *temp.add((tile * 32 + lane) as usize) };
            let mut mine = 0u32;
            for bit in 0..32u64 {
                // `tile` is the same in every lane of the warp and all 32 lanes are here.
                let v = warp_vote_ballot(FULL_MASK, (word >> bit) & 1 != 0);
                if bit == lane {
                    mine = v;
                }
            }
            // SAFETY: lane·T + tile < 32·T = n_full: inside row r; each word has one writer.
            unsafe { *row.add((lane * tiles + tile) as usize) = mine };
            tile += threads >> 5;
        }
        sync_threads();
    }
}

/// `*base.add(i / 32)` from global memory (`ld.global.u32`), `i` a 32-bit element offset of
/// the agents' states: a batch's table words then share the states' offsets `j·G` (`G` a
/// multiple of 32), so no second set of offsets stays live (as `lockstep_cuda_std::memory`).
///
/// # Safety
/// `base` is a generic pointer into a device allocation and `base + i / 32` is in bounds;
/// nothing writes it concurrently.
#[inline(always)]
unsafe fn load_tile_word(base: *const u32, i: u32) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees a valid, aligned global address.
    unsafe {
        core::arch::asm!("{{ .reg .u32 lw; .reg .u64 la; shr.u32 lw, {i}, 5; mul.wide.u32 la, lw, 4; add.s64 la, la, {b}; cvta.to.global.u64 la, la; ld.global.u32 {v}, [la]; }}",
            v = out(reg32) v, i = in(reg32) i, b = in(reg64) base, options(nostack, readonly, preserves_flags))
    };
    v
}

/// The lean pass of `mg_standalone_s2t`: one monomorphised loop per kind of pass (settle and
/// vote, vote only: pass 0, settle only: pass p), [`s2_standalone`].
///
/// # Safety
/// As [`s2_standalone`].
#[inline(always)]
pub(super) unsafe fn pass_standalone_s2t(params: &MgParams, b: &MgBuffers, pass: Pass, first: u64, stride: u64) -> u64 {
    // SAFETY: forwarded (every arm).
    unsafe {
        match (pass.settle, pass.vote) {
            (Some(_), Some(_)) => s2_standalone::<true, true>(params, b, pass, first, stride),
            (None, _) => s2_standalone::<false, true>(params, b, pass, first, stride),
            (Some(_), None) => s2_standalone::<true, false>(params, b, pass, first, stride),
        }
    }
}

/// The pass of `mg_standalone_s2t` ([`pass_standalone_s2t`], one kind of pass,
/// `SETTLE`/`VOTE` as `pass` says): per agent one packed `i16` state `(d << 2) | (side << 1) | k`
/// (`lockstep_shared::mg::vote_s2_side`: settling needs no table word) and the vote's two
/// table words in the layout of [`transpose_tables_s2`]. Per agent-step 2 bytes of state are
/// read and written and about 1/4 byte of tables read (12 bytes in [`s2_groups_standalone`]).
/// Batches as there when `G` is a multiple of 32 (a warp's lanes, consecutive groups, then
/// play the 32 agents of one tile, each at its group's bit `g mod 32`); a batch whose last agent
/// is in the partial tile, the last `len mod 8` agents, and every agent of other `G` are
/// played one round trip each.
///
/// # Safety
/// As [`build_groups`], after [`transpose_tables_s2`]; `params.s == 2`,
/// `params.p ≤ S2_SIDE_MAX_P`, the states zeroed before pass 0.
#[inline(always)]
pub(super) unsafe fn s2_standalone<const SETTLE: bool, const VOTE: bool>(
    params: &MgParams,
    b: &MgBuffers,
    pass: Pass,
    first: u64,
    stride: u64,
) -> u64 {
    let n = params.n;
    let full = n & !31;
    let tiles = full >> 5;
    let gs = params.groups;
    let ws = match pass.settle {
        Some((_, w)) => w,
        None => 0,
    };
    let hv = match pass.vote {
        Some((_, h)) => h,
        None => 0,
    };
    // Row `hv div 32` of table 0 (table 1's is W·n words on); in it the transposed words of
    // history hv start at (hv mod 32)·T.
    let tables = b.tables as *const u32;
    let r0 = tables.wrapping_add(((hv >> 5) as u64 * n) as usize);
    let t1 = (params.words as u64 * n) as usize;
    let h0 = r0.wrapping_add(((hv & 31) as u64 * tiles) as usize);
    let state = b.scores as *mut i16;
    let rng = b.rng as *mut Xsadd;
    // Batches with 32-bit offsets in the hot pass kind only (every pass but the first and the
    // last).
    let narrow = SETTLE && VOTE && gs < 1 << 28 && gs.is_multiple_of(32);
    let step32 = gs as u32;
    let mut ones = 0u64;
    let mut g = first;
    while g < gs {
        // SAFETY: g < G generators (a settle-only pass draws nothing: no copy).
        let mut cur = if VOTE { unsafe { *rng.add(g as usize) } } else { Xsadd { s: [0; 4] } };
        let mut play = |x: i32, w0: u32, w1: u32, sh: u32| -> i32 {
            let d = if SETTLE { settle_s2_side(x, ws) } else { x >> 2 };
            if VOTE {
                let (side, packed) = vote_s2_side(d, cur.next_u32(), w0 >> sh, w1 >> sh, 0);
                ones += side as u64;
                packed
            } else {
                d << 2
            }
        };
        let mut left = params.group_len(g);
        let mut a = g;
        // With G a multiple of 32, agents of group g in whole tiles are at bit g mod 32 of
        // their tile's word.
        let lane = (g & 31) as u32;
        if narrow {
            // Whole batches inside the whole tiles: every load of the batch, then the agents
            // in order, through `ld.global`/`st.global` at the 32-bit offsets i·G from three
            // per-batch bases (states; tile words of tables 0 and 1 at offsets i·G / 32).
            // SAFETY (every use below): agent a + i·G < n_full for i < 8 (the loop's
            // condition), so a + i·G is inside the n states and (a + i·G) div 32 + (hv mod 32)·T
            // < 32·T inside each row's n words; only this thread touches group g's agents.
            while left >= S2_BATCH as u64 && a + 7 * gs < full {
                let bs = state.wrapping_add(a as usize);
                let b0 = h0.wrapping_add((a >> 5) as usize);
                let b1 = b0.wrapping_add(t1);
                macro_rules! batch {
                    ($($i:literal => $x:ident),*) => {{
                        // SAFETY: see above.
                        $( let $x = unsafe { (load_global_i16(bs, step32 * $i), load_tile_word(b0, step32 * $i), load_tile_word(b1, step32 * $i)) }; )*
                        $( {
                            let out = play($x.0, $x.1, $x.2, lane);
                            // SAFETY: see above.
                            unsafe { store_global_i16(bs, step32 * $i, out) };
                        } )*
                    }};
                }
                batch!(0 => x0, 1 => x1, 2 => x2, 3 => x3, 4 => x4, 5 => x5, 6 => x6, 7 => x7);
                a += gs * S2_BATCH as u64;
                left -= S2_BATCH as u64;
            }
        }
        while left > 0 {
            // Agent a's word (offset in the row) and bit.
            let (o, sh) = if a < full {
                (((hv & 31) as u64 * tiles + (a >> 5)) as usize, (a & 31) as u32)
            } else {
                (a as usize, hv & 31)
            };
            // SAFETY: a < n: inside the n states, and o inside each row's n words (< n_full
            // for an agent in a whole tile, else its own word); only this thread touches
            // group g's agents.
            unsafe {
                let x = *state.add(a as usize) as i32;
                let (w0, w1) = if VOTE { (*r0.add(o), *r0.add(o + t1)) } else { (0, 0) };
                *state.add(a as usize) = play(x, w0, w1, sh) as i16;
            }
            a += gs;
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
