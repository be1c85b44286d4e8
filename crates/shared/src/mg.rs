//! The Minority Game (Harada & Murata), written once for the GPU kernels and the CPU twins.
//!
//! # The game
//! `n` agents (odd) each pick side 0 or 1; the minority side wins. The last `m` winning sides
//! form the history `h` (an `m`-bit number, newest winner in bit 0). Each agent holds `s`
//! strategy tables; a table maps each of the `2^m` histories to a side (one bit) and carries a
//! score (starts at 0). Each step an agent plays its highest-scoring table (ties: one of the
//! tied tables uniformly at random) at the current history; after the step the *used* table
//! gains 1 point if its side won and loses 1 otherwise; the other tables keep their scores.
//! Then `h ← ((h << 1) | winning side) mod 2^m`. Winners per step = size of the minority.
//!
//! # The reproducibility contract
//! Every model (CPU sequential, CPU rayon with any thread count, GPU standalone, GPU
//! distributed kernel-per-step and grid-sync, any grid) computes exactly the same bits for the
//! same `(seed, n, m, s, p, groups, trial)` because the random numbers each agent sees do not
//! depend on how the work is scheduled:
//!
//! 1. **Groups.** Agent `a` (`0 ≤ a < n`) belongs to group `a mod G` and is its local agent
//!    `j = a div G`; group `g` has `ceil((n − g) / G)` agents. Any `1 ≤ G ≤ n` is valid (every
//!    group is non-empty). The strided assignment makes the device layout coalesce: at local
//!    index `j` the threads of a warp, one group each, touch consecutive agents.
//! 2. **One generator per group**, an [`Xsadd`] seeded with `Xsadd::new(seed)` and jumped ahead
//!    by `R·trial + L·g` steps, where `L = 1 + ceil(n/G)·(s·2^m + p)` is the per-group stream
//!    length and `R = G·L` the per-trial stride ([`Layout`]). This is the paper's eq. 2,
//!    `r·tr + (r/div)·id` with `r = n·(s·2^m + p) + 1`, with `r` rounded up to `R ≥ r` so
//!    that no two streams overlap even when `G` does not divide `n` (the literal eq. 2
//!    overlaps then, and by one number even when it does: `r/div` has no room for the history
//!    draw). Streams are therefore disjoint across groups and trials.
//! 3. **Order of draws** (each a `u32` from the group's generator):
//!    - group 0 draws the initial history first: `h0 = u >> (32 − m)`;
//!    - each group then builds its agents' tables, local agents in increasing `j`, for each
//!      agent tables `k = 0..s`, for each table histories `h = 0..2^m`: bit `h` of table `k` is
//!      `u >> 31` (`s·2^m` draws per agent);
//!    - then each step `t = 0..p`, local agents in increasing `j`, **exactly one draw per agent
//!      per step**, whether or not its best tables tie: among the `c` tables of highest score
//!      (in increasing `k`) the agent uses number `(u · c) >> 32` (64-bit product; uniform up
//!      to a bias below 2^-32).
//!
//!    So group `g` draws `[g = 0] + count_g·(s·2^m + p) ≤ L` numbers per trial.
//! 4. **Votes** are integers summed in any order (exact), so the minority, the history and
//!    every score update are schedule-independent.
//!
//! # Storage
//! Tables are bit-packed: table `k` of an agent is `W = ceil(2^m / 32)` words, history `h` in
//! bit `h mod 32` of word `h div 32`. Scores are `i32`. On the device the layout is agent
//! fastest: word `w` of table `k` of agent `a` at `(k·W + w)·n + a`, score `k` at `k·n + a`
//! ([`MgParams::table_index`]) — for m ≤ 5 that is `s·(4 + 4)` bytes per agent (16 for s = 2).
//!
//! # Passes
//! The used table must be known when the step's winner is. Instead of storing it (a byte per
//! agent), a group keeps its generator state from the start of the previous step and replays
//! the same draws: pass `k` (`0 ≤ k ≤ p`) first re-derives each agent's choice of step `k − 1`
//! (same scores, same draw, so the same table) and applies the score update of step `k − 1`,
//! then draws for step `k` and votes. Pass 0 only votes, pass `p` only updates. All models run
//! these same passes through [`group_pass`].

