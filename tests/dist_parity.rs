//! A run split over ranks has the bits of the one-rank run (issue #22): the Minority Game
//! (groups split, per-step vote sums), n-body (bodies split, stage positions all-gathered) and
//! the bridge (paths split, every source) with k = 1, 2, 3, 5 virtual ranks of a `CpuGroup` —
//! on the CPU (one thread and rayon per rank), and on the GPU with the ranks sharing it (device
//! data through the host collectives), against the plain one-GPU run and the CPU twin. Also:
//! the errors a split refuses, and a rank that fails ends every rank's run.

mod bridge_common;

use bridge_common::{normals, random_spec};
use lockstep::bridge::{self, Output, Plan, Source};
use lockstep::dist::{Communicator, CpuGroup};
use lockstep::mg::{self, MgParams};
use lockstep::nbody::{self, Method, Mode, Params, System, init};
use lockstep::{Backend, Error};
use lockstep_parity::{Bits, assert_bits_eq, gpu_or_skip};

/// Panics with the first mismatch of `got` and `want`.
#[track_caller]
fn same<T: Bits>(got: &[T], want: &[T], what: &str) {
    if let Err(e) = assert_bits_eq(what, got, want, |_| String::new()) {
        panic!("{e}");
    }
}

const RANKS: [usize; 4] = [1, 2, 3, 5];

fn mg_cases() -> Vec<MgParams> {
    vec![
        mg::validate(101, 3, 2, 40, 7).unwrap(), // s = 2 (lean kernels), 7 groups over up to 5 ranks
        mg::validate(257, 5, 3, 25, 16).unwrap(), // s = 3 (general kernels)
        mg::validate(1001, 2, 2, 60, 250).unwrap(),
        mg::validate(5, 1, 1, 9, 5).unwrap(), // one agent per group, as many groups as ranks
    ]
}

#[test]
fn mg_split_over_cpu_ranks_equals_one_rank() {
    for params in mg_cases() {
        let (want, _) = mg::play(&params, 2026, 3, None, false).unwrap();
        for k in RANKS {
            for backend in [Backend::CpuSeq, Backend::Cpu] {
                let got = CpuGroup::run(k, |c| mg::dist::play(c, backend, &params, 2026, 3)).unwrap();
                for (r, o) in got.iter().enumerate() {
                    assert_eq!(o, &want, "{params:?} k = {k} rank {r} {}", backend.name());
                }
            }
        }
    }
}

#[test]
fn mg_refuses_fewer_groups_than_ranks() {
    let params = mg::validate(11, 2, 2, 5, 2).unwrap();
    let err = CpuGroup::run(3, |c| mg::dist::play(c, Backend::CpuSeq, &params, 1, 0)).unwrap_err();
    assert!(matches!(err, Error::InvalidInput { what: "group count", .. }), "{err}");
}

fn nbody_case(n: usize, seed: u64) -> (Params<f64>, System<f64>) {
    let mut s = init::ball(n, 2.0, 1.5, seed);
    for (i, v) in s.vel.iter_mut().enumerate() {
        if i % 4 != 3 {
            *v = ((i as f64) * 0.37).sin() * 0.2;
        }
    }
    (Params { g: 1.1, eps: 0.05, dt: 0.01 }, s)
}

#[test]
fn nbody_split_over_cpu_ranks_equals_one_rank() {
    for n in [1usize, 2, 7, 33] {
        let (p, s0) = nbody_case(n, n as u64);
        let mut want = s0.clone();
        nbody::run_seq(&p, &mut want, 3).unwrap();
        let (p32, s32) = (Params { g: 1.1f32, eps: 0.05, dt: 0.01 }, s0.convert::<f32>());
        let mut want32 = s32.clone();
        nbody::run_seq(&p32, &mut want32, 3).unwrap();
        for k in RANKS {
            for backend in [Backend::CpuSeq, Backend::Cpu] {
                let got = CpuGroup::run(k, |c| {
                    let mut s = s0.clone();
                    nbody::dist::run(c, backend, Method::Shared, &p, &mut s, 3)?;
                    let mut s32 = s32.clone();
                    nbody::dist::run(c, backend, Method::Shared, &p32, &mut s32, 3)?;
                    Ok((s, s32))
                })
                .unwrap();
                for (r, (s, s32)) in got.iter().enumerate() {
                    let what = format!("n = {n}, k = {k}, rank {r}, {}", backend.name());
                    same(&s.pos, &want.pos, &format!("f64 positions, {what}"));
                    same(&s.vel, &want.vel, &format!("f64 velocities, {what}"));
                    same(&s32.pos, &want32.pos, &format!("f32 positions, {what}"));
                    same(&s32.vel, &want32.vel, &format!("f32 velocities, {what}"));
                }
            }
        }
    }
}

