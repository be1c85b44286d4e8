//! CPU twins of the Minority Game: one thread, and rayon with any thread count, on the same
//! per-group passes ([`lockstep_shared::mg::group_pass`]) the kernels run, from the set-up of
//! `problem.rs` that every model, GPU included, starts from.
//!
//! The contract (groups, stream offsets, order of draws) is written down in
//! [`lockstep_shared::mg`].

use super::problem::{Outcome, Setup, Trace, draws_of_group, setup_share, trial_end, validate, winner_ratio};
use super::state::{GameState, normalize_s2};
use crate::error::{Error, Result};
use lockstep_shared::mg::{
    Agents, MgParams, NoTrace, Pass, Recorder, build_tables, group_pass, history_before, next_history, winning_side,
};
use lockstep_shared::xsadd::Xsadd;
use rayon::prelude::*;

/// One group's agents on the CPU, local agent fastest-changing outermost (`[j][k][w]`).
struct Group {
    g: u64,
    len: u64,
    tables: Vec<u32>,
    scores: Vec<i32>,
    prev: Xsadd,
    cur: Xsadd,
    rec: GroupTrace,
}

struct Store<'a> {
    s: u32,
    words: u32,
    tables: &'a mut [u32],
    scores: &'a mut [i32],
}

impl Agents for Store<'_> {
    fn table(&self, j: u64, k: u32, w: u32) -> u32 {
        self.tables[((j * self.s as u64 + k as u64) * self.words as u64 + w as u64) as usize]
    }
    fn set_table(&mut self, j: u64, k: u32, w: u32, v: u32) {
        self.tables[((j * self.s as u64 + k as u64) * self.words as u64 + w as u64) as usize] = v;
    }
    fn score(&self, j: u64, k: u32) -> i32 {
        self.scores[(j * self.s as u64 + k as u64) as usize]
    }
    fn set_score(&mut self, j: u64, k: u32, v: i32) {
        self.scores[(j * self.s as u64 + k as u64) as usize] = v;
    }
}

#[derive(Default)]
struct GroupTrace {
    on: bool,
    len: u64,
    draws: Vec<u32>,
    used: Vec<u8>,
}

impl Recorder for GroupTrace {
    fn draw(&mut self, pos: u64, u: u32) {
        if self.on {
            self.draws[pos as usize] = u;
        }
    }
    fn used(&mut self, t: u32, j: u64, k: u32) {
        if self.on {
            self.used[(t as u64 * self.len + j) as usize] = k as u8;
        }
    }
}

impl Group {
    fn pass(&mut self, params: &MgParams, pass: Pass) -> u64 {
        let mut store = Store { s: params.s, words: params.words, tables: &mut self.tables, scores: &mut self.scores };
        let snapshot = self.cur;
        let ones = if self.rec.on {
            group_pass(params, self.g, self.len, &mut store, &mut self.prev, &mut self.cur, pass, &mut self.rec)
        } else {
            group_pass(params, self.g, self.len, &mut store, &mut self.prev, &mut self.cur, pass, &mut NoTrace)
        };
        self.prev = snapshot;
        ones
    }
}

/// Plays one game on the CPU: `threads = None` on this thread, `Some(t)` with rayon on a pool
/// of `t` threads (`Some(0)`: rayon's global pool). With `trace`, also returns the five items.
pub fn play(
    params: &MgParams,
    seed: u32,
    trial: u64,
    threads: Option<usize>,
    trace: bool,
) -> Result<(Outcome, Option<Trace>)> {
    let params = &validate(params.n, params.m, params.s, params.p, params.groups)?;
    check_host_size(params)?;
    let run = || play_inner(params, seed, trial, threads.is_some(), trace);
    match threads {
        Some(t) if t > 0 => rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .map_err(|e| Error::InvalidInput { what: "thread count", why: format!("rayon pool of {t}: {e}") })?
            .install(run),
        _ => run(),
    }
}

fn play_inner(
    params: &MgParams,
    seed: u32,
    trial: u64,
    parallel: bool,
    trace: bool,
) -> Result<(Outcome, Option<Trace>)> {
    let mut game = CpuGame::build(params, seed, trial, parallel, trace);
    game.run_to(params.p + 1);
    let outcome = game.outcome();
    if !trace {
        return Ok((outcome, None));
    }
    let n = params.n;
    let tables = game.device_tables();
    let mut used = vec![0u8; (n * params.p as u64) as usize];
    let mut draws = Vec::with_capacity(game.groups.len());
    for gr in game.groups {
        for j in 0..gr.len {
            let a = params.agent(gr.g, j);
            for t in 0..params.p as u64 {
                used[(t * n + a) as usize] = gr.rec.used[(t * gr.len + j) as usize];
            }
        }
        draws.push(gr.rec.draws);
    }
    let trace = Trace {
        winners: outcome.winners(n),
        history: outcome.history(params),
        outcome: outcome.clone(),
        tables,
        used,
        draws,
    };
    Ok((outcome, Some(trace)))
}

