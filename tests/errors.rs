//! Bad input: every refusal is a typed error with a message a user understands, and nothing
//! is launched or written. The pure checks run everywhere; the launcher checks need a GPU.

use lockstep::foundation::Foundation;
use lockstep::launch::{Grid1d, block_size, expect_len, len_u32};
use lockstep::{Error, Gpu};
use lockstep_parity::gpu_or_skip;
use proptest::test_runner::TestCaseError;

#[test]
fn zero_and_odd_block_sizes_are_refused() {
    for bad in [0u32, 1, 31, 100, 1056, u32::MAX] {
        let e = block_size(bad).unwrap_err();
        assert!(matches!(e, Error::InvalidInput { what: "block size", .. }), "{bad}: {e}");
        assert!(e.to_string().contains("multiple of 32"), "{e}");
    }
}

#[test]
fn lengths_past_the_kernel_index_range_are_refused() {
    let e = len_u32("x", 1 << 32).unwrap_err();
    assert!(matches!(e, Error::TooLarge { value, max, .. } if value == 1 << 32 && max == u32::MAX as u64));
    assert!(e.to_string().contains("at most 4294967295"), "{e}");
    assert!(matches!(Grid1d::for_len(1 << 40, 256), Err(Error::TooLarge { .. })));
}

#[test]
fn mismatched_lengths_name_the_argument() {
    let e = expect_len("y", 9, 10).unwrap_err().to_string();
    assert_eq!(e, "`y` has 9 elements, but this launch needs 10");
}

#[test]
fn ptx_with_a_nul_byte_is_refused_before_the_driver() {
    let e = Gpu::with_ptx(0, ".version 7.0\0").unwrap_err();
    assert!(matches!(e, Error::InvalidPtx { .. }), "{e}");
}

#[test]
fn a_missing_gpu_is_no_device() {
    // No driver library: NoDriver naming it; a driver: NoDevice for a GPU that is not there.
    match Gpu::with_ptx(4096, lockstep::ptx::module()) {
        Err(Error::NoDevice { reason }) => assert!(!reason.is_empty()),
        Err(Error::NoDriver { reason }) => assert!(reason.contains("libcuda.so.1"), "{reason}"),
        other => panic!("GPU 4096 should not exist: {other:?}"),
    }
    // The first GPU: present (and loads), or a NoDevice / NoDriver error, never anything else.
    match Gpu::new() {
        Ok(g) => assert!(!g.name().is_empty()),
        Err(Error::NoDevice { reason } | Error::NoDriver { reason }) => {
            assert!(!lockstep_parity::gpu_required(), "GPU required: {reason}")
        }
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[test]
fn ptx_that_is_not_ptx_fails_to_load() -> Result<(), TestCaseError> {
    gpu_or_skip!();
    let e = Gpu::with_ptx(0, "this is not PTX").unwrap_err();
    assert!(matches!(e, Error::ModuleLoad { .. }), "{e}");
    assert!(e.to_string().contains("failed to load"), "{e}");
    Ok(())
}

#[test]
fn launchers_refuse_bad_input_and_write_nothing() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    assert!(matches!(Foundation::with_block_size(gpu, 0), Err(Error::InvalidInput { .. })));
    let f = Foundation::new(gpu).unwrap();
    let x = vec![1.0f32; 100];
    let mut y = vec![7.0f32; 99];
    let e = f.saxpy(2.0, &x, &mut y).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { arg: "y", expected: 100, got: 99 }), "{e}");
    assert!(y.iter().all(|&v| v == 7.0), "y was written");
    let mut yd = vec![7.0f64; 3];
    assert!(matches!(f.daxpy(2.0, &[1.0; 4], &mut yd), Err(Error::LengthMismatch { .. })));
    assert_eq!(yd, vec![7.0; 3]);
    assert!(matches!(f.count_exceeding(&x, f32::NAN), Err(Error::InvalidInput { what: "threshold", .. })));
    // overlapping device ranges (cust's `index` hands out aliasing slices)
    let buf = lockstep::DeviceBuffer::from_slice(&[1.0f32; 64]).unwrap();
    let (xs, mut ys) = (buf.index(0..32), buf.index(16..48));
    let e = f.saxpy_on_device(2.0, &xs, &mut ys).unwrap_err();
    assert!(e.to_string().contains("overlap"), "{e}");
    // empty input: nothing to do, no launch, no error
    f.saxpy(2.0, &[], &mut []).unwrap();
    assert_eq!(f.warp_sums(&[]).unwrap(), Vec::<f32>::new());
    assert_eq!(f.count_exceeding(&[], 0.0).unwrap(), 0);
    Ok(())
}

#[test]
fn a_kernel_missing_from_the_module_is_named() -> Result<(), TestCaseError> {
    gpu_or_skip!();
    let module = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry only_this()\n{\n\tret;\n}\n";
    let g = Gpu::with_ptx(0, module).unwrap();
    match Foundation::new(&g) {
        Err(Error::MissingKernel { name: "saxpy" }) => {}
        other => panic!("expected MissingKernel(saxpy), got {:?}", other.err()),
    }
    Ok(())
}
