//! A transcendental mix through the pure-Rust `libm`, identical bits on host and device.

/// `exp(x)·sin(x) + log(x)` in f64, evaluated with `libm` (no platform math library).
///
/// `log` of a negative number is NaN and of zero is −∞; NaN payloads are not part of the
/// contract (see the parity harness), everything else is compared bit for bit.
#[inline(always)]
pub fn exp_sin_log(x: f64) -> f64 {
    libm::exp(x) * libm::sin(x) + libm::log(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_textbook_values() {
        // exp(1)·sin(1) + log(1) = e·sin 1
        let want = core::f64::consts::E * 0.841_470_984_807_896_5;
        assert!((exp_sin_log(1.0) - want).abs() < 1e-15);
        assert_eq!(exp_sin_log(0.0), f64::NEG_INFINITY);
        assert!(exp_sin_log(-1.0).is_nan());
    }
}
