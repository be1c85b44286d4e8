//! Bad input of the histograms and probes: typed errors with clear messages, nothing launched.
//! Pure validation runs everywhere; launcher checks use the GPU when present.

use lockstep::Error;
use lockstep::foundation::Probes;
use lockstep::histogram as cpu;
use lockstep::histogram::{CounterKind, Histograms, Method, check_method};
use lockstep_parity::gpu_or_skip;
use proptest::test_runner::TestCaseError;

fn why(e: Error) -> String {
    match &e {
        Error::InvalidInput { .. } | Error::LengthMismatch { .. } | Error::TooLarge { .. } => e.to_string(),
        other => panic!("unexpected error kind: {other:?}"),
    }
}

#[test]
fn bad_bins_are_refused_with_reasons() {
    assert!(why(cpu::bins(0.0, 1.0, 0).unwrap_err()).contains("at least one bin"));
    assert!(why(cpu::bins(1.0, 1.0, 5).unwrap_err()).contains("lo must be smaller than hi"));
    assert!(why(cpu::bins(2.0, 1.0, 5).unwrap_err()).contains("lo must be smaller than hi"));
    assert!(why(cpu::bins(f64::NAN, 1.0, 5).unwrap_err()).contains("finite"));
    assert!(why(cpu::bins(0.0, f64::INFINITY, 5).unwrap_err()).contains("finite"));
    assert!(why(cpu::bins(f64::NEG_INFINITY, 0.0, 5).unwrap_err()).contains("finite"));
    assert!(why(cpu::bins(-1e308, 1e308, 5).unwrap_err()).contains("overflows"));
    assert!(why(cpu::bins(0.0, 1.0, 1 << 40).unwrap_err()).contains("2^31"));
    assert!(why(cpu::bins_with_frac_bits(0.0, 1.0, 3, 60).unwrap_err()).contains("frac_bits"));
    let e = cpu::bins(0.0, 1.0, 0).unwrap_err();
    assert!(matches!(e, Error::InvalidInput { what: "histogram bins", .. }), "{e}");
}

#[test]
fn nan_and_out_of_range_values_are_dropped_and_reported() {
    let bins = cpu::bins(0.0, 1.0, 2).unwrap();
    let h = cpu::histogram_counts_seq(&bins, &[f64::NAN, -1.0, 1.0, 0.25, 0.75, 2.0]);
    assert_eq!(h.counts, vec![1, 1]);
    assert_eq!((h.nan, h.below, h.above), (1, 1, 2));
}

#[test]
fn methods_that_do_not_apply_are_refused() {
    let e = check_method(Method::Cas, CounterKind::Count, 10).unwrap_err().to_string();
    assert!(e.contains("f64 counters only"), "{e}");
    assert!(matches!(
        check_method(Method::CasAggregated, CounterKind::Fixed { unit: true }, 10),
        Err(Error::InvalidInput { what: "histogram method", .. })
    ));
    let e = check_method(Method::Count, CounterKind::F64 { unit: false }, 10).unwrap_err().to_string();
    assert!(e.contains("cannot add weights"), "{e}");
    assert!(check_method(Method::Count, CounterKind::F64 { unit: true }, 10).is_ok());
    let e = check_method(Method::Private, CounterKind::Count, 12_289).unwrap_err().to_string();
    assert!(e.contains("at most 12288 bins"), "{e}");
    assert!(check_method(Method::Private, CounterKind::Count, 12_288).is_ok());
    assert!(matches!(
        check_method(Method::Private, CounterKind::F64 { unit: true }, 6145),
        Err(Error::InvalidInput { what: "histogram method", .. })
    ));
    let e = check_method(Method::Wide, CounterKind::F64 { unit: true }, 10).unwrap_err().to_string();
    assert!(e.contains("u32 and u64 counts only"), "{e}");
    assert!(check_method(Method::Wide, CounterKind::Count, 100_000).is_ok());
    let e = check_method(Method::Partition, CounterKind::Fixed { unit: true }, 10).unwrap_err().to_string();
    assert!(e.contains("u32 and u64 counts only"), "{e}");
    let e = check_method(Method::Partition, CounterKind::Count, (1 << 25) + 1).unwrap_err().to_string();
    assert!(e.contains("at most 33554432 bins"), "{e}");
    assert!(check_method(Method::Partition, CounterKind::Count, 1 << 25).is_ok());
    assert_eq!(Method::from_name("partition"), Some(Method::Partition));
    assert_eq!(Method::from_name("cas-agg"), Some(Method::CasAggregated));
    assert_eq!(Method::from_name("nope"), None);
}

#[test]
fn bad_weights_are_refused() {
    let x = [0.5, 0.5];
    let e = cpu::check_weights(&x, Some(&[1.0])).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { arg: "weights", expected: 2, got: 1 }), "{e}");
    let e = cpu::check_weights(&x, Some(&[1.0, f64::NAN])).unwrap_err().to_string();
    assert!(e.contains("weight 1 is NaN"), "{e}");
    let bins = cpu::bins(0.0, 1.0, 1).unwrap();
    let e = cpu::check_fixed_range(&bins, &x, Some(&[1e12, 1.0])).unwrap_err().to_string();
    assert!(e.contains("overflow the 64-bit fixed-point"), "{e}");
}

