//! Reduction trees with a fixed, documented order.
//!
//! Floating-point addition is not associative, so "the sum" is only reproducible if the order
//! of additions is part of the contract. lockstep's reductions use these trees on both sides:
//! the device walks them with warp shuffles or shared memory, the host with the loops below.

/// Lanes in a warp.
pub const WARP_SIZE: usize = 32;

/// Shuffle distances of the warp tree, in order. Step `d` adds lane `i + d` into lane `i` for
/// every `i < d`; after the last step lane 0 holds the sum.
pub const WARP_TREE_OFFSETS: [u32; 5] = [16, 8, 4, 2, 1];

/// Threads per block of the block-reduction kernel; its tree halves this many partials.
pub const BLOCK_REDUCE_THREADS: usize = 256;

/// Sum of 32 lanes in the warp-tree order (what lane 0 holds after `shfl.down` by
/// [`WARP_TREE_OFFSETS`]).
#[inline]
pub fn warp_tree_sum(mut lanes: [f32; WARP_SIZE]) -> f32 {
    for d in WARP_TREE_OFFSETS {
        let d = d as usize;
        for i in 0..d {
            lanes[i] += lanes[i + d];
        }
    }
    lanes[0]
}

/// The host twin of every shared-memory halving tree: for stride `N/2, N/4, …, 1`, slot
/// `i + stride` is added into slot `i` for every `i < stride`; returns slot 0. `N` is a power of
/// two (checked at compile time). The slots are left as the device leaves them.
#[inline]
pub fn halving_tree_sum<T: Copy + core::ops::AddAssign, const N: usize>(slots: &mut [T; N]) -> T {
    const { assert!(N.is_power_of_two(), "a halving tree needs a power-of-two width") };
    let mut stride = N / 2;
    while stride > 0 {
        for i in 0..stride {
            let upper = slots[i + stride];
            slots[i] += upper;
        }
        stride /= 2;
    }
    slots[0]
}

/// Sum of one block's partials in the shared-memory tree order of the `block_sum_f64` kernel
/// ([`halving_tree_sum`] over [`BLOCK_REDUCE_THREADS`] slots).
#[inline]
pub fn block_tree_sum(mut slots: [f64; BLOCK_REDUCE_THREADS]) -> f64 {
    halving_tree_sum(&mut slots)
}

/// Copies the `chunk`-th group of `N` elements of `data` into an array, padding the tail of the
/// last group with `fill` (the identity the kernels use for threads past the end).
#[inline]
pub fn padded_chunk<T: Copy, const N: usize>(data: &[T], chunk: usize, fill: T) -> [T; N] {
    let mut out = [fill; N];
    let start = chunk * N;
    for (k, slot) in out.iter_mut().enumerate() {
        if let Some(v) = data.get(start + k) {
            *slot = *v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warp_tree_is_exact_on_integers() {
        let lanes: [f32; WARP_SIZE] = core::array::from_fn(|i| i as f32);
        assert_eq!(warp_tree_sum(lanes), (0..32).sum::<i32>() as f32);
    }

    #[test]
    fn warp_tree_order_is_not_sequential_order() {
        // 1e8 + 1 + ... loses the ones sequentially; the tree pairs them first.
        let mut lanes = [1.0f32; WARP_SIZE];
        lanes[0] = 1.0e8;
        let seq = lanes.iter().fold(0.0f32, |s, v| s + v);
        assert_ne!(warp_tree_sum(lanes).to_bits(), seq.to_bits());
    }

    #[test]
    fn block_tree_is_exact_on_integers() {
        let slots: [f64; BLOCK_REDUCE_THREADS] = core::array::from_fn(|i| i as f64);
        assert_eq!(block_tree_sum(slots), (0..256).sum::<i32>() as f64);
    }

    #[test]
    fn halving_tree_pairs_neighbours_at_halving_strides() {
        // Order matters for floats: (1e8 + 1) + (-1e8 + 1) loses both ones; the tree pairs
        // slot 0 with slot 2 and slot 1 with slot 3 first: (1e8 - 1e8) + (1 + 1) = 2.
        let mut s = [1.0e8f32, 1.0, -1.0e8, 1.0];
        assert_eq!(halving_tree_sum(&mut s), 2.0);
        assert_eq!(s, [2.0, 2.0, -1.0e8, 1.0]); // upper slots keep their values
        let mut one = [7u32];
        assert_eq!(halving_tree_sum(&mut one), 7);
    }

    #[test]
    fn padded_chunk_pads_the_tail() {
        let data = [1u32, 2, 3, 4, 5];
        assert_eq!(padded_chunk::<u32, 4>(&data, 0, 0), [1, 2, 3, 4]);
        assert_eq!(padded_chunk::<u32, 4>(&data, 1, 0), [5, 0, 0, 0]);
    }
}
