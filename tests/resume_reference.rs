//! Checkpoint and resume on the CPU (issue #25): for random problems and stop points, a run that
//! stops, writes a checkpoint, and resumes from the file for the rest equals the uninterrupted
//! run bit for bit — n-body (f32 and f64: positions, velocities, recorded frames) and the
//! Minority Game (winner sums; mid-game states, the CPU twin's and the GPU lean `s = 2` kernels'
//! storage, emulated here with the shared functions the kernels call). The GPU halves are in
//! `resume_parity.rs`; corrupt and mismatched files in `resume_errors.rs`.

use lockstep::Backend;
use lockstep::mg::{self, CpuGame, Engine, GameState, MgParams, RunState, Schedule};
use lockstep::nbody::{self, Checkpoint, Mode, NbodyFloat, Params, Segments, init};
use lockstep_parity::{assert_bits_eq, config, data};
use lockstep_shared::mg::{history_before, next_history, settle_s2, table_side, vote_s2, winning_side};
use lockstep_shared::xsadd::Xsadd;
use proptest::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lockstep-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn bodies<T: NbodyFloat>(n: usize, seed: u64) -> (Params<T>, nbody::System<T>) {
    let mut r = data::SplitMix64(seed);
    let s = init::plummer(n, seed).convert::<T>();
    let p =
        Params { g: T::from_f64(1.0), eps: T::from_f64(r.uniform(0.01, 0.1)), dt: T::from_f64(r.uniform(1e-3, 1e-2)) };
    (p, s)
}

fn seg<'a>(
    until: u64,
    every: u64,
    path: Option<&'a std::path::Path>,
    ckpt: u64,
    stop: Option<&'a AtomicBool>,
) -> Segments<'a> {
    Segments {
        until,
        every,
        energy: None,
        frames: true,
        schedule: Schedule { checkpoint: path, every: ckpt, extra: &[], stop },
    }
}

fn same_run<T: NbodyFloat + lockstep_parity::Bits>(
    what: &str,
    got: &Checkpoint<T>,
    want: &Checkpoint<T>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.step, want.step);
    assert_bits_eq(&format!("{what}: positions"), &got.system.pos, &want.system.pos, |i| format!("value {i}"))?;
    assert_bits_eq(&format!("{what}: velocities"), &got.system.vel, &want.system.vel, |i| format!("value {i}"))?;
    prop_assert_eq!(&got.recording.steps, &want.recording.steps);
    assert_bits_eq(&format!("{what}: frames"), &got.recording.frames, &want.recording.frames, |i| {
        format!("value {i}")
    })?;
    Ok(())
}

/// Stop (by the flag) once `stop_at` steps are done, checkpoint, load the file, finish; and
/// checkpoint every `every_ckpt` steps, load the last file, finish. Both equal one run.
fn nbody_case<T: NbodyFloat + lockstep_parity::Bits>(
    n: usize,
    seed: u64,
    steps: u64,
    every: u64,
    stop_at: u64,
    every_ckpt: u64,
) -> Result<(), TestCaseError> {
    let (p, s) = bodies::<T>(n, seed);
    let advance = |s: &mut nbody::System<T>, k: u64| nbody::run(Backend::Cpu, Mode::Exact, &p, s, k);
    let mut want = Checkpoint::start(p, Mode::Exact, s.clone())?;
    nbody::run_resumable(&mut want, &seg(steps, every, None, 0, None), advance, |_| {})?;

    let file = temp(&format!("nbody-{}-{seed}-{stop_at}.ckpt", T::NAME));
    let flag = AtomicBool::new(false);
    let mut first = Checkpoint::start(p, Mode::Exact, s.clone())?;
    let ended = nbody::run_resumable(&mut first, &seg(steps, every, Some(&file), 0, Some(&flag)), advance, |k| {
        if k >= stop_at {
            flag.store(true, Ordering::Relaxed)
        }
    })?;
    if let nbody::Ended::Stopped { step } = ended {
        prop_assert!(step >= stop_at && step < steps);
        let mut rest = Checkpoint::<T>::load(&file, &p, Mode::Exact, n, &[])?;
        prop_assert_eq!(rest.step, step);
        nbody::run_resumable(&mut rest, &seg(steps, every, None, 0, None), advance, |_| {})?;
        same_run("stopped and resumed", &rest, &want)?;
    } else {
        prop_assert_eq!(ended, nbody::Ended::Finished);
        same_run("never stopped", &first, &want)?;
    }

    let _ = std::fs::remove_file(&file);
    let mut periodic = Checkpoint::start(p, Mode::Exact, s)?;
    nbody::run_resumable(&mut periodic, &seg(steps, every, Some(&file), every_ckpt, None), advance, |_| {})?;
    same_run("with checkpoints", &periodic, &want)?;
    if every_ckpt < steps {
        let mut rest = Checkpoint::<T>::load(&file, &p, Mode::Exact, n, &[])?;
        prop_assert_eq!(rest.step, (steps - 1) / every_ckpt * every_ckpt);
        nbody::run_resumable(&mut rest, &seg(steps, every, None, 0, None), advance, |_| {})?;
        same_run("resumed from the last periodic checkpoint", &rest, &want)?;
    } else {
        prop_assert!(!file.exists(), "no checkpoint is due before the end");
    }
    let _ = std::fs::remove_file(&file);
    Ok(())
}

