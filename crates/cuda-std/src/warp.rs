//! Warp-level primitives: lane id, masks, shuffles, votes and matches (`*.sync` forms, sm_70+).
//!
//! Every function taking `mask` requires that all lanes named in `mask` execute the same call
//! with the same `mask` (CUDA's rule for `__shfl_sync` and friends).

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// All 32 lanes.
pub const FULL_MASK: u32 = u32::MAX;

/// This thread's lane in its warp, `0..32` (`%laneid`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn lane_id() -> u32 {
    let lane: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane, options(pure, nomem, nostack)) };
    lane
}

/// The lanes of this warp that are executing this instruction now (`__activemask`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn activemask() -> u32 {
    let m: u32;
    // SAFETY: `activemask.b32` has no preconditions. Not `pure`: it depends on divergence.
    unsafe { asm!("activemask.b32 {m};", m = out(reg32) m, options(nomem, nostack)) };
    m
}

/// Waits until every lane in `mask` reaches this point (`__syncwarp`), and orders their memory
/// accesses.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn sync_warp(mask: u32) {
    // SAFETY: see the module rule on `mask`.
    unsafe { asm!("bar.warp.sync {m};", m = in(reg32) mask, options(nostack)) };
}

/// Values that fit a warp shuffle: 32-bit types move in one `shfl`, 64-bit types in two.
pub trait WarpShuffleValue: Copy {
    /// Shuffle with PTX mode `MODE` (`down`, `up`, `bfly`, `idx`), operand `b`, clamp `c`.
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    fn shuffle<const MODE: u8>(self, mask: u32, b: u32) -> Self;
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn shfl32<const MODE: u8>(mask: u32, v: u32, b: u32) -> u32 {
    let r: u32;
    // SAFETY: `shfl.sync` reads registers of the lanes in `mask` (module rule).
    unsafe {
        match MODE {
            0 => {
                asm!("shfl.sync.down.b32 {r}, {v}, {b}, 31, {m};", r = out(reg32) r, v = in(reg32) v, b = in(reg32) b, m = in(reg32) mask, options(nomem, nostack))
            }
            1 => {
                asm!("shfl.sync.up.b32 {r}, {v}, {b}, 0, {m};", r = out(reg32) r, v = in(reg32) v, b = in(reg32) b, m = in(reg32) mask, options(nomem, nostack))
            }
            2 => {
                asm!("shfl.sync.bfly.b32 {r}, {v}, {b}, 31, {m};", r = out(reg32) r, v = in(reg32) v, b = in(reg32) b, m = in(reg32) mask, options(nomem, nostack))
            }
            _ => {
                asm!("shfl.sync.idx.b32 {r}, {v}, {b}, 31, {m};", r = out(reg32) r, v = in(reg32) v, b = in(reg32) b, m = in(reg32) mask, options(nomem, nostack))
            }
        }
    }
    r
}

macro_rules! shuffle_32 {
    ($($t:ty),*) => {$(
        impl WarpShuffleValue for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            fn shuffle<const MODE: u8>(self, mask: u32, b: u32) -> Self {
                <$t>::from_ne_bytes(shfl32::<MODE>(mask, u32::from_ne_bytes(self.to_ne_bytes()), b).to_ne_bytes())
            }
        }
    )*};
}
macro_rules! shuffle_64 {
    ($($t:ty),*) => {$(
        impl WarpShuffleValue for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            fn shuffle<const MODE: u8>(self, mask: u32, b: u32) -> Self {
                let bits = u64::from_ne_bytes(self.to_ne_bytes());
                let lo = shfl32::<MODE>(mask, bits as u32, b);
                let hi = shfl32::<MODE>(mask, (bits >> 32) as u32, b);
                <$t>::from_ne_bytes((((hi as u64) << 32) | lo as u64).to_ne_bytes())
            }
        }
    )*};
}
shuffle_32!(u32, i32, f32);
shuffle_64!(u64, i64, f64);

/// The value of lane `lane_id + delta` (`__shfl_down_sync`); lanes past 31 get their own value.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn warp_shuffle_down<T: WarpShuffleValue>(mask: u32, value: T, delta: u32) -> T {
    value.shuffle::<0>(mask, delta)
}

/// The value of lane `lane_id - delta` (`__shfl_up_sync`); lanes below 0 get their own value.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn warp_shuffle_up<T: WarpShuffleValue>(mask: u32, value: T, delta: u32) -> T {
    value.shuffle::<1>(mask, delta)
}

