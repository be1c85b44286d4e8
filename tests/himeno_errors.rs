//! Bad input of the Himeno solver: typed errors with clear messages, nothing launched. Pure
//! validation runs everywhere; launcher checks use the GPU when present.

use lockstep::Error;
use lockstep::himeno::{self, HimenoProblem};
use lockstep::himeno::{Himeno, HimenoSweep};
use lockstep_parity::gpu_or_skip;
use proptest::test_runner::TestCaseError;

#[test]
fn himeno_sizes_and_lengths_are_checked() {
    let e = HimenoProblem::by_name("XXL").unwrap_err().to_string();
    assert!(e.contains("no size named \"XXL\"") && e.contains("XS, S, M, L, XL"), "{e}");
    assert_eq!(himeno::grid_of("m").unwrap(), (257, 129, 129));
    let e = HimenoProblem::benchmark(2, 10, 10).unwrap_err().to_string();
    assert!(e.contains("at least 3"), "{e}");
    assert!(matches!(HimenoProblem::benchmark(70_000, 3, 3), Err(Error::TooLarge { .. })));
    let mut pr = HimenoProblem::benchmark(4, 4, 4).unwrap();
    pr.b.pop();
    let e = pr.check().unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { arg: "b", expected: 192, got: 191 }), "{e}");
    assert!(matches!(himeno::himeno_seq(&pr, 1), Err(Error::LengthMismatch { arg: "b", .. })));
}

#[test]
fn the_himeno_launcher_refuses_bad_input_before_launching() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    let himeno = Himeno::new(gpu).unwrap();
    // Himeno: bad block shapes and gosa codes.
    let pr = HimenoProblem::benchmark(5, 5, 5).unwrap();
    assert!(matches!(himeno.himeno(&pr, 1, 2, (48, 1)), Err(Error::InvalidInput { what: "Himeno block", .. })));
    assert!(matches!(himeno.himeno(&pr, 1, 2, (32, 0)), Err(Error::InvalidInput { what: "block shape", .. })));
    assert!(matches!(himeno.himeno(&pr, 1, 2, (1024, 2)), Err(Error::InvalidInput { what: "block shape", .. })));
    assert!(matches!(himeno.himeno(&pr, 1, 9, (32, 1)), Err(Error::InvalidInput { what: "gosa reduction", .. })));
    // The marching sweep's four shared planes must fit 48 KiB: 16·1026·3 bytes do not.
    let march = Himeno::new(gpu).unwrap().with_sweep(HimenoSweep::March);
    let e = march.himeno(&pr, 1, 2, (1024, 1)).unwrap_err();
    assert!(matches!(e, Error::InvalidInput { what: "Himeno block", .. }) && e.to_string().contains("49248"), "{e}");
    assert!(march.himeno(&pr, 1, 2, (512, 2)).is_ok());
    // The per-thread sweep's launch bounds: at most 256 threads per block.
    let thread = Himeno::new(gpu).unwrap().with_sweep(HimenoSweep::PerThread);
    let e = thread.himeno(&pr, 1, 2, (128, 4)).unwrap_err();
    assert!(
        matches!(e, Error::InvalidInput { what: "Himeno block", .. }) && e.to_string().contains("at most 256"),
        "{e}"
    );
    assert!(thread.himeno(&pr, 1, 2, (256, 1)).is_ok());
    Ok(())
}
