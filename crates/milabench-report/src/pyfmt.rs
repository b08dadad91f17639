//! Python's float formatting (`{:10.2f}`, `{:6.1%}`), which prints `nan` and `inf` lower-case.

/// `format(x, "{width}.{precision}f")`.
pub fn fixed(x: f64, width: usize, precision: usize) -> String {
    let body = if x.is_nan() {
        "nan".to_owned()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_owned()
    } else {
        format!("{x:.precision$}")
    };
    format!("{body:>width$}")
}

/// `format(x, "{width}.{precision}%")`.
pub fn percent(x: f64, width: usize, precision: usize) -> String {
    let body = if x.is_nan() {
        "nan%".to_owned()
    } else if x.is_infinite() {
        if x > 0.0 { "inf%" } else { "-inf%" }.to_owned()
    } else {
        format!("{:.precision$}%", x * 100.0)
    };
    format!("{body:>width$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_python() {
        assert_eq!(fixed(7979.818309641414, 10, 2), "   7979.82");
        assert_eq!(fixed(f64::NAN, 10, 2), "       nan");
        assert_eq!(fixed(24456.0, 11, 0), "      24456");
        assert_eq!(fixed(0.0, 3, 3), "0.000");
        assert_eq!(percent(0.0294, 6, 1), "  2.9%");
        assert_eq!(percent(f64::NAN, 6, 1), "  nan%");
        assert_eq!(percent(0.0, 10, 2), "     0.00%");
    }
}