fn small_mg() -> impl Strategy<Value = MgParams> {
    (0u64..60, 1u32..=6, 1u32..=4, 1u32..30, 1u64..16).prop_map(|(half, m, s, p, g)| {
        let n = 2 * half + 1;
        MgParams::new(n, m, s, p, g.min(n))
    })
}

fn sums_of(params: &MgParams, seed: u32, first: u64, trials: u64) -> Vec<u64> {
    let mut sum = vec![0u64; params.p as usize];
    for tr in first..first + trials {
        let (o, _) = mg::play(params, seed, tr, None, false).expect("valid game");
        sum.iter_mut().zip(o.winners(params.n)).for_each(|(s, w)| *s += w);
    }
    sum
}

/// The lean `s = 2` kernels' passes (`crates/kernels/src/mg/s2.rs`), emulated with the shared
/// functions they call: packed agent states `(d << 1) | k`, no previous generators.
fn lean_passes(st: &GameState, packed: &mut [i16], rng: &mut [u32], ones: &mut [u64], from: u32, to: u32) {
    let p = st.params;
    let n = p.n;
    for k in from..to {
        let (settle, vote) = if k == 0 {
            (None, Some(st.h0))
        } else {
            let h_prev = history_before(st.h0, k - 1, &p, |t| ones[t as usize]);
            let w_prev = winning_side(ones[k as usize - 1], n);
            let h_cur = next_history(h_prev, w_prev, p.history_mask());
            (Some((h_prev, w_prev)), if k < p.p { Some(h_cur) } else { None })
        };
        let mut votes = 0u64;
        for g in 0..p.groups {
            let i = 4 * g as usize;
            let mut cur = Xsadd { s: [rng[i], rng[i + 1], rng[i + 2], rng[i + 3]] };
            for j in 0..p.group_len(g) {
                let a = p.agent(g, j);
                let word = |k: u32, h: u32| st.tables[p.table_index(a, k, h >> 5) as usize];
                let x = packed[a as usize] as i32;
                let d = match settle {
                    Some((hs, ws)) => settle_s2(x, word(0, hs), word(1, hs), hs, ws),
                    None => x >> 1,
                };
                let mut out = d << 1;
                if let Some(hv) = vote {
                    let (side, state) = vote_s2(d, cur.next_u32(), word(0, hv), word(1, hv), hv);
                    votes += side as u64;
                    out = state;
                    let _ = table_side;
                }
                packed[a as usize] = out as i16;
            }
            if vote.is_some() {
                rng[i..i + 4].copy_from_slice(&cur.s);
            }
        }
        if k < p.p {
            ones[k as usize] = votes;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases.min(24), ..config() })]

    #[test]
    fn nbody_resume_equals_uninterrupted_f64(n in 1usize..24, seed: u64, steps in 1u64..40, every in 1u64..7, stop in 0u64..40, ck in 1u64..12) {
        nbody_case::<f64>(n, seed, steps, every, stop % steps, ck)?;
    }

    #[test]
    fn nbody_resume_equals_uninterrupted_f32(n in 1usize..24, seed: u64, steps in 1u64..40, every in 1u64..7, stop in 0u64..40, ck in 1u64..12) {
        nbody_case::<f32>(n, seed, steps, every, stop % steps, ck)?;
    }

    /// A game stopped at any pass, exported, and resumed (on one thread or several) ends as one
    /// uninterrupted game.
    #[test]
    fn mg_game_state_resumes_bit_identically(params in small_mg(), seed: u32, trial in 0u64..4, at in 0u32..40, par: bool) {
        let (want, _) = mg::play(&params, seed, trial, None, false)?;
        let at = at % (params.p + 2);
        let mut game = CpuGame::new(&params, seed, trial, par)?;
        game.run_to(at);
        let state = game.state();
        state.check()?;
        let mut again = CpuGame::resume(&state, !par)?;
        prop_assert_eq!(again.state(), state.clone());
        again.run_to(params.p + 1);
        prop_assert_eq!(again.outcome(), want.clone());
        game.run_to(params.p + 1);
        prop_assert_eq!(game.outcome(), want);
    }

    /// The GPU's lean `s = 2` storage (emulated): the CPU state packed at pass `a`, lean passes
    /// to `b`, unpacked, resumed on the CPU = one game; and unpacking at `b` gives the CPU
    /// twin's own state at `b` byte for byte.
    #[test]
    fn mg_lean_s2_export_import_is_exact(half in 0u64..80, m in 1u32..=6, p in 1u32..40, g in 1u64..12, seed: u32, a in 0u32..42, b in 0u32..42) {
        let n = 2 * half + 1;
        let params = MgParams::new(n, m, 2, p, g.min(n));
        let (a, b) = { let (x, y) = (a % (p + 2), b % (p + 2)); (x.min(y), x.max(y)) };
        let (want, _) = mg::play(&params, seed, 0, None, false)?;
        let mut game = CpuGame::new(&params, seed, 0, false)?;
        game.run_to(a);
        let st = game.state();
        let mut packed = mg::pack_s2(&st);
        let (mut rng, mut ones) = (st.rng.clone(), st.ones.clone());
        lean_passes(&st, &mut packed, &mut rng, &mut ones, a, b);
        let table = mg::JumpTable::new();
        let back = mg::unpack_s2(&params, seed, 0, b, st.h0, &packed, st.tables.clone(), rng, ones, &table);
        game.run_to(b);
        prop_assert_eq!(&back, &game.state());
        let mut resumed = CpuGame::resume(&back, false)?;
        resumed.run_to(p + 1);
        prop_assert_eq!(resumed.outcome(), want);
    }

    /// A run of trials checkpointed every `ck` game steps (the last file kept), resumed from
    /// the file, gives the sums of one uninterrupted run; so does one stopped by the flag.
    #[test]
    fn mg_run_resume_equals_uninterrupted(params in small_mg(), seed: u32, first in 0u64..5, trials in 1u64..4, ck in 1u64..50, par: bool) {
        let want = sums_of(&params, seed, first, trials);
        let file = temp(&format!("mg-{seed}-{ck}.ckpt"));
        let _ = std::fs::remove_file(&file);
        let sched = Schedule { checkpoint: Some(&file), every: ck, extra: &[], stop: None };
        let mut run = RunState::start(&params, seed, first, trials)?;
        prop_assert_eq!(mg::run_resumable(Engine::Cpu { parallel: par }, &mut run, &sched, |_| {})?, mg::Ended::Finished);
        prop_assert_eq!(&run.sums, &want);
        let total = trials * params.p as u64;
        if ck < total {
            let mut rest = RunState::load(&file, &params, seed, first, trials, &[])?;
            prop_assert_eq!(rest.steps_done(), (total - 1) / ck * ck);
            mg::run_resumable(Engine::Cpu { parallel: !par }, &mut rest, &Schedule::default(), |_| {})?;
            prop_assert_eq!(&rest.sums, &want);
        }
        let flag = AtomicBool::new(true);
        let _ = std::fs::remove_file(&file);
        let sched = Schedule { checkpoint: Some(&file), every: 0, extra: &[], stop: Some(&flag) };
        let mut run = RunState::start(&params, seed, first, trials)?;
        prop_assert_eq!(mg::run_resumable(Engine::Cpu { parallel: par }, &mut run, &sched, |_| {})?, mg::Ended::Stopped { step: 0 });
        let mut rest = RunState::load(&file, &params, seed, first, trials, &[])?;
        mg::run_resumable(Engine::Cpu { parallel: par }, &mut rest, &Schedule::default(), |_| {})?;
        prop_assert_eq!(&rest.sums, &want);
        let _ = std::fs::remove_file(&file);
    }
}
