//! Warp-aggregated atomics (Tabaru & Nakahira, HPCS 2013): `atomicAdd` without contention.
//!
//! When many lanes of a warp add into the same address, the hardware serialises their atomics.
//! Aggregation combines, inside the warp, the values of the lanes that target the same address;
//! only the lowest of them (the *writer*) issues the atomic, with the group's total. Every lane
//! still gets an `atomicAdd`-style return value: the writer's `old` plus the sum of the values of
//! the group's lanes **above** it (paper Fig. 1). This is a valid result for the serialisation
//! "highest lane first, … , writer last", so code written for `atomicAdd` keeps working.
//!
//! Variants (all compute bit-identical sums: lanes above me are added in increasing lane order,
//! starting from zero, `sum + value` is what the writer adds; see [`lanes::warp_model`]):
//!
//! - `atomic_add_aggregated_shared` (a, paper Fig. 3): lanes exchange (address, value) through
//!   a 32-entry per-warp scratch area in shared memory.
//! - `atomic_add_aggregated_shfl` (b, paper Fig. 5): exchange through warp shuffles, one
//!   broadcast per active lane, no shared memory; the same signature as `atomicAdd`.
//! - `atomic_add_aggregated_match` (c, not in the paper; sm_70+): `match.any.sync` finds the
//!   lanes with my address in one instruction; values move only inside each group, so distinct
//!   addresses cost nothing. This is `atomic_add_aggregated`, the recommended one.
//! - `atomic_add_aggregated_block` (d, paper Fig. 4): the whole block combines through shared
//!   memory and barriers. **Hazard**: every thread of the block must call it the same number of
//!   times (threads with nothing to add pass a null pointer); a thread that skips the call makes
//!   the barriers deadlock or mix calls (undefined behaviour). Prefer the warp-level variants.
//!
//! Plus `atomic_add_cas_f64`, an f64 add built from a 64-bit compare-and-swap loop (as the
//! paper had to before native f64 atomics), and `atomic_add_aggregated_cas_f64`, its aggregated
//! form, to reproduce the contention effect; and `atomic_count_aggregated`, the `+1` special
//! case (no value exchange: the group size is a popcount).
//!
//! Warp-level variants aggregate among the lanes that are active together at the call
//! (`activemask`); lanes of a divergent warp that arrive separately simply form separate
//! groups. Integer results wrap like `atom.add`. Float sums depend on which lanes meet, so
//! float accumulators are reproducible only when the caller makes them so.
//!
//! The lane arithmetic is pure and lives in [`lanes`], testable on the host.

#[cfg(target_arch = "nvptx64")]
use crate::atomic::{AtomicAdd, atomic_cas};
#[cfg(target_arch = "nvptx64")]
use crate::warp::{activemask, lane_id, sync_warp, warp_match_any_u64, warp_shuffle_idx, warp_vote_any};

/// Values an aggregated atomic can combine: a zero, a (wrapping, for integers) addition, and a
/// 64-bit image for shared-memory exchange.
pub trait Aggregate: Copy + crate::warp::WarpShuffleValue {
    /// The additive identity (`+0.0` for floats).
    const ZERO: Self;
    /// `self + other`: wrapping for integers (as `atom.add`), IEEE round-to-nearest for floats.
    fn agg_add(self, other: Self) -> Self;
    /// The bits of `self`, zero-extended to 64.
    fn to_bits64(self) -> u64;
    /// Inverse of [`Aggregate::to_bits64`].
    fn from_bits64(bits: u64) -> Self;
    /// `n` as this type (exact for `n ≤ 32` in every type): the total of `n` unit increments.
    fn from_count(n: u32) -> Self;
    /// The arithmetic of the hardware's native `atom.add` on a value in memory: the same as
    /// [`Aggregate::agg_add`] except for f32, where the PTX ISA specifies that
    /// "`atom.add.f32` rounds to nearest even and flushes subnormal inputs and results to
    /// sign-preserving zero". CPU models of a native f32 atomic use this.
    #[inline(always)]
    fn atom_add(self, other: Self) -> Self {
        self.agg_add(other)
    }
}

/// Sign-preserving flush of an f32 subnormal to zero (what `atom.add.f32` does to its inputs
/// and result).
#[inline(always)]
pub fn flush_subnormal_f32(x: f32) -> f32 {
    if x.is_subnormal() { f32::from_bits(x.to_bits() & 0x8000_0000) } else { x }
}

