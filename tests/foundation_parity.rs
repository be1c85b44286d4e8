//! GPU = CPU, bit for bit, for every foundation kernel (proptest; skipped without a GPU).
//! Lengths 0..100_000 (most not multiples of the block size), seeded data with NaN, ∞,
//! subnormal and signed-zero payloads.

use lockstep::foundation as cpu;
use lockstep::foundation::{Foundation, Hopper};
use lockstep::{Backend, CopyDestination, DeviceBuffer, Error, Gpu};
use lockstep_parity::{assert_bits_eq, config, data, gpu_or_skip};
use proptest::prelude::*;

fn blocks() -> impl Strategy<Value = u32> {
    prop_oneof![Just(256u32), Just(32), Just(96), Just(1024)]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn saxpy_gpu_equals_cpu(len in 0usize..100_000, seed: u64, a in any::<u32>().prop_map(f32::from_bits), block in blocks()) {
        let x = data::f32s(len, seed);
        let y0 = data::f32s(len, seed ^ 1);
        let mut want = y0.clone();
        cpu::axpy_seq(a, &x, &mut want);
        let gpu = gpu_or_skip!();
        let f = Foundation::with_block_size(gpu, block)?;
        let mut got = y0.clone();
        f.saxpy(a, &x, &mut got)?;
        assert_bits_eq("saxpy", &got, &want, |i| format!("a={a:?} x={:?} y={:?} len={len} block={block}", x[i], y0[i]))?;
    }

    /// Sub-slices at odd offsets: the kernel must take its element-by-element path.
    #[test]
    fn saxpy_unaligned_gpu_equals_cpu(len in 0usize..20_000, seed: u64, ox in 0usize..4, oy in 0usize..4, a in -10.0f32..10.0) {
        let x = data::f32s(len + ox, seed);
        let y0 = data::f32s(len + oy, seed ^ 1);
        let mut want = y0.clone();
        cpu::axpy_seq(a, &x[ox..], &mut want[oy..]);
        let gpu = gpu_or_skip!();
        let f = Foundation::new(gpu)?;
        let dx = DeviceBuffer::from_slice(&x)?;
        let dy = DeviceBuffer::from_slice(&y0)?;
        let xs = dx.index(ox..);
        let mut ys = dy.index(oy..);
        f.saxpy_on_device(a, &xs, &mut ys)?;
        gpu.synchronize()?;
        let mut got = vec![0.0f32; len + oy];
        dy.copy_to(&mut got[..])?;
        assert_bits_eq("saxpy unaligned", &got, &want, |i| format!("offsets x+{ox} y+{oy}, index {i}"))?;
    }

    #[test]
    fn daxpy_gpu_equals_cpu(len in 0usize..100_000, seed: u64, a in any::<u64>().prop_map(f64::from_bits), block in blocks()) {
        let x = data::f64s(len, seed);
        let y0 = data::f64s(len, seed ^ 1);
        let mut want = y0.clone();
        cpu::axpy_seq(a, &x, &mut want);
        let gpu = gpu_or_skip!();
        let f = Foundation::with_block_size(gpu, block)?;
        let mut got = y0.clone();
        f.daxpy(a, &x, &mut got)?;
        assert_bits_eq("daxpy", &got, &want, |i| format!("a={a:?} x={:?} y={:?} len={len} block={block}", x[i], y0[i]))?;
    }

    #[test]
    fn count_exceeding_gpu_equals_cpu(len in 0usize..100_000, seed: u64, threshold in -150.0f32..150.0, block in blocks()) {
        let x = data::f32s(len, seed);
        let want = cpu::count_exceeding_seq(&x, threshold);
        let gpu = gpu_or_skip!();
        let f = Foundation::with_block_size(gpu, block)?;
        let got = f.count_exceeding(&x, threshold)?;
        prop_assert_eq!(got, want, "threshold={} len={} block={}", threshold, len, block);
    }

    #[test]
    fn warp_sum_f32_gpu_equals_cpu(len in 0usize..100_000, seed: u64, block in blocks()) {
        let x = data::f32s(len, seed);
        let want = cpu::warp_sums_seq(&x);
        let gpu = gpu_or_skip!();
        let f = Foundation::with_block_size(gpu, block)?;
        let got = f.warp_sums(&x)?;
        assert_bits_eq("warp_sum_f32", &got, &want, |w| format!("x[{}..{}] = {:?}", 32 * w, (32 * w + 32).min(len), &x[32 * w..(32 * w + 32).min(len)]))?;
    }

    #[test]
    fn block_sum_f64_gpu_equals_cpu(len in 0usize..100_000, seed: u64, wild in any::<bool>()) {
        let x = if wild { data::f64s(len, seed) } else { data::f64_range(len, seed, -1.0, 1.0) };
        let want = cpu::block_sums_seq(&x);
        let gpu = gpu_or_skip!();
        let f = Foundation::new(gpu)?;
        let got = f.block_sums(&x)?;
        assert_bits_eq("block_sum_f64", &got, &want, |b| format!("block {b} of len={len}, first input {:?}", x[256 * b]))?;
    }

    #[test]
    fn exp_sin_log_f64_gpu_equals_cpu(len in 0usize..100_000, seed: u64, wild in any::<bool>()) {
        let x = if wild { data::f64s(len, seed) } else { data::f64_range(len, seed, -50.0, 750.0) };
        let want = cpu::exp_sin_log_seq(&x);
        let gpu = gpu_or_skip!();
        let f = Foundation::new(gpu)?;
        let got = f.exp_sin_log(&x)?;
        assert_bits_eq("exp_sin_log_f64", &got, &want, |i| format!("x={:?} (bits {:#x})", x[i], x[i].to_bits()))?;
    }

    /// The architecture-specific kernel: on the sm_90 cubin, the CPU twin's bits for any block
    /// count; on any other image, the clear error that names where the kernel lives (never a
    /// launch, never a "missing kernel").
    #[test]
    fn cluster_probe_gpu_equals_cpu_where_its_image_is_loaded(blocks in prop_oneof![0u32..70, 1u32..(1 << 20)]) {
        let want = cpu::cluster_probe_cpu(blocks);
        let gpu = gpu_or_skip!();
        match Hopper::new(gpu) {
            Ok(c) => {
                prop_assert_eq!(gpu.loaded().what.as_str(), "sm_90 cubin");
                prop_assert_eq!(c.probe(blocks)?, want);
            }
            Err(e @ Error::KernelNotLoaded { .. }) => {
                prop_assert!(gpu.loaded().what != "sm_90 cubin", "{}", e);
                let msg = e.to_string();
                prop_assert!(msg.contains("cluster_probe") && msg.contains("sm_90 cubin"), "{}", msg);
                let refused = matches!(cpu::cluster_probe(Backend::Gpu(gpu), blocks), Err(Error::KernelNotLoaded { .. }));
                prop_assert!(refused, "the Backend entry must refuse it too");
            }
            Err(e) => prop_assert!(false, "unexpected error: {}", e),
        }
        // the portable PTX never holds it, whatever the device
        let ptx_gpu = Gpu::with_ptx(gpu.ordinal(), lockstep::ptx::module())?;
        prop_assert!(!ptx_gpu.has_kernel("cluster_probe"));
        let refused = matches!(Hopper::new(&ptx_gpu), Err(Error::KernelNotLoaded { .. }));
        prop_assert!(refused, "the PTX must refuse cluster_probe");
    }
}
