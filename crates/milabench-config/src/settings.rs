//! Settings layering (owned by the settings/placeholders work in progress).