use crate::xsadd::Xsadd;

/// Largest supported memory `m` (tables of 2^16 bits).
pub const MAX_M: u32 = 16;
/// Largest supported number of strategy tables per agent.
pub const MAX_S: u32 = 16;

/// The parameters of one game, as the kernels receive them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MgParams {
    /// Agents (odd, ≥ 1).
    pub n: u64,
    /// Groups `G` (1 ≤ G ≤ n).
    pub groups: u64,
    /// Steps.
    pub p: u32,
    /// Memory (1..=16).
    pub m: u32,
    /// Tables per agent (1..=16).
    pub s: u32,
    /// Words per table, `ceil(2^m / 32)`.
    pub words: u32,
}

impl MgParams {
    /// Parameters without validation (the host's `validate` checks them); `words` is derived.
    pub const fn new(n: u64, m: u32, s: u32, p: u32, groups: u64) -> MgParams {
        let bits = 1u32 << m;
        MgParams { n, groups, p, m, s, words: bits.div_ceil(32) }
    }

    /// Agents in group `g`: `ceil((n − g) / G)`.
    #[inline(always)]
    pub fn group_len(&self, g: u64) -> u64 {
        (self.n - g).div_ceil(self.groups)
    }

    /// Agent index of local agent `j` of group `g`.
    #[inline(always)]
    pub fn agent(&self, g: u64, j: u64) -> u64 {
        g + j * self.groups
    }

    /// Index of word `w` of table `k` of agent `a` in the device layout.
    #[inline(always)]
    pub fn table_index(&self, a: u64, k: u32, w: u32) -> u64 {
        (k as u64 * self.words as u64 + w as u64) * self.n + a
    }

    /// Index of score `k` of agent `a` in the device layout.
    #[inline(always)]
    pub fn score_index(&self, a: u64, k: u32) -> u64 {
        k as u64 * self.n + a
    }

    /// `2^m - 1`.
    #[inline(always)]
    pub fn history_mask(&self) -> u32 {
        ((1u64 << self.m) - 1) as u32
    }
}

/// Device buffers of a distributed game, as addresses (the kernels cast them to pointers).
/// Trace addresses are 0 when not tracing.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MgBuffers {
    /// `n·s·W` table words (device layout).
    pub tables: u64,
    /// `n·s` scores, zero at the start.
    pub scores: u64,
    /// `G` generators: at the first table draw, then advanced by every pass.
    pub rng: u64,
    /// `G` generators as they were at the start of the previous step's draws.
    pub rng_prev: u64,
    /// `p` vote counts (side 1), zero at the start.
    pub ones: u64,
    /// Trace: `G·draw_stride` draws, group `g`'s at `g·draw_stride` (0: off).
    pub trace_draws: u64,
    /// Trace: `p·n` used-table indices, `[t·n + a]` (0: off).
    pub trace_used: u64,
    /// Trace: words between groups' draws (the group stream length `L`).
    pub draw_stride: u64,
}

/// Device buffers of the standalone model (one game per block; a block plays trials
/// `b, b + gridDim, …` in a workspace of its own). Addresses; trace addresses 0 when off.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MgStandaloneBuffers {
    /// Trials to play.
    pub trials: u64,
    /// Per block: `n·s·W` table words.
    pub tables: u64,
    /// Per block: `n·s` scores.
    pub scores: u64,
    /// Per block: `G` generators.
    pub rng: u64,
    /// Per block: `G` generators of the previous step.
    pub rng_prev: u64,
    /// Per trial: `G` generators at the first table draw (`[trial·G + g]`).
    pub rng_init: u64,
    /// Per trial: the initial history (`u32`).
    pub h0: u64,
    /// Per trial: `p` vote counts (`[trial·p + t]`).
    pub ones: u64,
    /// Trace, per trial: `G·draw_stride` draws (0: off).
    pub trace_draws: u64,
    /// Trace, per trial: `p·n` used-table indices (0: off).
    pub trace_used: u64,
    /// Trace: the group stream length `L`.
    pub draw_stride: u64,
}

