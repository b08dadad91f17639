//! Launch-time placeholders and expressions (work in progress).