#[test]
fn launchers_refuse_bad_input_before_launching() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    let a = Histograms::new(gpu).unwrap();
    assert!(matches!(Histograms::new(gpu).unwrap().with_grid_blocks(0), Err(Error::InvalidInput { .. })));
    let probes = Probes::new(gpu).unwrap();
    let bins = cpu::bins(0.0, 1.0, 10).unwrap();
    let x = vec![0.5; 100];
    assert!(matches!(a.histogram_counts::<u32>(Method::Cas, &bins, &x), Err(Error::InvalidInput { .. })));
    assert!(matches!(a.histogram_f64(Method::Plain, &bins, &x, Some(&[1.0; 99])), Err(Error::LengthMismatch { .. })));
    assert!(matches!(a.histogram_fixed(Method::Plain, &bins, &x, Some(&[1e15; 100])), Err(Error::InvalidInput { .. })));
    // More bins than this GPU's shared memory holds as 16-bit counters: refused, naming it.
    let over = cpu::bins(0.0, 1.0, a.wide_capacity() as u64 + 1).unwrap();
    let e = a.histogram_counts::<u32>(Method::Wide, &over, &x).unwrap_err();
    assert!(matches!(e, Error::InvalidInput { what: "histogram method", .. }), "{e}");
    assert!(e.to_string().contains(&format!("at most {} bins", a.wide_capacity())), "{e}");
    // Partition: weighted sums and pieces that are not whole chunks are refused.
    let e = a.histogram_f64(Method::Partition, &bins, &x, None).unwrap_err();
    assert!(matches!(e, Error::InvalidInput { what: "histogram method", .. }), "{e}");
    for piece in [0u64, 8191, 8193, (1 << 27) + 8192] {
        let e = Histograms::new(gpu).unwrap().with_partition_piece(piece).err().expect("refused");
        assert!(matches!(e, Error::InvalidInput { what: "partition piece", .. }), "{piece}: {e}");
    }
    // Partition bucket widths: past 2^15 refused; one that makes more than 1,024 buckets for k
    // refused before anything is written (the method writes the counters without zeroing them).
    let e = Histograms::new(gpu).unwrap().with_partition_shift(16).err().expect("refused");
    assert!(matches!(e, Error::InvalidInput { what: "partition bucket width", .. }), "{e}");
    let narrow = Histograms::new(gpu).unwrap().with_partition_shift(0).unwrap();
    let wide_k = cpu::bins(0.0, 1.0, 2000).unwrap();
    let dx = lockstep::DeviceBuffer::from_slice(&x).unwrap();
    let mut counts = lockstep::DeviceBuffer::from_slice(&[7u32; 2000]).unwrap();
    let mut dropped = lockstep::DeviceBuffer::from_slice(&[5u64; 3]).unwrap();
    let e = narrow.histogram_counts_on_device(Method::Partition, &wide_k, &dx, &mut counts, &mut dropped).unwrap_err();
    assert!(matches!(e, Error::InvalidInput { what: "partition bucket width", .. }), "{e}");
    assert!(e.to_string().contains("2000 buckets"), "{e}");
    assert_eq!(counts.as_host_vec().unwrap(), vec![7; 2000], "counts were written");
    assert_eq!(dropped.as_host_vec().unwrap(), vec![5; 3], "dropped was written");
    // Bins with public fields tampered with are revalidated.
    let mut bad = bins;
    bad.k = 0;
    assert!(matches!(
        a.histogram_counts::<u64>(Method::Plain, &bad, &x),
        Err(Error::InvalidInput { what: "histogram bins", .. })
    ));
    // Device buffers of the wrong length.
    let dx = lockstep::DeviceBuffer::from_slice(&x).unwrap();
    let mut counts = lockstep::DeviceBuffer::from_slice(&[7u32; 9]).unwrap();
    let mut dropped = lockstep::DeviceBuffer::from_slice(&[0u64; 3]).unwrap();
    let e = a.histogram_counts_on_device(Method::Match, &bins, &dx, &mut counts, &mut dropped).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { arg: "counts", expected: 10, got: 9 }), "{e}");
    assert_eq!(counts.as_host_vec().unwrap(), vec![7; 9], "counts were written");
    // Probes: targets past the counters, CAS on integers, bad block sizes.
    let mut c = [0u32; 4];
    let refused =
        |r: lockstep::Result<Vec<u32>>, what: &str| matches!(r, Err(Error::InvalidInput { what: w, .. }) if w == what);
    assert!(refused(probes.probe(Method::Match, 32, &[4], &[1u32], &mut c), "targets"));
    assert!(refused(probes.probe(Method::Cas, 32, &[0], &[1u32], &mut c), "probe method"));
    assert!(refused(probes.probe(Method::Match, 33, &[0], &[1u32], &mut c), "block size"));
    assert!(matches!(
        probes.probe(Method::Match, 32, &[0, 1], &[1u32], &mut c),
        Err(Error::LengthMismatch { arg: "values", .. })
    ));
    assert_eq!(c, [0; 4]);
    Ok(())
}
