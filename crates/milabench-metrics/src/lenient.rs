//! Pieces shared by both paths of the `.data` decoder (the serde visitor and the byte scanner)
//! and the typed events, so that they read values by the same rules of [`crate::format`].

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};

/// An object key or a string: borrowed from the line when it has no escapes (the common case),
/// so it costs no allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key<'de> {
    /// Borrowed from the input.
    Borrowed(&'de str),
    /// Unescaped into a new string.
    Owned(String),
}

impl Key<'_> {
    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Reads an array such as `memory: [used, total]` one element at a time, each element pushed as
/// the number it reads as (`None` when it is none): a pair when the array holds exactly two
/// numbers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NumbersReader {
    items: [Option<f64>; 2],
    count: usize,
}

impl NumbersReader {
    /// The next element.
    pub(crate) fn push(&mut self, x: Option<f64>) {
        if let Some(slot) = self.items.get_mut(self.count) {
            *slot = x;
        }
        self.count += 1;
    }

    /// The pair the elements make, if they make one.
    pub(crate) fn pair(self) -> Option<[f64; 2]> {
        match (self.count, self.items) {
            (2, [Some(a), Some(b)]) => Some([a, b]),
            _ => None,
        }
    }
}
