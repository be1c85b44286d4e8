//! The Minority Game's problem: its parameters and their validation, the jump-ahead set-up of a
//! trial's generators (every model, CPU and GPU, starts from it), and the result types.
//!
//! The contract (groups, stream offsets, order of draws) is written down in
//! [`lockstep_shared::mg`].

use crate::error::{Error, Result};
use lockstep_shared::mg::{Layout, MAX_M, MAX_S, MgParams, initial_history, next_history, winners, winning_side};
use lockstep_shared::xsadd::{Gf2Matrix, Xsadd};
use std::sync::OnceLock;

/// Largest step count (the per-step vote counts are kept for the whole run).
pub const MAX_P: u32 = 1 << 24;

/// Checks a game's parameters and derives the kernel parameters: `n` odd (≥ 1, < 2^63),
/// `1 ≤ m ≤ 16`, `1 ≤ s ≤ 16`, `1 ≤ p ≤ 2^24`, `1 ≤ groups ≤ n` (agent `a` is in group
/// `a mod groups`, so every such count is valid and every group has an agent).
pub fn validate(n: u64, m: u32, s: u32, p: u32, groups: u64) -> Result<MgParams> {
    let bad = |what: &'static str, why: String| Err(Error::InvalidInput { what, why });
    if n == 0 {
        return bad("agent count n", "n = 0: a game needs at least one agent".into());
    }
    if n.is_multiple_of(2) {
        return bad("agent count n", format!("n = {n} is even; the minority needs an odd n (no ties)"));
    }
    if n >= 1 << 63 {
        return Err(Error::TooLarge { what: "agent count n", value: n, max: (1 << 63) - 1 });
    }
    if !(1..=MAX_M).contains(&m) {
        return bad("memory m", format!("m = {m}; supported is 1 ≤ m ≤ {MAX_M}"));
    }
    if !(1..=MAX_S).contains(&s) {
        return bad("strategy count s", format!("s = {s}; supported is 1 ≤ s ≤ {MAX_S}"));
    }
    if p == 0 {
        return bad("step count p", "p = 0: a game needs at least one step".into());
    }
    if p > MAX_P {
        return Err(Error::TooLarge { what: "step count p", value: p as u64, max: MAX_P as u64 });
    }
    if groups == 0 || groups > n {
        return bad(
            "group count",
            format!(
                "{groups} groups for n = {n}; agent a is in group a mod G, so 1 ≤ G ≤ n (every group needs an agent)"
            ),
        );
    }
    Ok(MgParams::new(n, m, s, p, groups))
}

/// XSadd's `M^(2^i)` for `i < 128` (on the heap: 256 KiB): after building it once (128 squarings), every jump costs at most
/// 128 matrix–vector products.
#[derive(Clone, Debug)]
pub struct JumpTable {
    powers: Vec<Gf2Matrix>,
}

impl Default for JumpTable {
    fn default() -> Self {
        Self::new()
    }
}

impl JumpTable {
    /// Squares the step matrix 127 times.
    pub fn new() -> JumpTable {
        let mut powers = Vec::with_capacity(128);
        powers.push(Gf2Matrix::step());
        for i in 1..128 {
            let sq = powers[i - 1].mul(&powers[i - 1]);
            powers.push(sq);
        }
        JumpTable { powers }
    }

    /// `x` advanced by `k` steps.
    pub fn jump(&self, x: Xsadd, k: u128) -> Xsadd {
        let mut v = x.to_bits();
        let mut rest = k;
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            v = self.powers[i].apply(v);
            rest &= rest - 1;
        }
        Xsadd::from_bits(v)
    }

    /// The matrix `M^k`, for applying one fixed jump to many states.
    pub fn matrix(&self, k: u128) -> Gf2Matrix {
        let mut acc = Gf2Matrix::identity();
        let mut rest = k;
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            acc = self.powers[i].mul(&acc);
            rest &= rest - 1;
        }
        acc
    }
}

/// The process's one jump table (built on first use).
pub(crate) fn jump_table() -> &'static JumpTable {
    static TABLE: OnceLock<JumpTable> = OnceLock::new();
    TABLE.get_or_init(JumpTable::new)
}