macro_rules! aggregate_int {
    ($($t:ty),*) => {$(
        impl Aggregate for $t {
            const ZERO: Self = 0;
            #[inline(always)]
            fn agg_add(self, other: Self) -> Self { self.wrapping_add(other) }
            #[inline(always)]
            fn to_bits64(self) -> u64 { self as u64 }
            #[inline(always)]
            fn from_bits64(bits: u64) -> Self { bits as Self }
            #[inline(always)]
            fn from_count(n: u32) -> Self { n as Self }
        }
    )*};
}
aggregate_int!(u32, i32, u64, i64);

macro_rules! aggregate_float {
    ($($t:ty as $bits:ty { $($own:item)* }),*) => {$(
        impl Aggregate for $t {
            const ZERO: Self = 0.0;
            #[inline(always)]
            fn agg_add(self, other: Self) -> Self { self + other }
            #[inline(always)]
            fn to_bits64(self) -> u64 { self.to_bits() as u64 }
            #[inline(always)]
            fn from_bits64(bits: u64) -> Self { Self::from_bits(bits as $bits) }
            #[inline(always)]
            fn from_count(n: u32) -> Self { n as Self }
            $($own)*
        }
    )*};
}
aggregate_float!(
    f32 as u32 {
        #[inline(always)]
        fn atom_add(self, other: Self) -> Self {
            flush_subnormal_f32(flush_subnormal_f32(self) + flush_subnormal_f32(other))
        }
    },
    f64 as u64 {}
);

/// Pure lane arithmetic of the aggregated atomics (host-testable), and a model of one warp's
/// call that the tests compare the device against.
pub mod lanes {
    use super::Aggregate;
    use crate::warp::mask::lanes_below;

    /// Lanes of `peers` strictly above `lane`: the lanes whose values `lane` adds up.
    #[inline(always)]
    pub const fn above(peers: u32, lane: u32) -> u32 {
        if lane >= 31 { 0 } else { peers & !lanes_below(lane + 1) }
    }

    /// The writer of a group: its lowest lane (`peers` must contain the caller, so is non-empty).
    #[inline(always)]
    pub const fn writer(peers: u32) -> u32 {
        peers.trailing_zeros()
    }

    /// One round of the match variant: the lane to read from (the lowest lane still in `rem`,
    /// or `lane` itself when `rem` is empty, whose value is then ignored) and `rem` without it.
    #[inline(always)]
    pub const fn next_source(rem: u32, lane: u32) -> (u32, u32) {
        if rem == 0 { (lane, 0) } else { (rem.trailing_zeros(), rem & (rem - 1)) }
    }

    /// What `match.any.sync` returns to `lane`: the active lanes whose address equals its own.
    pub fn match_any(active: u32, addrs: &[u64; 32], lane: u32) -> u32 {
        let mut m = 0;
        for a in crate::warp::mask::lanes(active) {
            if addrs[a as usize] == addrs[lane as usize] {
                m |= 1 << a;
            }
        }
        m
    }

    /// The paper's scan (Fig. 1) for `lane`: over active lanes `a` in increasing order with my
    /// address, add `value[a]` when `a > lane`, and track the lowest such `a` (the writer).
    /// Returns `(sum, writer)`.
    pub fn scan<T: Aggregate>(active: u32, addrs: &[u64; 32], values: &[T; 32], lane: u32) -> (T, u32) {
        let mut sum = T::ZERO;
        let mut writer = lane;
        for a in crate::warp::mask::lanes(active) {
            if addrs[a as usize] == addrs[lane as usize] {
                if lane < a {
                    sum = sum.agg_add(values[a as usize]);
                }
                if a < writer {
                    writer = a;
                }
            }
        }
        (sum, writer)
    }

