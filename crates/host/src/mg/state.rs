//! A Minority Game stopped between two passes ([`GameState`]), a run of trials stopped between
//! trials or mid-game ([`RunState`]), and their checkpoint file (family `mg`, in the container of
//! [`crate::checkpoint`]).
//!
//! The state is model-independent: tables and scores in the device layout
//! ([`MgParams::table_index`], [`MgParams::score_index`]), each group's generator now (`rng`) and
//! at the start of the previous step's draws (`rng_prev`), the vote counts so far. Every model
//! that can stop between passes (the CPU twins, the GPU's kernel-per-step model) exports and
//! imports it, so a game checkpointed on one resumes on another with the same bits.
//!
//! For `s = 2` the scores are stored as `(score₀ − score₁, 0)`: the game depends on the
//! difference alone (`lockstep_shared::mg::choose_s2`), and the GPU's lean `s = 2` kernels keep
//! only that (with the table used in the last vote, which [`pack_s2`] re-derives by replaying the
//! draw), so every model writes the same bytes at the same pass.
//!
//! Header parameters: `n`, `m`, `s`, `p`, `groups`, `seed`, `first`, `trials`, then the
//! caller's own. Sections: `progress` (`u64`: trials done, whether a game is in progress, its
//! trial, its next pass, its initial history), `sums` (`u64` per step: winners summed over the
//! finished trials), then the game's `ones` (`u64`), `tables` (`u32`), `scores` (`i32`), `rng`
//! and `rngprev` (`u32`, four per group) — empty when no game is in progress.

use super::problem::{JumpTable, trial_end, validate};
use crate::checkpoint::{Header, Reader, Section, write};
use crate::error::{Error, Result};
use lockstep_shared::mg::{MgParams, choose_s2};
use lockstep_shared::xsadd::Xsadd;
use std::path::Path;

/// The family name in checkpoint headers.
pub const FAMILY: &str = "mg";

/// One game between two passes: passes `0..next` are done (`next = 0`: tables built, nothing
/// played; `next = p + 1`: the game is over).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameState {
    /// The game's parameters.
    pub params: MgParams,
    /// The seed.
    pub seed: u32,
    /// The trial.
    pub trial: u64,
    /// The next pass (`0..=p + 1`).
    pub next: u32,
    /// The initial history.
    pub h0: u32,
    /// Votes for side 1 per step (`p`; steps not yet voted are 0).
    pub ones: Vec<u64>,
    /// Every agent's tables, device layout (`n·s·W` words).
    pub tables: Vec<u32>,
    /// Every agent's scores, device layout (`n·s`), settled through step `next − 2`; for
    /// `s = 2` as `(difference, 0)`.
    pub scores: Vec<i32>,
    /// Each group's generator at the start of step `next`'s draws (4 words per group).
    pub rng: Vec<u32>,
    /// Each group's generator at the start of step `next − 1`'s draws (= `rng` for `next` 0
    /// and `p + 1`).
    pub rng_prev: Vec<u32>,
}

impl GameState {
    /// Checks the lengths and ranges against the parameters (what a loaded file must satisfy).
    pub fn check(&self) -> Result<()> {
        let p = &self.params;
        let bad = |why: String| Err(Error::InvalidInput { what: "Minority Game state", why });
        let words = p.n.checked_mul(p.s as u64 * p.words as u64);
        let scores = p.n.checked_mul(p.s as u64);
        if self.next > p.p + 1 {
            return bad(format!("next pass {} of a game of {} steps", self.next, p.p));
        }
        if self.h0 > p.history_mask() {
            return bad(format!("initial history {} has more than m = {} bits", self.h0, p.m));
        }
        if self.ones.len() as u64 != p.p as u64
            || Some(self.tables.len() as u64) != words
            || Some(self.scores.len() as u64) != scores
            || self.rng.len() as u64 != 4 * p.groups
            || self.rng_prev.len() as u64 != 4 * p.groups
        {
            return bad("buffer lengths do not fit the parameters".into());
        }
        if self.ones.iter().any(|&o| o > p.n) {
            return bad("a vote count above n".into());
        }
        Ok(())
    }

    /// Steps done (`min(next, p)`).
    pub fn steps_done(&self) -> u32 {
        self.next.min(self.params.p)
    }

    /// The generator of group `g` now and at the start of the previous step.
    pub fn generators(&self, g: u64) -> (Xsadd, Xsadd) {
        let at = |v: &[u32]| {
            let i = 4 * g as usize;
            Xsadd { s: [v[i], v[i + 1], v[i + 2], v[i + 3]] }
        };
        (at(&self.rng), at(&self.rng_prev))
    }
}