/// The random-number layout of a game: stream lengths and offsets (all `u128`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Numbers per agent: `s·2^m + p`.
    pub per_agent: u128,
    /// Per-group stream length `L = 1 + ceil(n/G)·(s·2^m + p)`.
    pub group_stride: u128,
    /// Per-trial stride `R = G·L`.
    pub trial_stride: u128,
    /// The paper's `r = n·(s·2^m + p) + 1` (numbers a game consumes).
    pub r: u128,
}

impl Layout {
    /// The layout of `params`.
    pub fn of(params: &MgParams) -> Layout {
        let per_agent = params.s as u128 * (1u128 << params.m) + params.p as u128;
        let max_len = params.n.div_ceil(params.groups) as u128;
        let group_stride = 1 + max_len * per_agent;
        Layout {
            per_agent,
            group_stride,
            trial_stride: params.groups as u128 * group_stride,
            r: params.n as u128 * per_agent + 1,
        }
    }

    /// Offset of group `g`'s stream in trial `trial`: `R·trial + L·g` (wraps modulo 2^128,
    /// far beyond any feasible run).
    pub fn offset(&self, trial: u64, g: u64) -> u128 {
        self.trial_stride.wrapping_mul(trial as u128).wrapping_add(self.group_stride * g as u128)
    }

    /// Position in group `g`'s stream of the draw of local agent `j` at step `t` (`len` agents
    /// in the group, `tables` = `s·2^m`).
    pub fn step_draw_pos(g: u64, len: u64, tables: u64, t: u32, j: u64) -> u64 {
        (g == 0) as u64 + len * tables + t as u64 * len + j
    }
}

/// The initial history from group 0's first draw: its top `m` bits.
#[inline(always)]
pub fn initial_history(u: u32, m: u32) -> u32 {
    u >> (32 - m)
}

/// Side 1 wins iff it is the minority (`n` odd, so there is no tie).
#[inline(always)]
pub fn winning_side(ones: u64, n: u64) -> u32 {
    (ones < n - ones) as u32
}

/// Winners of a step: the minority's size.
#[inline(always)]
pub fn winners(ones: u64, n: u64) -> u64 {
    if ones < n - ones { ones } else { n - ones }
}

/// The next history after side `w` won.
#[inline(always)]
pub fn next_history(h: u32, w: u32, mask: u32) -> u32 {
    ((h << 1) | w) & mask
}

/// The table an agent uses: among the tables of highest score (in increasing `k`), number
/// `(u·c) >> 32` where `c` is how many tie. `score(k)` reads score `k`.
#[inline(always)]
pub fn choose_table(s: u32, score: impl Fn(u32) -> i32, u: u32) -> u32 {
    let mut best = score(0);
    let mut count = 1u32;
    for k in 1..s {
        let v = score(k);
        if v > best {
            best = v;
            count = 1;
        } else if v == best {
            count += 1;
        }
    }
    let pick = ((u as u64 * count as u64) >> 32) as u32;
    let mut seen = 0u32;
    let mut used = 0u32;
    for k in 0..s {
        let tie = score(k) == best;
        used = if tie && seen == pick { k } else { used };
        seen += tie as u32;
    }
    used
}

/// Bit `h` of a table given its word `h div 32`.
#[inline(always)]
pub fn table_side(word: u32, h: u32) -> u32 {
    (word >> (h & 31)) & 1
}

/// How a model stores one group's agents. `j` is the local agent index.
pub trait Agents {
    /// Word `w` of table `k` of local agent `j`.
    fn table(&self, j: u64, k: u32, w: u32) -> u32;
    /// Sets word `w` of table `k` of local agent `j`.
    fn set_table(&mut self, j: u64, k: u32, w: u32, v: u32);
    /// Score of table `k` of local agent `j`.
    fn score(&self, j: u64, k: u32) -> i32;
    /// Sets the score of table `k` of local agent `j`.
    fn set_score(&mut self, j: u64, k: u32, v: i32);
}

/// What a trace run records (the no-op [`NoTrace`] for speed).
pub trait Recorder {
    /// Draw number `pos` of the group's stream was `u`.
    fn draw(&mut self, pos: u64, u: u32);
    /// Local agent `j` used table `k` at step `t`.
    fn used(&mut self, t: u32, j: u64, k: u32);
}

/// Records nothing.
pub struct NoTrace;