/// Where a trial's generators start: the initial history (and the draw it came from) and each
/// group's generator positioned at its first table draw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Initial history `h0`.
    pub h0: u32,
    /// Group 0's first draw, from which `h0` came.
    pub h0_draw: u32,
    /// One generator per group, ready for the table draws.
    pub states: Vec<Xsadd>,
}

/// The generators of trial `trial` for `seed` (jump-ahead by `R·trial + L·g`, see
/// [`lockstep_shared::mg`]).
pub fn setup(params: &MgParams, seed: u32, trial: u64) -> Setup {
    let mut v = setups(params, seed, trial, 1);
    v.pop().unwrap_or(Setup { h0: 0, h0_draw: 0, states: Vec::new() })
}

/// [`setup`] for trials `first..first + count`, sharing the jump matrices.
pub fn setups(params: &MgParams, seed: u32, first: u64, count: u64) -> Vec<Setup> {
    let layout = Layout::of(params);
    let table = jump_table();
    let group_step = table.matrix(layout.group_stride);
    let base = Xsadd::new(seed);
    (first..first + count)
        .map(|trial| {
            let first_state = table.jump(base, layout.offset(trial, 0));
            let mut states = Vec::with_capacity(params.groups as usize);
            let mut x = first_state.to_bits();
            for _ in 0..params.groups {
                states.push(Xsadd::from_bits(x));
                x = group_step.apply(x);
            }
            let h0_draw = states.first_mut().map_or(0, |x| x.next_u32());
            Setup { h0: initial_history(h0_draw, params.m), h0_draw, states }
        })
        .collect()
}

/// [`setup`] for groups `groups` only (a rank's share of a game split over ranks): the initial
/// history (group 0's first draw, made whoever holds group 0) and the generators of those
/// groups, each jumped to directly; equal to the slice `groups` of [`setup`]'s generators.
pub fn setup_share(params: &MgParams, seed: u32, trial: u64, groups: std::ops::Range<u64>) -> Setup {
    let layout = Layout::of(params);
    let table = jump_table();
    let base = Xsadd::new(seed);
    let mut zero = table.jump(base, layout.offset(trial, 0));
    let h0_draw = zero.next_u32();
    let group_step = table.matrix(layout.group_stride);
    let mut x = table.jump(base, layout.offset(trial, groups.start)).to_bits();
    let mut states = Vec::with_capacity(groups.clone().count());
    for g in groups {
        states.push(if g == 0 { zero } else { Xsadd::from_bits(x) });
        x = group_step.apply(x);
    }
    Setup { h0: initial_history(h0_draw, params.m), h0_draw, states }
}

/// A game's result: the initial history and how many agents chose side 1 at each step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Initial history.
    pub h0: u32,
    /// Votes for side 1, per step (`p` of them).
    pub ones: Vec<u64>,
}

impl Outcome {
    /// Winners (minority size) per step.
    pub fn winners(&self, n: u64) -> Vec<u64> {
        self.ones.iter().map(|&o| winners(o, n)).collect()
    }

    /// The history before each step and after the last (`p + 1` values).
    pub fn history(&self, params: &MgParams) -> Vec<u32> {
        let mut h = self.h0;
        let mut out = vec![h];
        for &o in &self.ones {
            h = next_history(h, winning_side(o, params.n), params.history_mask());
            out.push(h);
        }
        out
    }
}

/// The paper's five reproducibility items for one game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Initial history and votes (winners and history derive from them).
    pub outcome: Outcome,
    /// Winners per step.
    pub winners: Vec<u64>,
    /// History before each step and after the last.
    pub history: Vec<u32>,
    /// Every table of every agent, in the device layout ([`MgParams::table_index`]).
    pub tables: Vec<u32>,
    /// The table each agent used at each step: `used[t·n + a]`.
    pub used: Vec<u8>,
    /// Every generator's output, in order: `draws[g]` is group `g`'s stream (group 0 starts
    /// with the history draw).
    pub draws: Vec<Vec<u32>>,
}

/// How many numbers group `g` draws in a game.
pub fn draws_of_group(params: &MgParams, g: u64) -> u64 {
    (g == 0) as u64 + params.group_len(g) * (params.s as u64 * (1u64 << params.m) + params.p as u64)
}