/// One game on the CPU played pass by pass, so it can stop between passes and export its state
/// ([`CpuGame::state`]) or start from one ([`CpuGame::resume`]). Groups run on rayon's current
/// pool (`parallel`) or on this thread; the bits are the same.
pub struct CpuGame {
    params: MgParams,
    seed: u32,
    trial: u64,
    h0: u32,
    groups: Vec<Group>,
    ones: Vec<u64>,
    next: u32,
    parallel: bool,
}

impl CpuGame {
    /// Trial `trial` of `seed`, its tables built (pass 0 next). Errors: what [`validate`]
    /// refuses; a game too large to index in host memory.
    pub fn new(params: &MgParams, seed: u32, trial: u64, parallel: bool) -> Result<CpuGame> {
        let params = &validate(params.n, params.m, params.s, params.p, params.groups)?;
        check_host_size(params)?;
        Ok(CpuGame::build(params, seed, trial, parallel, false))
    }

    /// A rank's share of trial `trial` of `seed` split over ranks: groups `groups` only, their
    /// tables built (pass 0 next). Play it with [`CpuGame::pass_local`] and
    /// [`CpuGame::commit`], the vote counts summed over the ranks in between
    /// (`lockstep::mg::dist`). Errors: as [`CpuGame::new`]; groups past `params.groups`.
    pub fn share(
        params: &MgParams,
        seed: u32,
        trial: u64,
        parallel: bool,
        groups: std::ops::Range<u64>,
    ) -> Result<CpuGame> {
        let params = &validate(params.n, params.m, params.s, params.p, params.groups)?;
        check_host_size(params)?;
        if groups.start > groups.end || groups.end > params.groups {
            return Err(Error::InvalidInput {
                what: "groups of a share",
                why: format!("{groups:?} of {} groups", params.groups),
            });
        }
        Ok(CpuGame::build_groups(params, seed, trial, parallel, false, groups))
    }

    fn build(params: &MgParams, seed: u32, trial: u64, parallel: bool, trace: bool) -> CpuGame {
        CpuGame::build_groups(params, seed, trial, parallel, trace, 0..params.groups)
    }

    fn build_groups(
        params: &MgParams,
        seed: u32,
        trial: u64,
        parallel: bool,
        trace: bool,
        share: std::ops::Range<u64>,
    ) -> CpuGame {
        let Setup { h0, h0_draw, states } = setup_share(params, seed, trial, share.clone());
        let mut groups: Vec<Group> = states
            .into_iter()
            .zip(share)
            .map(|(rng, g)| {
                let len = params.group_len(g);
                let per = (params.s * params.words) as usize;
                let rec = if trace {
                    let mut draws = vec![0u32; draws_of_group(params, g) as usize];
                    if g == 0 {
                        draws[0] = h0_draw;
                    }
                    GroupTrace { on: true, len, draws, used: vec![0u8; (len * params.p as u64) as usize] }
                } else {
                    GroupTrace::default()
                };
                Group {
                    g,
                    len,
                    tables: vec![0u32; len as usize * per],
                    scores: vec![0i32; len as usize * params.s as usize],
                    prev: rng,
                    cur: rng,
                    rec,
                }
            })
            .collect();
        let build = |gr: &mut Group| {
            let mut store = Store { s: params.s, words: params.words, tables: &mut gr.tables, scores: &mut gr.scores };
            build_tables(params, gr.len, &mut store, &mut gr.cur, (gr.g == 0) as u64, &mut gr.rec);
            gr.prev = gr.cur;
        };
        if parallel {
            groups.par_iter_mut().for_each(build);
        } else {
            groups.iter_mut().for_each(build);
        }
        CpuGame { params: *params, seed, trial, h0, groups, ones: vec![0; params.p as usize], next: 0, parallel }
    }

    /// The game of `state` (checked against its parameters), ready for pass `state.next`.
    pub fn resume(state: &GameState, parallel: bool) -> Result<CpuGame> {
        let params = validate(state.params.n, state.params.m, state.params.s, state.params.p, state.params.groups)?;
        check_host_size(&params)?;
        state.check()?;
        let (s, words) = (params.s, params.words);
        let groups = (0..params.groups)
            .map(|g| {
                let len = params.group_len(g);
                let mut tables = vec![0u32; len as usize * (s * words) as usize];
                let mut scores = vec![0i32; len as usize * s as usize];
                for j in 0..len {
                    let a = params.agent(g, j);
                    for k in 0..s {
                        for w in 0..words {
                            tables[((j * s as u64 + k as u64) * words as u64 + w as u64) as usize] =
                                state.tables[params.table_index(a, k, w) as usize];
                        }
                        scores[(j * s as u64 + k as u64) as usize] = state.scores[params.score_index(a, k) as usize];
                    }
                }
                let (cur, prev) = state.generators(g);
                Group { g, len, tables, scores, prev, cur, rec: GroupTrace::default() }
            })
            .collect();
        Ok(CpuGame {
            params,
            seed: state.seed,
            trial: state.trial,
            h0: state.h0,
            groups,
            ones: state.ones.clone(),
            next: state.next,
            parallel,
        })
    }

