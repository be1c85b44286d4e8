//! Ranges of a bridge generation (`bridge::generate_range`, issue #25): a run made of chunks of
//! paths `first..first + count` equals the one-shot run bit for bit, for chunk sizes that do not
//! divide the path count, every source, both precisions, points and increments — on the CPU
//! (one thread and rayon) and on the GPU where it generates ranges, also into page-locked memory
//! (`generate_range_into` with `Pinned`, as the CLI's chunks). Bad ranges and lengths are refused.
//! A pitched run (`bridge::pitch`) holds the packed run's values in its first columns.

mod bridge_common;

use bridge_common::{normals, random_spec};
use lockstep::bridge::{self, Output, Plan, Precision, Source, check_range, generate_range};
use lockstep::{Backend, Error};
use lockstep_parity::{Bits, assert_bits_eq, config, gpu_or_skip};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// The source of kind `kind`: 0 Philox, 1 Sobol, 2 the buffer `z`.
fn source<'a, T: Precision>(kind: u8, z: &'a [T], seed: u64) -> Source<'a, T> {
    match kind % 4 {
        0 => Source::Philox { seed },
        1 => Source::Sobol { offset: seed as u32 % 1000 },
        2 => Source::PhiloxBoxMuller { seed },
        _ => Source::Buffer(z),
    }
}

/// The columns `first..first + count` of a `[row][paths]` array.
fn columns<T: Copy>(x: &[T], paths: usize, first: usize, count: usize) -> Vec<T> {
    x.chunks(paths.max(1)).flat_map(|row| row[first..first + count].iter().copied()).collect()
}

/// The run in chunks of `chunk` paths on `backend`, reassembled into `[row][paths]`.
#[allow(clippy::too_many_arguments)] // the property's parameters, passed through
fn chunked<T: Precision + Bits>(
    backend: Backend<'_>,
    plan: &Plan,
    kind: u8,
    z: &[T],
    seed: u64,
    paths: usize,
    chunk: usize,
    output: Output,
) -> Result<Vec<T>, Error> {
    let rows = plan.rows();
    let mut out = vec![T::ZERO; rows * paths];
    let mut first = 0;
    while first < paths {
        let count = chunk.min(paths - first);
        let zc = columns(z, paths, first, count);
        let part = generate_range(backend, plan, source(kind, &zc, seed), first as u64, count, output)?;
        for r in 0..rows {
            out[r * paths + first..r * paths + first + count].copy_from_slice(&part[r * count..(r + 1) * count]);
        }
        first += count;
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)] // one property's parameters
fn chunked_equals_one_shot<T: Precision + Bits>(
    seed: u64,
    n: usize,
    d: usize,
    order: u8,
    kind: u8,
    paths: usize,
    chunk: usize,
    inc: bool,
) -> Result<(), TestCaseError> {
    let plan = Plan::new(&random_spec(seed, n, d, order)).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let output = if inc { Output::Increments } else { Output::Paths };
    let z: Vec<T> = normals(plan.rows() * paths, seed ^ 0x5eed);
    let fail = |e: Error| TestCaseError::fail(e.to_string());
    let want = bridge::generate(Backend::CpuSeq, &plan, source(kind, &z, seed), paths, output).map_err(fail)?;
    let what = format!("{} kind {kind}, {paths} paths in chunks of {chunk}, {output:?}", T::NAME);
    for backend in [Backend::CpuSeq, Backend::Cpu] {
        let got = chunked(backend, &plan, kind, &z, seed, paths, chunk, output).map_err(fail)?;
        assert_bits_eq(&format!("{what} on {}", backend.name()), &got, &want, |_| String::new())?;
    }
    let gpu = gpu_or_skip!();
    let got = chunked(Backend::Gpu(gpu), &plan, kind, &z, seed, paths, chunk, output).map_err(fail)?;
    assert_bits_eq(&format!("{what} on the GPU"), &got, &want, |_| String::new())?;
    // The CLI's staging: the last chunk copied into the front of a larger page-locked buffer.
    let first = paths - chunk.min(paths);
    let count = paths - first;
    let zc = columns(&z, paths, first, count);
    let mut staged = lockstep::Pinned::<T>::new(gpu, plan.rows() * chunk + 1).map_err(fail)?;
    let len = plan.rows() * count;
    let src = source(kind, &zc, seed);
    bridge::generate_range_into(Backend::Gpu(gpu), &plan, src, first as u64, count, output, &mut staged[..len])
        .map_err(fail)?;
    let want_last = columns(&want, paths, first, count);
    assert_bits_eq(&format!("{what}: the last chunk into page-locked memory"), &staged[..len], &want_last, |_| {
        String::new()
    })?;
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn bridge_chunks_equal_one_shot_f32(seed: u64, n in 1usize..24, d in 1usize..=4, order: u8, kind: u8,
                                        paths in 1usize..700, chunk in 1usize..300, inc: bool) {
        chunked_equals_one_shot::<f32>(seed, n, d, order, kind, paths, chunk, inc)?;
    }

    #[test]
    fn bridge_chunks_equal_one_shot_f64(seed: u64, n in 1usize..24, d in 1usize..=4, order: u8, kind: u8,
                                        paths in 1usize..700, chunk in 1usize..300, inc: bool) {
        chunked_equals_one_shot::<f64>(seed, n, d, order, kind, paths, chunk, inc)?;
    }
}