/// `first + trials`, the end of a trial range; [`Error::TooLarge`] when it passes `u64::MAX`
/// (trial numbers are `u64`), instead of a range that wraps to nothing.
pub fn trial_end(first: u64, trials: u64) -> Result<u64> {
    first
        .checked_add(trials)
        .ok_or_else(|| Error::Overflow { what: "first trial + trials", expr: format!("{first} + {trials}") })
}

/// `sum / (n · trials)` per step: the averaged winner ratio from summed winner counts.
pub fn winner_ratio(sum: &[u64], n: u64, trials: u64) -> Vec<f64> {
    let denom = n as f64 * trials as f64;
    sum.iter().map(|&s| s as f64 / denom).collect()
}

/// Threads per block for the standalone model (one game per block) when the caller did not
/// choose one: among the multiples of 32 up to `max_threads`, the one with the least modelled
/// time, ties to the smaller block. The model counts the serial work on a block's critical
/// path: its slowest thread plays `⌈groups / threads⌉` groups a step (a group's agents are one
/// stream, so its draws are in order), a block plays `⌈trials / blocks⌉` games one after the
/// other, and `blocks` blocks of which `resident(threads)` fit the GPU at once run in
/// `⌈blocks / resident⌉` waves. `None` when no block size has a resident block.
///
/// For the paper's Table 4 (1,024 groups, 224 trials) on a 132-SM H100/H200 at 80 registers
/// this is 352: two blocks an SM (264 resident), three groups per thread; 128 (the
/// distributed models' default) is eight groups per thread, 512 one block an SM (two waves).
/// The results do not depend on it: the group layout makes every block size give the same bits.
pub fn standalone_block(
    groups: u64,
    blocks: u64,
    trials: u64,
    max_threads: u32,
    resident: impl Fn(u32) -> u64,
) -> Option<u32> {
    let blocks = blocks.max(1);
    let mut best: Option<(u128, u32)> = None;
    for threads in (32..=max_threads.min(crate::launch::MAX_THREADS_PER_BLOCK)).step_by(32) {
        let r = resident(threads);
        if r == 0 {
            continue;
        }
        let cost =
            blocks.div_ceil(r) as u128 * trials.div_ceil(blocks) as u128 * groups.div_ceil(threads as u64) as u128;
        if best.is_none_or(|(c, _)| cost < c) {
            best = Some((cost, threads));
        }
    }
    best.map(|(_, t)| t)
}

#[cfg(test)]
mod block_tests {
    use super::standalone_block;

    /// Blocks per SM for a kernel of `regs` registers a thread (64 Ki registers, at most 32
    /// blocks and 2,048 threads an SM, registers allocated per warp in units of 256).
    fn per_sm(regs: u32, threads: u32) -> u64 {
        let warp_regs = (regs * 32).div_ceil(256) * 256;
        let warps = threads / 32;
        let by_regs = 65_536 / (warp_regs * warps);
        by_regs.min(32).min(2048 / threads) as u64
    }

    #[test]
    fn table_4_picks_two_blocks_of_352_an_sm() {
        // 132 SMs (H100 SXM, H200), mg_standalone_s2 at 80 registers
        let pick = standalone_block(1024, 224, 224, 768, |t| per_sm(80, t) * 132);
        assert_eq!(pick, Some(352));
        // 114 SMs (H100 PCIe): 228 resident blocks of 352 still hold all 224 games
        assert_eq!(standalone_block(1024, 224, 224, 768, |t| per_sm(80, t) * 114), Some(352));
    }

    #[test]
    fn small_and_odd_games() {
        // fewer groups than a warp: one warp
        assert_eq!(standalone_block(20, 3, 3, 1024, |t| per_sm(80, t) * 132), Some(32));
        // 64 groups: one group a thread
        assert_eq!(standalone_block(64, 3, 3, 1024, |t| per_sm(80, t) * 132), Some(64));
        // more trials than blocks: the blocks loop over trials; waves still counted
        let pick = standalone_block(1024, 10, 1000, 768, |t| per_sm(80, t) * 4).unwrap();
        assert_eq!(pick % 32, 0);
        // no block size resident: none
        assert_eq!(standalone_block(1024, 224, 224, 1024, |_| 0), None);
    }
}
