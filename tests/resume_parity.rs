//! Checkpoint and resume across the GPU and the CPU (issue #25; skipped without a GPU):
//! n-body exact runs checkpointed on the GPU resume on the GPU and on the CPU (and CPU → GPU)
//! with the bits of an uninterrupted CPU run; Minority Game runs checkpointed mid-game by the
//! kernel-per-step model (lean `s = 2` kernels and the general ones) resume on the CPU twin, on
//! the kernel-per-step model and, finishing the game first, on the standalone and grid-sync
//! models — and a GPU export equals the CPU twin's state at the same pass byte for byte.

use lockstep::mg::{self, CpuGame, Engine, Mg, MgParams, RunState, Schedule};
use lockstep::nbody::{self, Checkpoint, Method, Mode, Nbody, NbodyFloat, Params, Segments, init};
use lockstep::{Backend, Gpu};
use lockstep_parity::{Bits, assert_bits_eq, config, gpu_or_skip};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lockstep-resume-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn seg(until: u64, path: Option<&Path>, ckpt: u64) -> Segments<'_> {
    Segments {
        until,
        every: 3,
        energy: None,
        frames: true,
        schedule: Schedule { checkpoint: path, every: ckpt, extra: &[], stop: None },
    }
}

#[derive(Clone, Copy, Debug)]
enum Side {
    Cpu,
    Gpu,
}

fn advance<'a, T: NbodyFloat>(
    side: Side,
    nb: &'a Nbody<'a>,
    p: &'a Params<T>,
) -> impl FnMut(&mut nbody::System<T>, u64) -> lockstep::Result<()> + 'a {
    move |s, k| match side {
        Side::Cpu => nbody::run(Backend::Cpu, Mode::Exact, p, s, k),
        Side::Gpu => nb.run(Method::Shared, Mode::Exact, p, s, k),
    }
}

fn nbody_case<T: NbodyFloat + Bits>(
    gpu: &Gpu,
    n: usize,
    seed: u64,
    steps: u64,
    ck: u64,
    first: Side,
    then: Side,
) -> Result<(), TestCaseError> {
    let s = init::plummer(n, seed).convert::<T>();
    let p = Params { g: T::from_f64(1.0), eps: T::from_f64(0.05), dt: T::from_f64(5e-3) };
    let nb = Nbody::new(gpu)?;
    let mut want = Checkpoint::start(p, Mode::Exact, s.clone())?;
    nbody::run_resumable(&mut want, &seg(steps, None, 0), advance(Side::Cpu, &nb, &p), |_| {})?;
    let file = temp(&format!("nbody-{}-{seed}-{first:?}-{then:?}.ckpt", T::NAME));
    let _ = std::fs::remove_file(&file);
    let mut run = Checkpoint::start(p, Mode::Exact, s)?;
    nbody::run_resumable(&mut run, &seg(steps, Some(&file), ck), advance(first, &nb, &p), |_| {})?;
    let mut rest = Checkpoint::<T>::load(&file, &p, Mode::Exact, n, &[])?;
    prop_assert!(rest.step < steps);
    nbody::run_resumable(&mut rest, &seg(steps, None, 0), advance(then, &nb, &p), |_| {})?;
    for (what, got) in [("uninterrupted", &run), ("resumed", &rest)] {
        let tag = format!("{} {first:?} → {then:?} {what}", T::NAME);
        assert_bits_eq(&format!("{tag}: positions"), &got.system.pos, &want.system.pos, |i| format!("value {i}"))?;
        assert_bits_eq(&format!("{tag}: velocities"), &got.system.vel, &want.system.vel, |i| format!("value {i}"))?;
        assert_bits_eq(&format!("{tag}: frames"), &got.recording.frames, &want.recording.frames, |i| {
            format!("value {i}")
        })?;
    }
    let _ = std::fs::remove_file(&file);
    Ok(())
}

fn mg_params() -> impl Strategy<Value = MgParams> {
    // s = 2 with p ≤ 16,383 plays on the lean kernels; s = 3 on the general ones.
    (0u64..400, 1u32..=7, prop_oneof![Just(2u32), Just(3)], 1u32..60, 1u64..100).prop_map(|(half, m, s, p, g)| {
        let n = 2 * half + 1;
        MgParams::new(n, m, s, p, g.min(n))
    })
}