impl Recorder for NoTrace {
    #[inline(always)]
    fn draw(&mut self, _: u64, _: u32) {}
    #[inline(always)]
    fn used(&mut self, _: u32, _: u64, _: u32) {}
}

/// Builds the tables of group `g`'s `len` agents from its generator (scores are not touched:
/// they start at zero). Draw positions start at `first_pos` (1 for group 0, after the history).
pub fn build_tables<A: Agents, R: Recorder>(
    params: &MgParams,
    len: u64,
    agents: &mut A,
    rng: &mut Xsadd,
    first_pos: u64,
    rec: &mut R,
) {
    let bits = 1u32 << params.m;
    let mut pos = first_pos;
    for j in 0..len {
        for k in 0..params.s {
            let mut word = 0u32;
            for h in 0..bits {
                let u = rng.next_u32();
                rec.draw(pos, u);
                pos += 1;
                word |= (u >> 31) << (h & 31);
                if h & 31 == 31 || h == bits - 1 {
                    agents.set_table(j, k, h >> 5, word);
                    word = 0;
                }
            }
        }
    }
}

/// What a pass does besides its group: the step it votes in and the one it settles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// Settle step `k − 1`: `(history of step k − 1, winning side of step k − 1)`.
    pub settle: Option<(u32, u32)>,
    /// Vote in step `k` at this history.
    pub vote: Option<(u32, u32)>,
}

impl Pass {
    /// Pass `k` given the history before step `k − 1` (`h_prev`), its winner `w_prev` and the
    /// history before step `k` (`h_cur`).
    #[inline(always)]
    pub fn new(k: u32, p: u32, h_prev: u32, w_prev: u32, h_cur: u32) -> Pass {
        Pass {
            settle: if k > 0 { Some((h_prev, w_prev)) } else { None },
            vote: if k < p { Some((k, h_cur)) } else { None },
        }
    }
}

/// One pass over group `g`'s `len` agents (see the module docs): settle step `k − 1` by
/// replaying `prev` (the generator as it was at the start of step `k − 1`), then vote in step
/// `k` drawing from `cur`. Returns how many agents chose side 1.
///
/// For `s = 2` (the paper's case) an unrolled path keeps an agent's scores and table words in registers and
/// issues all its loads at once; it computes exactly what the general loop computes.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn group_pass<A: Agents, R: Recorder>(
    params: &MgParams,
    g: u64,
    len: u64,
    agents: &mut A,
    prev: &mut Xsadd,
    cur: &mut Xsadd,
    pass: Pass,
    rec: &mut R,
) -> u64 {
    match params.s {
        2 => group_pass_fixed::<2, A, R>(params, g, len, agents, prev, cur, pass, rec),
        _ => group_pass_any(params, g, len, agents, prev, cur, pass, rec),
    }
}

/// [`group_pass`] for any `s` (scores re-read through `agents`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn group_pass_any<A: Agents, R: Recorder>(
    params: &MgParams,
    g: u64,
    len: u64,
    agents: &mut A,
    prev: &mut Xsadd,
    cur: &mut Xsadd,
    pass: Pass,
    rec: &mut R,
) -> u64 {
    let s = params.s;
    let tables = params.s as u64 * (1u64 << params.m);
    let mut ones = 0u64;
    for j in 0..len {
        if let Some((h, w)) = pass.settle {
            let u = prev.next_u32();
            let k = choose_table(s, |k| agents.score(j, k), u);
            let side = table_side(agents.table(j, k, h >> 5), h);
            let sc = agents.score(j, k);
            agents.set_score(j, k, if side == w { sc.wrapping_add(1) } else { sc.wrapping_sub(1) });
        }
        if let Some((t, h)) = pass.vote {
            let u = cur.next_u32();
            rec.draw(Layout::step_draw_pos(g, len, tables, t, j), u);
            let k = choose_table(s, |k| agents.score(j, k), u);
            rec.used(t, j, k);
            ones += table_side(agents.table(j, k, h >> 5), h) as u64;
        }
    }
    ones
}

