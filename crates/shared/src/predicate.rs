//! Element predicates used by the counting kernels.

/// Whether `x` is strictly above `threshold`. NaN is above nothing (IEEE comparison), so NaN
/// elements are never counted.
#[inline(always)]
pub fn exceeds(x: f32, threshold: f32) -> bool {
    x > threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_and_equal_are_not_counted() {
        assert!(!exceeds(f32::NAN, 0.0));
        assert!(!exceeds(1.0, 1.0));
        assert!(exceeds(f32::INFINITY, f32::MAX));
        assert!(!exceeds(0.0, -0.0)); // +0 and -0 compare equal
    }
}