fn sources<'a>(z: &'a [f64]) -> Vec<Source<'a, f64>> {
    vec![
        Source::Philox { seed: 77 },
        Source::PhiloxBoxMuller { seed: 78 },
        Source::Sobol { offset: 1 },
        Source::Buffer(z),
    ]
}

#[test]
fn bridge_split_over_cpu_ranks_equals_one_rank() {
    for (seed, steps, d, paths) in [(1u64, 7usize, 1usize, 13usize), (2, 16, 3, 4), (3, 5, 2, 1)] {
        let plan = Plan::new(&random_spec(seed, steps, d, seed as u8)).unwrap();
        let z: Vec<f64> = normals(plan.rows() * paths, seed);
        for source in sources(&z) {
            for output in [Output::Paths, Output::Increments] {
                let want = bridge::generate_seq(&plan, source, paths, output).unwrap();
                for k in RANKS {
                    let got =
                        CpuGroup::run(k, |c| bridge::dist::generate(c, Backend::Cpu, &plan, source, paths, output))
                            .unwrap();
                    for (r, g) in got.iter().enumerate() {
                        same(g, &want, &format!("{source:?} {output:?} paths {paths} k = {k} rank {r}"));
                    }
                }
            }
        }
    }
}

#[test]
fn a_failing_rank_ends_every_rank() {
    let params = mg::validate(101, 3, 2, 40, 7).unwrap();
    let err = CpuGroup::run(3, |c| {
        if c.rank() == 2 {
            // A rank whose input differs fails before its first collective.
            return mg::dist::play(c, Backend::CpuSeq, &MgParams { n: 4, ..params }, 1, 0);
        }
        mg::dist::play(c, Backend::CpuSeq, &params, 1, 0)
    })
    .unwrap_err();
    assert!(err.to_string().contains("even"), "the failing rank's own error first: {err}");
}

/// The share kernels (`mg_step_rank`, `_s2`): a game split over `k` virtual ranks on one GPU,
/// through `mg::dist::play` and by hand (shares prepared, passes launched, counts summed on the
/// host), equals the plain kernel-per-step game and the CPU twin.
#[test]
fn mg_step_rank_shares_on_one_gpu_equal_the_game() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = gpu_or_skip!();
    let mgk = mg::Mg::new(gpu)?;
    for params in mg_cases() {
        let (want, _) = mg::play(&params, 99, 1, None, false)?;
        let plain = mgk.play(&params, 99, 1, mg::Distributed::KernelPerStep, false)?.0;
        assert_eq!(plain, want, "{params:?}: plain GPU game");
        for k in RANKS {
            for (r, o) in CpuGroup::run(k, |c| mg::dist::play(c, Backend::Gpu(gpu), &params, 99, 1))?.iter().enumerate()
            {
                assert_eq!(o, &want, "{params:?} k = {k} rank {r} on the GPU");
            }
        }
        // Two shares by hand: pass k on both, then both counts replaced by their sum.
        let half = params.groups / 2;
        if half == 0 {
            continue;
        }
        let mut games =
            [mgk.prepare_share(&params, 99, 1, 0..half)?, mgk.prepare_share(&params, 99, 1, half..params.groups)?];
        for g in games.iter_mut() {
            mgk.begin_on_device(g)?;
        }
        for k in 0..=params.p {
            let mut sum = 0u64;
            for g in games.iter_mut() {
                mgk.passes_on_device(g, k + 1)?;
                sum += mgk.outcome(g)?.ones.get(k as usize).copied().unwrap_or(0);
            }
            if k < params.p {
                for g in games.iter_mut() {
                    use lockstep::CopyDestination;
                    g.ones_mut().index(k as usize).copy_from(&[sum][..])?;
                }
            }
        }
        for g in &games {
            assert_eq!(mgk.outcome(g)?, want, "{params:?}: two shares by hand");
        }
    }
    Ok(())
}