    /// One warp's aggregated call, modelled: lanes in `active` add `values` at `addrs`;
    /// `atomic(addr, total)` is the writer's atomic (returning the old value), called once per
    /// distinct address in increasing writer order. Returns each active lane's result (inactive
    /// lanes get zero). Every device variant returns exactly these bits for a warp whose lanes
    /// are active together.
    pub fn warp_model<T: Aggregate>(
        active: u32,
        addrs: &[u64; 32],
        values: &[T; 32],
        mut atomic: impl FnMut(u64, T) -> T,
    ) -> [T; 32] {
        let mut out = [T::ZERO; 32];
        let mut olds = [T::ZERO; 32];
        for lane in crate::warp::mask::lanes(active) {
            let (sum, writer) = scan(active, addrs, values, lane);
            if writer == lane {
                olds[lane as usize] = atomic(addrs[lane as usize], sum.agg_add(values[lane as usize]));
            }
        }
        for lane in crate::warp::mask::lanes(active) {
            let (sum, writer) = scan(active, addrs, values, lane);
            out[lane as usize] = olds[writer as usize].agg_add(sum);
        }
        out
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn native_f32_atomic_model_flushes_subnormals() {
            let tiny = -f32::from_bits(0x0040_02d2); // a negative subnormal
            assert_eq!(0.0f32.agg_add(tiny).to_bits(), tiny.to_bits());
            assert_eq!(0.0f32.atom_add(tiny).to_bits(), 0); // +0 + (-0) = +0
            assert_eq!((-0.0f32).atom_add(tiny).to_bits(), 0x8000_0000);
            assert_eq!(1.0f32.atom_add(2.0), 3.0);
            assert_eq!((f32::MIN_POSITIVE * 1.5).atom_add(-f32::MIN_POSITIVE).to_bits(), 0); // subnormal result
            assert_eq!(f32::MIN_POSITIVE.atom_add(-f32::MIN_POSITIVE / 2.0), f32::MIN_POSITIVE); // subnormal input
            assert_eq!(tiny.to_bits64(), tiny.to_bits() as u64);
            let d = f64::from_bits(1);
            assert_eq!(0.0f64.atom_add(d), d); // f64 atomics keep subnormals
        }

        #[test]
        fn above_and_writer() {
            assert_eq!(above(u32::MAX, 0), u32::MAX - 1);
            assert_eq!(above(u32::MAX, 31), 0);
            assert_eq!(above(0b1011_0110, 2), 0b1011_0000);
            assert_eq!(above(0b1011_0110, 7), 0);
            assert_eq!(writer(0b1011_0100), 2);
            assert_eq!(writer(1 << 31), 31);
        }

        #[test]
        fn next_source_walks_up_then_points_home() {
            let (s, r) = next_source(0b1010_0000, 3);
            assert_eq!((s, r), (5, 0b1000_0000));
            let (s, r) = next_source(r, 3);
            assert_eq!((s, r), (7, 0));
            assert_eq!(next_source(0, 3), (3, 0));
        }

        #[test]
        fn match_any_groups_equal_addresses() {
            let mut addrs = [0u64; 32];
            for (l, a) in addrs.iter_mut().enumerate() {
                *a = (l % 3) as u64;
            }
            let active = 0x0000_ffff;
            let m = match_any(active, &addrs, 4);
            assert_eq!(m, (1 << 1) | (1 << 4) | (1 << 7) | (1 << 10) | (1 << 13));
            // inactive lanes never appear
            assert_eq!(match_any(0b1, &addrs, 0), 1);
        }

        #[test]
        fn scan_matches_match_any_arithmetic() {
            // The match variant's quantities (peers above, lowest peer) equal the paper's scan.
            let mut addrs = [0u64; 32];
            let mut values = [0u32; 32];
            for l in 0..32 {
                addrs[l] = ((l * 7) % 5) as u64;
                values[l] = 1 << (l % 16);
            }
            let active = 0xdead_beef;
            for lane in crate::warp::mask::lanes(active) {
                let peers = match_any(active, &addrs, lane);
                let (sum, w) = scan(active, &addrs, &values, lane);
                assert_eq!(w, writer(peers));
                let mut s = 0u32;
                let mut rem = above(peers, lane);
                while rem != 0 {
                    let (src, next) = next_source(rem, lane);
                    s = s.wrapping_add(values[src as usize]);
                    rem = next;
                }
                assert_eq!(s, sum, "lane {lane}");
            }
        }

        #[test]
        fn warp_model_returns_a_serialisation() {
            // One address, values 1..=32: lane l gets old + sum of lanes above l.
            let addrs = [9u64; 32];
            let mut values = [0u64; 32];
            for (l, v) in values.iter_mut().enumerate() {
                *v = l as u64 + 1;
            }
            let mut mem = 100u64;
            let mut calls = 0;
            let out = warp_model(u32::MAX, &addrs, &values, |_, t| {
                calls += 1;
                let o = mem;
                mem += t;
                o
            });
            assert_eq!(calls, 1);
            assert_eq!(mem, 100 + 32 * 33 / 2);
            assert_eq!(out[31], 100);
            assert_eq!(out[0], 100 + (2..=32).sum::<u64>());
            // olds sorted are prefix sums of the reversed lane order
            let mut acc = 100;
            for l in (0..32).rev() {
                assert_eq!(out[l], acc);
                acc += values[l];
            }
        }

        #[test]
        fn warp_model_counts_match_popcounts() {
            let mut addrs = [0u64; 32];
            for (l, a) in addrs.iter_mut().enumerate() {
                *a = (l / 5) as u64;
            }
            let ones = [1u32; 32];
            let mut mem = [0u32; 8];
            let out = warp_model(0x7fff_fffe, &addrs, &ones, |a, t| {
                let o = mem[a as usize];
                mem[a as usize] += t;
                o
            });
            assert_eq!(mem[0], 4); // lanes 1..=4 (lane 0 inactive)
            assert_eq!(mem[6], 1); // lane 30 (lane 31 inactive)
            for lane in 1..31u32 {
                let peers = match_any(0x7fff_fffe, &addrs, lane);
                assert_eq!(out[lane as usize], above(peers, lane).count_ones(), "lane {lane}");
            }
        }
    }
}