fn sums_of(params: &MgParams, seed: u32, first: u64, trials: u64) -> Vec<u64> {
    let mut run = RunState::start(params, seed, first, trials).expect("valid");
    mg::run_resumable(Engine::Cpu { parallel: true }, &mut run, &Schedule::default(), |_| {}).expect("plays");
    run.sums
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases.min(16), ..config() })]

    #[test]
    fn nbody_gpu_checkpoint_resumes_on_gpu_and_cpu(n in 1usize..300, seed: u64, steps in 2u64..30, ck in 1u64..29, f64s: bool) {
        let gpu = gpu_or_skip!();
        let ck = ck.min(steps - 1);
        for (a, b) in [(Side::Gpu, Side::Gpu), (Side::Gpu, Side::Cpu), (Side::Cpu, Side::Gpu)] {
            if f64s { nbody_case::<f64>(gpu, n, seed, steps, ck, a, b)?; } else { nbody_case::<f32>(gpu, n, seed, steps, ck, a, b)?; }
        }
    }

    /// The GPU's export at any pass equals the CPU twin's state there, byte for byte (lean and
    /// general kernels), and a CPU state imported by the GPU finishes as one uninterrupted game.
    #[test]
    fn mg_gpu_state_equals_cpu_state(params in mg_params(), seed: u32, trial in 0u64..4, at in 0u32..62) {
        let gpu = gpu_or_skip!();
        let mg = Mg::new(gpu)?;
        let at = at % (params.p + 2);
        let (want, _) = mg::play(&params, seed, trial, None, false)?;
        let mut cpu = CpuGame::new(&params, seed, trial, true)?;
        cpu.run_to(at);
        let mut game = mg.prepare(&params, seed, trial, false)?;
        mg.begin_on_device(&mut game)?;
        mg.passes_on_device(&mut game, at)?;
        let exported = mg.export_state(&game)?;
        prop_assert_eq!(&exported, &cpu.state(), "GPU export at pass {} of {:?}", at, params);
        let mut imported = mg.prepare_from(&cpu.state())?;
        mg.passes_on_device(&mut imported, params.p + 1)?;
        prop_assert_eq!(mg.outcome(&imported)?, want.clone());
        let mut back = CpuGame::resume(&exported, true)?;
        back.run_to(params.p + 1);
        prop_assert_eq!(back.outcome(), want);
    }

    /// Runs of trials checkpointed on the GPU's kernel-per-step model (mid-game) resume on the
    /// CPU and on every GPU model; a CPU checkpoint resumes on the GPU.
    #[test]
    fn mg_gpu_checkpoint_resumes_everywhere(params in mg_params(), seed: u32, trials in 1u64..4, ck in 1u64..80) {
        let gpu = gpu_or_skip!();
        let mg = Mg::new(gpu)?;
        let want = sums_of(&params, seed, 0, trials);
        let total = trials * params.p as u64;
        let ck = ck.min(total.saturating_sub(1)).max(1);
        let engines = [
            ("cpu", Engine::Cpu { parallel: true }),
            ("gpu step", Engine::GpuStep(&mg)),
            ("gpu grid-sync", Engine::GpuGridSync(&mg, None)),
            ("gpu standalone", Engine::GpuStandalone(&mg)),
        ];
        for (name, first) in [("gpu step", Engine::GpuStep(&mg)), ("cpu", Engine::Cpu { parallel: false })] {
            let file = temp(&format!("mg-{seed}-{ck}-{}.ckpt", name.replace(' ', "-")));
            let _ = std::fs::remove_file(&file);
            let mut run = RunState::start(&params, seed, 0, trials)?;
            let sched = Schedule { checkpoint: Some(&file), every: ck, extra: &[], stop: None };
            mg::run_resumable(first, &mut run, &sched, |_| {})?;
            prop_assert_eq!(&run.sums, &want, "{} uninterrupted", name);
            if total <= 1 {
                continue;
            }
            for (then, engine) in engines {
                let mut rest = RunState::load(&file, &params, seed, 0, trials, &[])?;
                prop_assert_eq!(rest.steps_done(), (total - 1) / ck * ck);
                mg::run_resumable(engine, &mut rest, &Schedule::default(), |_| {})?;
                prop_assert_eq!(&rest.sums, &want, "{} checkpoint resumed on {} ({:?})", name, then, params);
            }
            let _ = std::fs::remove_file(&file);
        }
    }
}