/// The rank kernels (`nbody_rank_*`, global and tiled): bodies split over `k` virtual ranks on
/// one GPU equal the plain kernels' run and the CPU twin.
#[test]
fn nbody_rank_kernels_equal_the_one_gpu_run() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = gpu_or_skip!();
    for n in [1usize, 5, 300] {
        let (p, s0) = nbody_case(n, 7 + n as u64);
        let mut want = s0.clone();
        nbody::run_seq(&p, &mut want, 2)?;
        let mut plain = s0.clone();
        nbody::Nbody::new(gpu)?.run(Method::Shared, Mode::Exact, &p, &mut plain, 2)?;
        same(&plain.pos, &want.pos, "plain GPU n-body");
        let (p32, s32) = (Params { g: 1.1f32, eps: 0.05, dt: 0.01 }, s0.convert::<f32>());
        let mut want32 = s32.clone();
        nbody::run_seq(&p32, &mut want32, 2)?;
        // One lane per body (the `nbody_rank_*` kernels) against its own CPU twin.
        let (mut one, mut one32) = (s0.clone(), s32.clone());
        nbody::run_seq_split(&p, &mut one, 2, 0)?;
        nbody::run_seq_split(&p32, &mut one32, 2, 0)?;
        for k in RANKS {
            for method in [Method::Global, Method::Shared] {
                let got = CpuGroup::run(k, |c| {
                    let (mut a, mut a32) = (s0.clone(), s32.clone());
                    nbody::dist::run_split(c, Backend::Gpu(gpu), method, &p, &mut a, 2, 0)?;
                    nbody::dist::run_split(c, Backend::Gpu(gpu), method, &p32, &mut a32, 2, 0)?;
                    Ok((a, a32))
                })?;
                for (r, (a, a32)) in got.iter().enumerate() {
                    let what = format!("n = {n} k = {k} rank {r} {method:?} one lane per body on the GPU");
                    same(&a.pos, &one.pos, &format!("f64 positions, {what}"));
                    same(&a.vel, &one.vel, &format!("f64 velocities, {what}"));
                    same(&a32.pos, &one32.pos, &format!("f32 positions, {what}"));
                    same(&a32.vel, &one32.vel, &format!("f32 velocities, {what}"));
                }
                let got = CpuGroup::run(k, |c| {
                    let mut s = s0.clone();
                    nbody::dist::run(c, Backend::Gpu(gpu), method, &p, &mut s, 2)?;
                    let mut s32 = s32.clone();
                    nbody::dist::run(c, Backend::Gpu(gpu), method, &p32, &mut s32, 2)?;
                    Ok((s, s32))
                })?;
                for (r, (s, s32)) in got.iter().enumerate() {
                    let what = format!("n = {n} k = {k} rank {r} {method:?} on the GPU");
                    same(&s.pos, &want.pos, &format!("f64 positions, {what}"));
                    same(&s.vel, &want.vel, &format!("f64 velocities, {what}"));
                    same(&s32.pos, &want32.pos, &format!("f32 positions, {what}"));
                    same(&s32.vel, &want32.vel, &format!("f32 velocities, {what}"));
                }
            }
        }
    }
    Ok(())
}

/// The bridge split over `k` virtual ranks on one GPU (every source) equals the CPU twin.
#[test]
fn bridge_split_on_one_gpu_equals_the_cpu() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = gpu_or_skip!();
    let plan = Plan::new(&random_spec(5, 31, 2, 0))?;
    let paths = 1001;
    let z: Vec<f64> = normals(plan.rows() * paths, 5);
    for source in sources(&z) {
        let want = bridge::generate_seq(&plan, source, paths, Output::Paths)?;
        for k in RANKS {
            let got = CpuGroup::run(k, |c| {
                bridge::dist::generate(c, Backend::Gpu(gpu), &plan, source, paths, Output::Paths)
            })?;
            for (r, g) in got.iter().enumerate() {
                same(g, &want, &format!("{source:?} k = {k} rank {r} on the GPU"));
            }
        }
    }
    Ok(())
}