/// The exchange of the warp-level variants, up to the writer's atomic: returns
/// `(sum of the values of my group's lanes above me, writer lane, active mask)`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn finish<T: Aggregate>(
    active: u32,
    lane: u32,
    sum: T,
    writer: u32,
    ptr: *mut T,
    value: T,
    op: impl FnOnce(*mut T, T) -> T,
) -> T {
    let mut old = T::ZERO;
    if lane == writer {
        old = op(ptr, sum.agg_add(value));
    }
    let old = warp_shuffle_idx(active, old, writer);
    old.agg_add(sum)
}

/// The sum of the values of the lanes in `peers` above `lane` (match variant's exchange).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn sum_above<T: Aggregate>(active: u32, lane: u32, peers: u32, value: T) -> T {
    let mut rem = lanes::above(peers, lane);
    let mut sum = T::ZERO;
    // Uniform trip count (a vote), so every active lane executes every shuffle.
    while warp_vote_any(active, rem != 0) {
        let (src, next) = lanes::next_source(rem, lane);
        let v = warp_shuffle_idx(active, value, src);
        if rem != 0 {
            sum = sum.agg_add(v);
        }
        rem = next;
    }
    sum
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn aggregate_match<T: Aggregate>(ptr: *mut T, value: T, op: impl FnOnce(*mut T, T) -> T) -> T {
    let active = activemask();
    let lane = lane_id();
    let peers = warp_match_any_u64(active, ptr as u64);
    let sum = sum_above(active, lane, peers, value);
    finish(active, lane, sum, lanes::writer(peers), ptr, value, op)
}

/// Warp-aggregated add into global memory when nobody needs the old value (a histogram
/// bin): the lanes that target the same address combine their values as in
/// [`atomic_add_aggregated_match`], and the group's lowest lane issues one `red.global.add` —
/// the form `atomicAdd` takes when its result is unused.
///
/// # Safety
/// `ptr` is a generic pointer to global memory, aligned for `T`, and every concurrent access
/// to it is atomic. Needs sm_70+.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn global_red_aggregated<T: Aggregate + crate::atomic::AtomicRed>(ptr: *mut T, value: T) {
    let active = activemask();
    let lane = lane_id();
    let peers = warp_match_any_u64(active, ptr as u64);
    // The writer is the group's lowest lane: its "above" is the whole rest of the group.
    let sum = sum_above(active, lane, peers, value);
    if lane == lanes::writer(peers) {
        // SAFETY: forwarded from the caller.
        unsafe { T::global_red_add_at(ptr, sum.agg_add(value)) };
    }
}