/// A pitched run (`bridge::pitch`): `ld = pitch(paths)` paths, rows of whole 256 bytes,
/// whose first `paths` columns are the packed run's values bit for bit (a buffer source laid
/// out with the same stride, its extra columns other normals) — on the CPU and on the GPU, where
/// the stride takes the kernels of aligned counts.
fn pitched_equals_packed<T: Precision + Bits>(
    seed: u64,
    n: usize,
    d: usize,
    order: u8,
    kind: u8,
    paths: usize,
    inc: bool,
) -> Result<(), TestCaseError> {
    let plan = Plan::new(&random_spec(seed, n, d, order)).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let fail = |e: Error| TestCaseError::fail(e.to_string());
    let output = if inc { Output::Increments } else { Output::Paths };
    let ld = bridge::pitch::<T>(paths).map_err(fail)?;
    let per_row = bridge::PITCH_BYTES / size_of::<T>();
    prop_assert!(ld >= paths && ld - paths < per_row && ld.is_multiple_of(per_row), "pitch {ld} of {paths}");
    let rows = plan.rows();
    let z: Vec<T> = normals(rows * paths, seed ^ 0x5eed);
    let extra: Vec<T> = normals(rows * (ld - paths), seed ^ 0xe7a);
    let pad = ld - paths;
    let zp: Vec<T> = (0..rows)
        .flat_map(|r| z[r * paths..(r + 1) * paths].iter().chain(&extra[r * pad..(r + 1) * pad]).copied())
        .collect();
    let want = bridge::generate(Backend::CpuSeq, &plan, source(kind, &z, seed), paths, output).map_err(fail)?;
    let what = format!("{} kind {kind}, {paths} paths pitched at {ld}, {output:?}", T::NAME);
    let got = bridge::generate(Backend::CpuSeq, &plan, source(kind, &zp, seed), ld, output).map_err(fail)?;
    assert_bits_eq(&format!("{what} on the CPU"), &columns(&got, ld, 0, paths), &want, |_| String::new())?;
    let gpu = gpu_or_skip!();
    let got = bridge::generate(Backend::Gpu(gpu), &plan, source(kind, &zp, seed), ld, output).map_err(fail)?;
    assert_bits_eq(&format!("{what} on the GPU"), &columns(&got, ld, 0, paths), &want, |_| String::new())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn bridge_pitched_equals_packed_f32(seed: u64, n in 1usize..24, d in 1usize..=4, order: u8, kind: u8,
                                        paths in 0usize..700, inc: bool) {
        pitched_equals_packed::<f32>(seed, n, d, order, kind, paths, inc)?;
    }

    #[test]
    fn bridge_pitched_equals_packed_f64(seed: u64, n in 1usize..24, d in 1usize..=4, order: u8, kind: u8,
                                        paths in 0usize..700, inc: bool) {
        pitched_equals_packed::<f64>(seed, n, d, order, kind, paths, inc)?;
    }
}