/// For `s = 2` scores `(s₀, s₁)` per agent (device layout): `(s₀ − s₁, 0)`, the stored form.
pub fn normalize_s2(params: &MgParams, scores: &mut [i32]) {
    if params.s != 2 {
        return;
    }
    let n = params.n as usize;
    let (first, second) = scores.split_at_mut(n);
    for (a, b) in first.iter_mut().zip(second.iter_mut()) {
        *a = a.wrapping_sub(*b);
        *b = 0;
    }
}

/// The lean `s = 2` agent states (`(d << 1) | k` per agent, `lockstep_shared::mg::choose_s2`) of
/// `state`: `d` the score difference, `k` the table each agent used in step `next − 1`, found by
/// replaying its draw from `rng_prev` (0 before the first vote and after the last settle).
pub fn pack_s2(state: &GameState) -> Vec<i16> {
    let p = &state.params;
    let n = p.n as usize;
    let mut out = vec![0i16; n];
    let voted = state.next >= 1 && state.next <= p.p;
    for g in 0..p.groups {
        let (_, mut prev) = state.generators(g);
        for j in 0..p.group_len(g) {
            let a = p.agent(g, j) as usize;
            let d = state.scores[a].wrapping_sub(state.scores[n + a]);
            let k = if voted { choose_s2(d, prev.next_u32()) as i32 } else { 0 };
            out[a] = ((d << 1) | k) as i16;
        }
    }
    out
}

/// The inverse of [`pack_s2`]: the model-independent state from lean agent states `packed`
/// (`n`), the tables, `rng` and the vote counts of a game at pass `next`; `rng_prev` is derived
/// by running `rng` back by the group's agent count (`jumps`: XSadd's jump table).
#[allow(clippy::too_many_arguments)]
pub fn unpack_s2(
    params: &MgParams,
    seed: u32,
    trial: u64,
    next: u32,
    h0: u32,
    packed: &[i16],
    tables: Vec<u32>,
    rng: Vec<u32>,
    ones: Vec<u64>,
    jumps: &JumpTable,
) -> GameState {
    let n = params.n as usize;
    let mut scores = vec![0i32; 2 * n];
    for (s, &x) in scores.iter_mut().zip(packed) {
        *s = (x as i32) >> 1;
    }
    let mut rng_prev = rng.clone();
    if next >= 1 && next <= params.p {
        // Back by `len` draws = forward by period − len (XSadd's period is 2^128 − 1); two group
        // lengths at most, so two matrices.
        let mut mats: Vec<(u64, lockstep_shared::xsadd::Gf2Matrix)> = Vec::new();
        for g in 0..params.groups {
            let len = params.group_len(g);
            let idx = match mats.iter().position(|(l, _)| *l == len) {
                Some(i) => i,
                None => {
                    mats.push((len, jumps.matrix(u128::MAX - len as u128)));
                    mats.len() - 1
                }
            };
            let i = 4 * g as usize;
            let x = Xsadd { s: [rng[i], rng[i + 1], rng[i + 2], rng[i + 3]] };
            let back = Xsadd::from_bits(mats[idx].1.apply(x.to_bits()));
            rng_prev[i..i + 4].copy_from_slice(&back.s);
        }
    }
    GameState { params: *params, seed, trial, next, h0, ones, tables, scores, rng, rng_prev }
}

/// A run of trials `first..first + trials`: the winner counts of the finished trials and, when
/// stopped mid-game, the game of trial `first + done`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunState {
    /// The game's parameters.
    pub params: MgParams,
    /// The seed.
    pub seed: u32,
    /// The first trial.
    pub first: u64,
    /// How many trials the run plays.
    pub trials: u64,
    /// Trials finished.
    pub done: u64,
    /// Winners per step summed over the finished trials (`p`).
    pub sums: Vec<u64>,
    /// The game in progress (trial `first + done`), if stopped mid-game.
    pub game: Option<GameState>,
}