/// Adds 1 per calling lane to the global `*ptr` with one `red.global.add` per distinct address
/// in the warp (no old value: [`atomic_count_aggregated`] without the round trip).
///
/// # Safety
/// As [`global_red_aggregated`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn global_red_count_aggregated<T: Aggregate + crate::atomic::AtomicRed>(ptr: *mut T) {
    let active = activemask();
    let peers = warp_match_any_u64(active, ptr as u64);
    if lane_id() == lanes::writer(peers) {
        // SAFETY: forwarded from the caller.
        unsafe { T::global_red_add_at(ptr, T::from_count(peers.count_ones())) };
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn aggregate_shfl<T: Aggregate>(ptr: *mut T, value: T, op: impl FnOnce(*mut T, T) -> T) -> T {
    let active = activemask();
    let lane = lane_id();
    let me = ptr as u64;
    let mut sum = T::ZERO;
    let mut writer = lane;
    let mut m = active;
    while m != 0 {
        let a = m.trailing_zeros();
        m &= m - 1;
        let addr_a = warp_shuffle_idx(active, me, a);
        let v_a = warp_shuffle_idx(active, value, a);
        if addr_a == me {
            if lane < a {
                sum = sum.agg_add(v_a);
            }
            if a < writer {
                writer = a;
            }
        }
    }
    finish(active, lane, sum, writer, ptr, value, op)
}

/// Warp-aggregated `atomicAdd` through `match.any.sync` (variant c): the recommended one, and
/// what [`atomic_add_aggregated`] is.
///
/// # Safety
/// As [`crate::atomic::atomic_add`]: `ptr` is valid, aligned, and only accessed atomically
/// meanwhile. Needs sm_70+.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_add_aggregated_match<T: Aggregate + AtomicAdd>(ptr: *mut T, value: T) -> T {
    // SAFETY: forwarded from the caller.
    aggregate_match(ptr, value, |p, v| unsafe { T::atomic_add_at(p, v) })
}

/// `atomicAdd` with warp aggregation: `old` for some serialisation of the warp's calls.
/// For u32, i32, u64, f32, f64 (the match variant, c).
///
/// # Safety
/// As [`crate::atomic::atomic_add`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_add_aggregated<T: Aggregate + AtomicAdd>(ptr: *mut T, value: T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { atomic_add_aggregated_match(ptr, value) }
}

/// Warp-aggregated `atomicAdd` through shuffles only (variant b, paper Fig. 5): one broadcast
/// of (address, value) per active lane.
///
/// # Safety
/// As [`crate::atomic::atomic_add`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_add_aggregated_shfl<T: Aggregate + AtomicAdd>(ptr: *mut T, value: T) -> T {
    // SAFETY: forwarded from the caller.
    aggregate_shfl(ptr, value, |p, v| unsafe { T::atomic_add_at(p, v) })
}

/// Warp-aggregated `atomicAdd` exchanging through shared memory (variant a, paper Fig. 3).
///
/// # Safety
/// As [`crate::atomic::atomic_add`], and `scratch` points to 64 `u64`s of shared memory that
/// belong to this warp alone (e.g. `base + 64 · warp_in_block`), used by nothing else during
/// the call.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_add_aggregated_shared<T: Aggregate + AtomicAdd>(ptr: *mut T, value: T, scratch: *mut u64) -> T {
    let active = activemask();
    let lane = lane_id();
    let me = ptr as u64;
    let (addrs, vals) = (scratch, scratch.wrapping_add(32));
    // SAFETY: scratch holds 64 u64 of this warp (caller); lane < 32.
    unsafe {
        addrs.add(lane as usize).write_volatile(me);
        vals.add(lane as usize).write_volatile(value.to_bits64());
    }
    sync_warp(active);
    let mut sum = T::ZERO;
    let mut writer = lane;
    let mut m = active;
    while m != 0 {
        let a = m.trailing_zeros();
        m &= m - 1;
        // SAFETY: a < 32, written by lane a before the warp barrier.
        let (addr_a, v_a) = unsafe { (addrs.add(a as usize).read_volatile(), vals.add(a as usize).read_volatile()) };
        if addr_a == me {
            if lane < a {
                sum = sum.agg_add(T::from_bits64(v_a));
            }
            if a < writer {
                writer = a;
            }
        }
    }
    sync_warp(active);
    if lane == writer {
        // SAFETY: forwarded from the caller; the writer publishes its old value in its slot.
        unsafe {
            let old = T::atomic_add_at(ptr, sum.agg_add(value));
            vals.add(lane as usize).write_volatile(old.to_bits64());
        }
    }
    sync_warp(active);
    // SAFETY: the writer's slot was written before the barrier above.
    let old = T::from_bits64(unsafe { vals.add(writer as usize).read_volatile() });
    sync_warp(active);
    old.agg_add(sum)
}

