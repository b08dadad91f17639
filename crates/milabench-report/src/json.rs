//! JSON helpers: NaN and infinities become `null`.

use serde::Serializer;

/// Serialises a float, writing `null` for NaN and infinities.
pub(crate) fn finite_or_null<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64(*x)
    } else {
        s.serialize_none()
    }
}