/// The header parameters that identify a run, then the caller's `extra`.
pub fn identity(
    params: &MgParams,
    seed: u32,
    first: u64,
    trials: u64,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = [
        ("n", params.n.to_string()),
        ("m", params.m.to_string()),
        ("s", params.s.to_string()),
        ("p", params.p.to_string()),
        ("groups", params.groups.to_string()),
        ("seed", seed.to_string()),
        ("first", first.to_string()),
        ("trials", trials.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    v.extend(extra.iter().cloned());
    v
}

impl RunState {
    /// A run at its start (validated: parameters, a trial range within `u64`).
    pub fn start(params: &MgParams, seed: u32, first: u64, trials: u64) -> Result<RunState> {
        let params = validate(params.n, params.m, params.s, params.p, params.groups)?;
        if trials == 0 {
            return Err(Error::InvalidInput { what: "trial count", why: "0 trials".into() });
        }
        trial_end(first, trials)?;
        Ok(RunState { params, seed, first, trials, done: 0, sums: vec![0; params.p as usize], game: None })
    }

    /// Game steps done over the whole run (`done·p` plus the game in progress).
    pub fn steps_done(&self) -> u64 {
        self.done.saturating_mul(self.params.p as u64) + self.game.as_ref().map_or(0, |g| g.steps_done() as u64)
    }

    /// Whether every trial is finished.
    pub fn is_finished(&self) -> bool {
        self.done == self.trials
    }

    /// Adds a finished game's winners and moves to the next trial.
    pub fn finish_trial(&mut self, winners: &[u64]) {
        self.sums.iter_mut().zip(winners).for_each(|(s, w)| *s += w);
        self.done += 1;
        self.game = None;
    }

    /// Writes the checkpoint to `path` atomically, the caller's `extra` in its header.
    pub fn save(&self, path: &Path, extra: &[(String, String)]) -> Result<()> {
        let header =
            Header::new(FAMILY, self.steps_done(), identity(&self.params, self.seed, self.first, self.trials, extra));
        let g = self.game.as_ref();
        let progress = [
            self.done,
            g.is_some() as u64,
            g.map_or(0, |g| g.trial),
            g.map_or(0, |g| g.next as u64),
            g.map_or(0, |g| g.h0 as u64),
        ];
        let none: [u32; 0] = [];
        let (no64, no32): ([u64; 0], [i32; 0]) = ([], []);
        write(
            path,
            &header,
            &[
                Section::new("progress", &progress[..]),
                Section::new("sums", &self.sums[..]),
                Section::new("ones", g.map_or(&no64[..], |g| &g.ones[..])),
                Section::new("tables", g.map_or(&none[..], |g| &g.tables[..])),
                Section::new("scores", g.map_or(&no32[..], |g| &g.scores[..])),
                Section::new("rng", g.map_or(&none[..], |g| &g.rng[..])),
                Section::new("rngprev", g.map_or(&none[..], |g| &g.rng_prev[..])),
            ],
        )
    }

    /// Reads the checkpoint of a run of `params`, `seed`, trials `first..first + trials` and the
    /// caller's `extra` parameters. Refused with [`Error::Checkpoint`] when the file is not
    /// whole, of another format version or family, or written for another run (the error names
    /// the parameter that differs).
    pub fn load(
        path: &Path,
        params: &MgParams,
        seed: u32,
        first: u64,
        trials: u64,
        extra: &[(String, String)],
    ) -> Result<RunState> {
        let start = RunState::start(params, seed, first, trials)?;
        let params = start.params;
        let mut r = Reader::open(path, FAMILY)?;
        r.expect(&identity(&params, seed, first, trials, extra))?;
        let p = params.p as u64;
        let agents_words = params.n.saturating_mul(params.s as u64 * params.words as u64);
        let progress = r.values::<u64>("progress", 5)?;
        let sums = r.values::<u64>("sums", p)?;
        let ones = r.values::<u64>("ones", p)?;
        let tables = r.values::<u32>("tables", agents_words)?;
        let scores = r.values::<i32>("scores", params.n.saturating_mul(params.s as u64))?;
        let rng = r.values::<u32>("rng", 4 * params.groups)?;
        let rng_prev = r.values::<u32>("rngprev", 4 * params.groups)?;
        r.finish()?;
        let corrupt =
            |why: String| Error::Checkpoint { path: path.display().to_string(), why: format!("corrupt: {why}") };
        let [done, has_game, trial, next, h0] = progress[..] else {
            return Err(corrupt("the progress section is not 5 numbers".into()));
        };
        if done > trials || sums.len() as u64 != p || (has_game == 1 && done == trials) || has_game > 1 {
            return Err(corrupt(format!("{done} of {trials} trials done, game in progress {has_game}")));
        }
        if sums.iter().any(|&s| s > params.n.saturating_mul(done)) {
            return Err(corrupt("a winner sum above n·trials".into()));
        }
        let game = if has_game == 1 {
            if trial != first + done || next > p + 1 || h0 > u32::MAX as u64 {
                return Err(corrupt(format!("game of trial {trial} at pass {next}")));
            }
            let g = GameState {
                params,
                seed,
                trial,
                next: next as u32,
                h0: h0 as u32,
                ones,
                tables,
                scores,
                rng,
                rng_prev,
            };
            g.check().map_err(|e| corrupt(e.to_string()))?;
            Some(g)
        } else {
            None
        };
        Ok(RunState { params, seed, first, trials, done, sums, game })
    }
}