/// `a[k]` for a register array, by selects (no dynamic indexing, which would go to local
/// memory on the GPU).
#[inline(always)]
fn pick<T: Copy, const S: usize>(a: &[T; S], k: u32) -> T {
    let mut v = a[0];
    for (i, &x) in a.iter().enumerate().skip(1) {
        v = if i as u32 == k { x } else { v };
    }
    v
}

/// [`group_pass`] with `S` tables held in registers (`params.s` must equal `S`; the GPU's
/// `*_s2` kernels call it directly with `S = 2`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn group_pass_fixed<const S: usize, A: Agents, R: Recorder>(
    params: &MgParams,
    g: u64,
    len: u64,
    agents: &mut A,
    prev: &mut Xsadd,
    cur: &mut Xsadd,
    pass: Pass,
    rec: &mut R,
) -> u64 {
    let tables = S as u64 * (1u64 << params.m);
    let mut ones = 0u64;
    for j in 0..len {
        let mut sc = [0i32; S];
        for (k, v) in sc.iter_mut().enumerate() {
            *v = agents.score(j, k as u32);
        }
        let (hs, ws) = pass.settle.unwrap_or((0, 0));
        let (t, hv) = pass.vote.unwrap_or((0, 0));
        let mut tw_settle = [0u32; S];
        let mut tw_vote = [0u32; S];
        for k in 0..S {
            if pass.settle.is_some() {
                tw_settle[k] = agents.table(j, k as u32, hs >> 5);
            }
            if pass.vote.is_some() {
                tw_vote[k] = if pass.settle.is_some() && hs >> 5 == hv >> 5 {
                    tw_settle[k]
                } else {
                    agents.table(j, k as u32, hv >> 5)
                };
            }
        }
        if pass.settle.is_some() {
            let u = prev.next_u32();
            let k = choose_table(S as u32, |k| pick(&sc, k), u);
            let side = table_side(pick(&tw_settle, k), hs);
            let old = pick(&sc, k);
            let new = if side == ws { old.wrapping_add(1) } else { old.wrapping_sub(1) };
            for (i, v) in sc.iter_mut().enumerate() {
                *v = if i as u32 == k { new } else { *v };
            }
            agents.set_score(j, k, new);
        }
        if pass.vote.is_some() {
            let u = cur.next_u32();
            rec.draw(Layout::step_draw_pos(g, len, tables, t, j), u);
            let k = choose_table(S as u32, |k| pick(&sc, k), u);
            rec.used(t, j, k);
            ones += table_side(pick(&tw_vote, k), hv) as u64;
        }
    }
    ones
}

/// Largest `p` the lean `s = 2` agent state (see [`choose_s2`]) holds: `|d| ≤ p` must fit in
/// 14 bits plus sign next to the used-table bit of an `i16`.
pub const S2_MAX_P: u32 = 16_383;

/// For `s = 2`: the table [`choose_table`] picks, from `d = score(0) − score(1)` alone (table 0
/// leads: 0; table 1 leads: 1; tie: `c = 2`, pick `(u·2) >> 32 = u >> 31`). Exact whenever the
/// scores do not wrap (`|score| ≤ steps`).
///
/// The GPU's lean `s = 2` kernels use this to keep one `i16` per agent instead of two `i32`
/// scores: the packed state `(d << 1) | k`, `k` the table the agent used in its last vote (so
/// settling needs no replayed draw). It is a different storage of the same game: [`settle_s2`]
/// and [`vote_s2`] give exactly the sides and tables of [`group_pass`] (unit test below; the GPU
/// parity suites compare the lean kernels with the CPU twins, which keep both scores), as long
/// as `p ≤` [`S2_MAX_P`].
#[inline(always)]
pub fn choose_s2(d: i32, u: u32) -> u32 {
    if d > 0 {
        0
    } else if d < 0 {
        1
    } else {
        u >> 31
    }
}

/// For `s = 2`: settles the previous step from the packed state `(d << 1) | k` (see
/// [`choose_s2`]), the used table's words at history `h` (`t0`, `t1`: word `h div 32` of tables
/// 0 and 1) and the winning side `w`: table `k` gains 1 if its side won and loses 1 otherwise.
/// Returns the new `d`.
#[inline(always)]
pub fn settle_s2(state: i32, t0: u32, t1: u32, h: u32, w: u32) -> i32 {
    let d = state >> 1;
    let k = state & 1;
    let side = table_side(if k == 0 { t0 } else { t1 }, h);
    let delta = if side == w { 1 } else { -1 };
    if k == 0 { d + delta } else { d - delta }
}