/// The value of lane `lane_id ^ lane_mask` (`__shfl_xor_sync`, butterfly).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn warp_shuffle_xor<T: WarpShuffleValue>(mask: u32, value: T, lane_mask: u32) -> T {
    value.shuffle::<2>(mask, lane_mask)
}

/// The value of lane `src_lane` (`__shfl_sync`, broadcast).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn warp_shuffle_idx<T: WarpShuffleValue>(mask: u32, value: T, src_lane: u32) -> T {
    value.shuffle::<3>(mask, src_lane)
}

/// Bit `i` set iff lane `i` (in `mask`) has `predicate` true (`__ballot_sync`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn warp_vote_ballot(mask: u32, predicate: bool) -> u32 {
    let r: u32;
    // SAFETY: module rule on `mask`.
    unsafe {
        asm!("{{ .reg .pred p; setp.ne.u32 p, {x}, 0; vote.sync.ballot.b32 {r}, p, {m}; }}",
             r = out(reg32) r, x = in(reg32) predicate as u32, m = in(reg32) mask, options(nomem, nostack))
    };
    r
}

/// Whether `predicate` is true on any lane in `mask` (`__any_sync`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn warp_vote_any(mask: u32, predicate: bool) -> bool {
    warp_vote_ballot(mask, predicate) != 0
}

/// Whether `predicate` is true on every lane in `mask` (`__all_sync`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn warp_vote_all(mask: u32, predicate: bool) -> bool {
    warp_vote_ballot(mask, predicate) == mask
}

/// The lanes in `mask` whose `value` equals this lane's (`__match_any_sync`, sm_70+).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn warp_match_any(mask: u32, value: u32) -> u32 {
    let r: u32;
    // SAFETY: module rule on `mask`.
    unsafe {
        asm!("match.any.sync.b32 {r}, {v}, {m};", r = out(reg32) r, v = in(reg32) value, m = in(reg32) mask, options(nomem, nostack))
    };
    r
}

/// The lanes in `mask` whose 64-bit `value` equals this lane's (`__match_any_sync` on 64 bits).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn warp_match_any_u64(mask: u32, value: u64) -> u32 {
    let r: u32;
    // SAFETY: module rule on `mask`.
    unsafe {
        asm!("match.any.sync.b64 {r}, {v}, {m};", r = out(reg32) r, v = in(reg64) value, m = in(reg32) mask, options(nomem, nostack))
    };
    r
}

/// Pure lane-mask arithmetic (the part of warp programming that can be tested on the host).
pub mod mask {
    /// Lanes strictly below `lane` (`%lanemask_lt`).
    #[inline(always)]
    pub const fn lanes_below(lane: u32) -> u32 {
        if lane >= 32 { u32::MAX } else { (1u32 << lane) - 1 }
    }

    /// The lowest lane set in `mask` (the usual leader), or `None` for an empty mask.
    #[inline(always)]
    pub const fn leader(mask: u32) -> Option<u32> {
        if mask == 0 { None } else { Some(mask.trailing_zeros()) }
    }

    /// How many lanes of `mask` come before `lane`: this lane's rank among them.
    #[inline(always)]
    pub const fn rank(mask: u32, lane: u32) -> u32 {
        (mask & lanes_below(lane)).count_ones()
    }

    /// Iterates over the lanes set in `mask`, lowest first.
    #[inline(always)]
    pub fn lanes(mut mask: u32) -> impl Iterator<Item = u32> {
        core::iter::from_fn(move || {
            let lane = leader(mask)?;
            mask &= mask - 1;
            Some(lane)
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn lanes_below_edges() {
            assert_eq!(lanes_below(0), 0);
            assert_eq!(lanes_below(1), 1);
            assert_eq!(lanes_below(31), 0x7fff_ffff);
            assert_eq!(lanes_below(32), u32::MAX);
        }

        #[test]
        fn leader_and_rank() {
            assert_eq!(leader(0), None);
            assert_eq!(leader(0b1011_0000), Some(4));
            assert_eq!(rank(0b1011_0000, 4), 0);
            assert_eq!(rank(0b1011_0000, 7), 2);
            assert_eq!(rank(u32::MAX, 31), 31);
        }

        #[test]
        fn lanes_iterates_in_order() {
            let v: [u32; 3] = {
                let mut it = lanes(0x8000_0011);
                [it.next().unwrap(), it.next().unwrap(), it.next().unwrap()]
            };
            assert_eq!(v, [0, 4, 31]);
            assert_eq!(lanes(0).count(), 0);
            assert_eq!(lanes(u32::MAX).count(), 32);
        }
    }
}