/// The benchmark's counts: 1,439,745 paths pitched at 1,439,808 (f32) and 1,439,776 (f64), the
/// paper's 64 steps; and a stride too large for `usize` is refused.
#[test]
fn pitch_of_the_benchmark_counts_and_its_limit() -> Result<(), TestCaseError> {
    assert_eq!(bridge::pitch::<f32>(1_439_745).ok(), Some(1_439_808));
    assert_eq!(bridge::pitch::<f64>(1_439_745).ok(), Some(1_439_776));
    assert_eq!(bridge::pitch::<f32>(1_439_744).ok(), Some(1_439_744));
    assert_eq!(bridge::pitch::<f64>(0).ok(), Some(0));
    assert_eq!(bridge::pitch::<f64>(1).ok(), Some(32));
    assert!(matches!(bridge::pitch::<f32>(usize::MAX - 3), Err(Error::TooLarge { .. })));
    pitched_equals_packed::<f32>(5, 63, 1, 0, 0, 20_001, true)?;
    pitched_equals_packed::<f64>(6, 63, 3, 0, 3, 20_003, false)
}

#[test]
fn chunks_larger_than_a_rayon_block_equal_one_shot() -> Result<(), TestCaseError> {
    // 4096 paths per rayon block: chunks that straddle blocks, and a last short one.
    chunked_equals_one_shot::<f32>(3, 7, 2, 0, 0, 10_001, 4_999, false)?;
    chunked_equals_one_shot::<f64>(4, 5, 1, 1, 1, 9_000, 4_097, true)
}

/// On the GPU a destination of the wrong length and an empty page-locked buffer are refused
/// before any work.
#[test]
fn gpu_range_into_refuses_bad_destinations() -> Result<(), TestCaseError> {
    let plan = Plan::new(&random_spec(2, 6, 1, 0)).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let gpu = gpu_or_skip!();
    let philox = Source::<f32>::Philox { seed: 3 };
    let mut short = vec![0.0f32; plan.rows() * 4 - 1];
    let e = bridge::generate_range_into(Backend::Gpu(gpu), &plan, philox, 7, 4, Output::Paths, &mut short).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { arg: "out", .. }), "{e}");
    let empty = lockstep::Pinned::<f32>::new(gpu, 0).unwrap_err();
    assert!(matches!(empty, Error::InvalidInput { .. }), "{empty}");
    Ok(())
}

#[test]
fn bad_ranges_are_refused() {
    let plan = Plan::new(&random_spec(1, 4, 1, 0)).expect("plan");
    let philox = Source::<f32>::Philox { seed: 1 };
    assert!(check_range(&plan, &philox, u32::MAX as u64 - 10, 10).is_ok());
    let past = check_range(&plan, &philox, u32::MAX as u64 - 10, 11).unwrap_err();
    assert!(matches!(past, Error::TooLarge { .. }), "{past}");
    assert!(check_range(&plan, &philox, u64::MAX, 1).is_err(), "no overflow");
    let sobol = Source::<f32>::Sobol { offset: 1000 };
    let late = check_range(&plan, &sobol, (1u64 << 32) - 1000 - 5, 6).unwrap_err().to_string();
    assert!(late.contains("Sobol"), "{late}");
    let z = vec![0.0f32; plan.rows() * 3];
    let short = generate_range(Backend::Cpu, &plan, Source::Buffer(&z), 100, 4, Output::Paths).unwrap_err();
    assert!(matches!(short, Error::LengthMismatch { .. }), "a buffer holds the range's normals: {short}");
    let empty = generate_range(Backend::Cpu, &plan, philox, 5, 0, Output::Paths).expect("an empty range");
    assert!(empty.is_empty());
    let mut small = vec![0.0f32; plan.rows() * 4 - 1];
    let e = bridge::generate_range_into(Backend::Cpu, &plan, philox, 5, 4, Output::Paths, &mut small).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { arg: "out", .. }), "{e}");
    let mut out = vec![0.0f32; plan.rows() * 4];
    bridge::generate_range_into(Backend::CpuSeq, &plan, philox, 5, 4, Output::Paths, &mut out).expect("a range");
    let want = generate_range(Backend::CpuSeq, &plan, philox, 5, 4, Output::Paths).expect("a range");
    assert_eq!(
        out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
}