/// For `s = 2`: the vote at history `h` with draw `u` from score difference `d` (see
/// [`choose_s2`]): `(side, packed state (d << 1) | k)`.
#[inline(always)]
pub fn vote_s2(d: i32, u: u32, t0: u32, t1: u32, h: u32) -> (u32, i32) {
    let k = choose_s2(d, u);
    (table_side(if k == 0 { t0 } else { t1 }, h), (d << 1) | k as i32)
}

/// Largest `p` of the lean standalone kernel's packed state `(d << 2) | (side << 1) | k` in
/// an `i16` (see [`vote_s2_side`]): `4·p + 3 ≤ i16::MAX`.
pub const S2_SIDE_MAX_P: u32 = 8_191;

/// For `s = 2`: [`vote_s2`] whose packed state also keeps the side the agent played,
/// `(d << 2) | (side << 1) | k`, so that settling needs no table word (the GPU's lean
/// standalone kernel reads only the vote's table words, [`settle_s2_side`]). The same game as
/// [`vote_s2`] and [`settle_s2`] (unit test below) while `p ≤` [`S2_SIDE_MAX_P`].
#[inline(always)]
pub fn vote_s2_side(d: i32, u: u32, t0: u32, t1: u32, h: u32) -> (u32, i32) {
    let k = choose_s2(d, u);
    let side = table_side(if k == 0 { t0 } else { t1 }, h);
    (side, (d << 2) | (side << 1) as i32 | k as i32)
}

/// For `s = 2`: [`settle_s2`] from the packed state of [`vote_s2_side`] and the winning side
/// `w` alone: the used table `k` gains 1 if the side it gave won and loses 1 otherwise;
/// returns the new score difference `d`.
#[inline(always)]
pub fn settle_s2_side(state: i32, w: u32) -> i32 {
    let d = state >> 2;
    let side = ((state >> 1) & 1) as u32;
    let delta = if side == w { 1 } else { -1 };
    if state & 1 == 0 { d + delta } else { d - delta }
}

