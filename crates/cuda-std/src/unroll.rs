//! Loops written out: [`unrolled`] calls its closure once per index with the index a constant,
//! so register arrays indexed by it stay registers.

/// Calls `f(0), f(1), …, f(P − 1)`, written out (`P ≤ 48`). After inlining each `j` is a
/// constant: an array indexed by it stays in registers, where a `while j < P` loop that LLVM
/// declines to unroll (long bodies: the bridge's steps with the increments' quotient, a
/// histogram pass's 48 counted offsets) would index it dynamically — a chain of selects or
/// local memory.
#[inline(always)]
pub fn unrolled<const P: usize>(mut f: impl FnMut(usize)) {
    const { assert!(P <= 48) };
    macro_rules! each {
        ($($j:literal)*) => {$(
            if P > $j {
                f($j);
            }
        )*};
    }
    each!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23
          24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47);
}