/// Block-aggregated `atomicAdd` (variant d, paper Fig. 4): every thread of the (1-D) block
/// publishes (address, value) in shared memory; after a barrier each scans the whole block.
/// Threads with nothing to add pass a null `ptr` (and get zero back).
///
/// # Safety
/// As [`crate::atomic::atomic_add`] for non-null `ptr`; `scratch` points to `2 · blockDim.x`
/// `u64`s of shared memory used by nothing else during the call; the block is 1-D; and
/// **every thread of the block makes the call** (the hazard of this variant: a thread that
/// skips it leaves the others at a barrier it never reaches).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_add_aggregated_block<T: Aggregate + AtomicAdd>(ptr: *mut T, value: T, scratch: *mut u64) -> T {
    use crate::thread::{block_dim_x, sync_threads, thread_idx_x};
    let t = thread_idx_x();
    let n = block_dim_x();
    let me = ptr as u64;
    let (addrs, vals) = (scratch, scratch.wrapping_add(n as usize));
    // SAFETY: t < blockDim.x and scratch holds 2·blockDim.x u64 (caller).
    unsafe {
        addrs.add(t as usize).write_volatile(me);
        vals.add(t as usize).write_volatile(value.to_bits64());
    }
    sync_threads();
    let mut sum = T::ZERO;
    let mut writer = t;
    if me != 0 {
        for a in 0..n {
            // SAFETY: a < blockDim.x, written before the barrier.
            let addr_a = unsafe { addrs.add(a as usize).read_volatile() };
            if addr_a == me {
                if t < a {
                    // SAFETY: as above.
                    sum = sum.agg_add(T::from_bits64(unsafe { vals.add(a as usize).read_volatile() }));
                }
                if a < writer {
                    writer = a;
                }
            }
        }
    }
    sync_threads();
    if me != 0 && writer == t {
        // SAFETY: ptr is valid (caller, non-null); the writer publishes its old value.
        unsafe {
            let old = T::atomic_add_at(ptr, sum.agg_add(value));
            vals.add(t as usize).write_volatile(old.to_bits64());
        }
    }
    sync_threads();
    let result = if me != 0 {
        // SAFETY: the writer's slot was written before the barrier.
        T::from_bits64(unsafe { vals.add(writer as usize).read_volatile() }).agg_add(sum)
    } else {
        T::ZERO
    };
    sync_threads();
    result
}

/// `f64` add built from a 64-bit compare-and-swap loop (CUDA guide's `atomicAdd` for doubles
/// before sm_60): retries explode under contention, which is what the paper measured.
///
/// # Safety
/// As [`crate::atomic::atomic_add`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_add_cas_f64(ptr: *mut f64, value: f64) -> f64 {
    let p = ptr as *mut u64;
    // SAFETY: ptr is valid and aligned (caller); a torn read is impossible for aligned u64.
    let mut old = unsafe { p.read_volatile() };
    loop {
        let assumed = old;
        let new = (f64::from_bits(assumed) + value).to_bits();
        // SAFETY: as above.
        old = unsafe { atomic_cas(p, assumed, new) };
        if old == assumed {
            return f64::from_bits(old);
        }
    }
}

/// [`atomic_add_cas_f64`] with warp aggregation (match variant): one CAS loop per group.
///
/// # Safety
/// As [`crate::atomic::atomic_add`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_add_aggregated_cas_f64(ptr: *mut f64, value: f64) -> f64 {
    // SAFETY: forwarded from the caller.
    aggregate_match(ptr, value, |p, v| unsafe { atomic_add_cas_f64(p, v) })
}

/// Adds 1 per calling lane to `*ptr`, one atomic per distinct address in the warp; returns the
/// value before this lane's increment in the serialisation "highest lane first" (as
/// [`atomic_add_aggregated`] with all values 1, but without exchanging values).
///
/// # Safety
/// As [`crate::atomic::atomic_add`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_count_aggregated<T: Aggregate + AtomicAdd>(ptr: *mut T) -> T {
    let active = activemask();
    let lane = lane_id();
    let peers = warp_match_any_u64(active, ptr as u64);
    let sum = T::from_count(lanes::above(peers, lane).count_ones());
    // SAFETY: forwarded from the caller.
    finish(active, lane, sum, lanes::writer(peers), ptr, T::from_count(1), |p, v| unsafe { T::atomic_add_at(p, v) })
}