    /// The next pass (`p + 1`: the game is over).
    pub fn next_pass(&self) -> u32 {
        self.next
    }

    /// Whether every pass is done.
    pub fn is_over(&self) -> bool {
        self.next > self.params.p
    }

    /// Runs the next pass (settles step `next − 1`, votes in step `next`); nothing when over.
    pub fn pass(&mut self) {
        if self.is_over() {
            return;
        }
        let votes = self.pass_local();
        self.commit(votes);
    }

    /// The next pass over this game's groups (all of them, or a rank's share): returns their
    /// side-1 votes; [`CpuGame::commit`] with the whole game's count ends the pass. Nothing
    /// (0) when over.
    pub fn pass_local(&mut self) -> u64 {
        let params = self.params;
        let k = self.next;
        if k > params.p {
            return 0;
        }
        let pass = if k == 0 {
            Pass::new(0, params.p, self.h0, 0, self.h0)
        } else {
            let ones = &self.ones;
            let h_prev = history_before(self.h0, k - 1, &params, |t| ones[t as usize]);
            let w_prev = winning_side(ones[k as usize - 1], params.n);
            Pass::new(k, params.p, h_prev, w_prev, next_history(h_prev, w_prev, params.history_mask()))
        };
        if self.parallel {
            self.groups.par_iter_mut().map(|gr| gr.pass(&params, pass)).sum()
        } else {
            self.groups.iter_mut().map(|gr| gr.pass(&params, pass)).sum()
        }
    }

    /// Ends the pass [`CpuGame::pass_local`] ran: `votes` is the whole game's side-1 count of
    /// that step (a share's own count summed over the ranks). Nothing when over.
    pub fn commit(&mut self, votes: u64) {
        let k = self.next;
        if k > self.params.p {
            return;
        }
        if k < self.params.p {
            self.ones[k as usize] = votes;
        }
        self.next += 1;
    }

    /// Runs passes up to (not including) `end` (at most `p + 1`).
    pub fn run_to(&mut self, end: u32) {
        while self.next < end.min(self.params.p + 1) {
            self.pass();
        }
    }

    /// The initial history and the vote counts so far (all of them once over).
    pub fn outcome(&self) -> Outcome {
        Outcome { h0: self.h0, ones: self.ones.clone() }
    }

    fn device_tables(&self) -> Vec<u32> {
        let params = &self.params;
        let mut tables = vec![0u32; (params.n * (params.s * params.words) as u64) as usize];
        for gr in &self.groups {
            for j in 0..gr.len {
                let a = params.agent(gr.g, j);
                for k in 0..params.s {
                    for w in 0..params.words {
                        let local = ((j * params.s as u64 + k as u64) * params.words as u64 + w as u64) as usize;
                        tables[params.table_index(a, k, w) as usize] = gr.tables[local];
                    }
                }
            }
        }
        tables
    }

    /// The model-independent state between passes (a copy: the game goes on unchanged).
    pub fn state(&self) -> GameState {
        let params = &self.params;
        let mut scores = vec![0i32; (params.n * params.s as u64) as usize];
        let mut rng = Vec::with_capacity(4 * self.groups.len());
        let mut rng_prev = Vec::with_capacity(4 * self.groups.len());
        for gr in &self.groups {
            for j in 0..gr.len {
                let a = params.agent(gr.g, j);
                for k in 0..params.s {
                    scores[params.score_index(a, k) as usize] = gr.scores[(j * params.s as u64 + k as u64) as usize];
                }
            }
            rng.extend_from_slice(&gr.cur.s);
            rng_prev.extend_from_slice(&gr.prev.s);
        }
        normalize_s2(params, &mut scores);
        GameState {
            params: *params,
            seed: self.seed,
            trial: self.trial,
            next: self.next,
            h0: self.h0,
            ones: self.ones.clone(),
            tables: self.device_tables(),
            scores,
            rng,
            rng_prev,
        }
    }
}

/// Refuses a game whose agents cannot be indexed in host memory.
fn check_host_size(params: &MgParams) -> Result<()> {
    let bytes_per_agent = params.s as u64 * (params.words as u64 + 1) * 4;
    if params.n.checked_mul(bytes_per_agent).is_none_or(|b| b > isize::MAX as u64) {
        return Err(Error::TooLarge { what: "agent count n for host memory", value: params.n, max: 0 });
    }
    Ok(())
}

/// Plays trials `first..first + trials` (each on one thread, trials in parallel with rayon)
/// and returns the winner ratio (winners / n) per step averaged over them. Winner counts are
/// summed as integers, so the result does not depend on the schedule.
pub fn mean_winner_ratio(params: &MgParams, seed: u32, first: u64, trials: u64) -> Result<Vec<f64>> {
    let end = trial_end(first, trials)?;
    let sums = (first..end)
        .into_par_iter()
        .map(|tr| play(params, seed, tr, None, false).map(|(o, _)| o.winners(params.n)))
        .try_reduce(
            || vec![0u64; params.p as usize],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                Ok(a)
            },
        )?;
    Ok(winner_ratio(&sums, params.n, trials))
}