/// The history before step `k` from `h0` and the vote counts of steps `0..k`: only the last
/// `m` winners matter, so at most `m` counts are read (`ones(t)` reads step `t`'s count).
#[inline(always)]
pub fn history_before(h0: u32, k: u32, params: &MgParams, ones: impl Fn(u32) -> u64) -> u32 {
    let mask = params.history_mask();
    let start = k.saturating_sub(params.m);
    let mut h = h0;
    for t in start..k {
        h = next_history(h, winning_side(ones(t), params.n), mask);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choose_picks_among_ties_uniformly_by_rank() {
        let scores = [3, 5, 5, 1, 5];
        let f = |k: u32| scores[k as usize];
        assert_eq!(choose_table(5, f, 0), 1);
        assert_eq!(choose_table(5, f, u32::MAX / 3 + 1), 2);
        assert_eq!(choose_table(5, f, u32::MAX), 4);
        assert_eq!(choose_table(1, |_| -7, 12345), 0);
    }

    #[test]
    fn groups_cover_agents_exactly() {
        let p = MgParams::new(11, 3, 2, 5, 4);
        let total: u64 = (0..4).map(|g| p.group_len(g)).sum();
        assert_eq!(total, 11);
        assert_eq!((p.group_len(0), p.group_len(3)), (3, 2));
        let l = Layout::of(&p);
        assert_eq!(l.per_agent, 21);
        assert_eq!(l.group_stride, 1 + 3 * 21);
        assert!(l.trial_stride >= l.r);
    }

    /// The lean `s = 2` state (`d`, last used table) plays exactly as two scores with
    /// `choose_table`: agents with random tables over many steps, with many ties.
    #[test]
    fn lean_s2_state_equals_two_scores() {
        let mut rng = Xsadd::new(2026);
        for _ in 0..200 {
            let (t0, t1) = (rng.next_u32(), rng.next_u32());
            let mut sc = [0i32; 2];
            let mut state = 0i32;
            let mut last = None;
            for _ in 0..400 {
                let h = rng.next_u32() & 31;
                let w = rng.next_u32() >> 31;
                let u = rng.next_u32();
                // settle the previous vote at its history (both representations)
                if let Some((k, hp)) = last {
                    let side = table_side(if k == 0 { t0 } else { t1 }, hp);
                    sc[k as usize] += if side == w { 1 } else { -1 };
                    let d = settle_s2(state, t0, t1, hp, w);
                    assert_eq!(d, sc[0] - sc[1]);
                    state = d << 1;
                }
                let k = choose_table(2, |k| sc[k as usize], u);
                let (side, packed) = vote_s2(state >> 1, u, t0, t1, h);
                assert_eq!(packed & 1, k as i32);
                assert_eq!(side, table_side(if k == 0 { t0 } else { t1 }, h));
                assert_eq!(choose_s2(sc[0] - sc[1], u), k);
                state = packed;
                last = Some((k, h));
            }
        }
        assert!(((S2_MAX_P as i32) << 1) | 1 <= i16::MAX as i32);
        assert!((-(S2_MAX_P as i32)) << 1 >= i16::MIN as i32);
    }

    /// The standalone kernel's state with the played side (`vote_s2_side`, `settle_s2_side`)
    /// plays exactly as `vote_s2`/`settle_s2`, through its `i16` storage, up to `|d| = p` at
    /// `S2_SIDE_MAX_P` (agents whose score difference runs to both ends).
    #[test]
    fn lean_s2_side_state_equals_lean_state() {
        let mut rng = Xsadd::new(2027);
        let store = |v: i32| v as i16 as i32;
        let mut extremes = [0i32; 2];
        for case in 0..300u32 {
            // the last cases: tables that always win or always lose, long games
            let (t0, t1) = match case {
                0 => (0, 0),
                1 => (!0, !0),
                2 => (0, !0),
                3 => (!0, 0),
                _ => (rng.next_u32(), rng.next_u32()),
            };
            // cases 0–2 run d up to +p, case 3 down to −p
            let long = case < 4;
            let steps = if long { S2_SIDE_MAX_P } else { 300 };
            let (mut a, mut b) = (0i32, 0i32); // vote_s2's state, vote_s2_side's state
            let mut last_h = None;
            for _ in 0..steps {
                let h = if long { 5 } else { rng.next_u32() & 31 };
                let w = if long { [0, 1, 0, 0][case as usize] } else { rng.next_u32() >> 31 };
                let u = rng.next_u32();
                let (da, db) = match last_h {
                    Some(hp) => (settle_s2(a, t0, t1, hp, w), settle_s2_side(b, w)),
                    None => (a >> 1, b >> 2),
                };
                assert_eq!(da, db);
                let (sa, pa) = vote_s2(da, u, t0, t1, h);
                let (sb, pb) = vote_s2_side(db, u, t0, t1, h);
                assert_eq!((sa, pa & 1), (sb, pb & 1));
                assert_eq!(store(pb), pb, "the packed state fits an i16");
                (a, b) = (pa, store(pb));
                extremes = [extremes[0].max(db), extremes[1].min(db)];
                last_h = Some(h);
            }
        }
        assert_eq!(extremes, [S2_SIDE_MAX_P as i32 - 1, -(S2_SIDE_MAX_P as i32 - 1)]);
        assert!(4 * S2_SIDE_MAX_P as i32 + 3 <= i16::MAX as i32);
        assert!(-4 * (S2_SIDE_MAX_P as i32) >= i16::MIN as i32);
    }

    #[test]
    fn history_and_minority() {
        assert_eq!(winning_side(2, 5), 1);
        assert_eq!(winning_side(3, 5), 0);
        assert_eq!(winners(3, 5), 2);
        assert_eq!(next_history(0b101, 1, 0b111), 0b011);
        let p = MgParams::new(5, 2, 2, 4, 1);
        // ones 2,3,2: winners 1,0,1 → h: 0b10 → 0b01 → 0b10 → 0b01
        let ones = [2u64, 3, 2];
        assert_eq!(history_before(0b10, 3, &p, |t| ones[t as usize]), 0b01);
        assert_eq!(history_before(0b10, 0, &p, |t| ones[t as usize]), 0b10);
    }
}
