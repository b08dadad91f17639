//! serde building blocks for decoders of `.data` lines that read fields the way the typed events
//! do ([`crate::DataPayload`] and friends), by the rules of [`crate::format`]: a number may be
//! one of Python's quoted non-finite spellings, and a value of another shape is not an error,
//! only absent. Used by [`crate::LineDecoder`]s that project a line onto the few fields they need.

use std::fmt;

use serde::de::{self, IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::format::non_finite;

/// An object key or a string: borrowed from the line when it has no escapes (the common case),
/// so it costs no allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key<'de> {
    /// Borrowed from the input.
    Borrowed(&'de str),
    /// Unescaped into a new string.
    Owned(String),
}

impl Key<'_> {
    /// The text.
    pub fn as_str(&self) -> &str {
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

/// Implements `Deserialize` for `$name`, read with `deserialize_any`: the listed visitor methods
/// give the value of type `$out` for the shapes they accept, booleans, `null` and objects are
/// consumed and give `<$out>::default()`, and `$wrap` turns the value into `$name`. A shape the
/// list leaves out is an error, so list every other shape the value may take (strings, numbers,
/// arrays). The caller imports `serde::de::{self, SeqAccess}` for its methods.
#[macro_export]
macro_rules! lenient_value {
    ($name:ident, $out:ty, $wrap:expr, $what:literal, { $($visits:tt)* }) => {
        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $out;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_bool<E: ::serde::de::Error>(self, _: bool) -> Result<$out, E> {
                        Ok(<$out>::default())
                    }
                    fn visit_unit<E: ::serde::de::Error>(self) -> Result<$out, E> {
                        Ok(<$out>::default())
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$out, A::Error> {
                        while map
                            .next_entry::<::serde::de::IgnoredAny, ::serde::de::IgnoredAny>()?
                            .is_some()
                        {}
                        Ok(<$out>::default())
                    }
                    $($visits)*
                }
                deserializer.deserialize_any(V).map($wrap)
            }
        }
    };
}

/// A number (integer, float, or a quoted non-finite spelling, [`crate::format::non_finite`]);
/// `None` for any other value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Number(pub Option<f64>);

lenient_value!(Number, Option<f64>, Number, "a number", {
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<f64>, E> {
        Ok(Some(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<f64>, E> {
        Ok(Some(v as f64))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<f64>, E> {
        Ok(Some(v as f64))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<f64>, E> {
        Ok(non_finite(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<f64>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
});

/// The numbers of an array such as `memory: [used, total]`, read as the typed events read them:
/// `pair` when the array holds exactly two numbers, and `first`, its first element when that is a
/// number. Both `None` for any other value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Numbers {
    /// The two numbers of a two-element array.
    pub pair: Option<[f64; 2]>,
    /// The first element.
    pub first: Option<f64>,
}

lenient_value!(Numbers, Numbers, |n| n, "an array of numbers", {
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Numbers, E> {
        Ok(Numbers::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Numbers, E> {
        Ok(Numbers::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Numbers, E> {
        Ok(Numbers::default())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Numbers, E> {
        Ok(Numbers::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Numbers, A::Error> {
        let mut numbers = NumbersReader::default();
        while let Some(Number(x)) = seq.next_element::<Number>()? {
            numbers.push(x);
        }
        Ok(numbers.finish())
    }
});

/// Reads an array into [`Numbers`] one element at a time, for decoders that walk the array
/// themselves: each element is pushed as the number it reads as (`None` when it is none).
#[derive(Debug, Clone, Copy, Default)]
pub struct NumbersReader {
    items: [Option<f64>; 2],
    count: usize,
}

impl NumbersReader {
    /// The next element.
    pub fn push(&mut self, x: Option<f64>) {
        if let Some(slot) = self.items.get_mut(self.count) {
            *slot = x;
        }
        self.count += 1;
    }

    /// What the elements pushed make.
    pub fn finish(self) -> Numbers {
        let pair = match (self.count, self.items) {
            (2, [Some(a), Some(b)]) => Some([a, b]),
            _ => None,
        };
        Numbers {
            pair,
            first: self.items[0],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{as_f64, quote_non_finite};
    use serde_json::Value;

    /// The typed events' rule for pairs, applied to a JSON tree.
    fn tree_pair(value: &Value) -> Option<[f64; 2]> {
        match value {
            Value::Array(items) if items.len() == 2 => {
                Some([as_f64(&items[0])?, as_f64(&items[1])?])
            }
            _ => None,
        }
    }

    #[test]
    fn numbers_and_pairs_follow_the_typed_events() {
        for text in [
            "1",
            "-2",
            "2.5",
            "18446744073709551615",
            "NaN",
            "-Infinity",
            "\"NaN\"",
            "\"x\"",
            "null",
            "true",
            "[1, 2]",
            "[1]",
            "[1, 2, 3]",
            "[1, \"NaN\"]",
            "[1, \"x\"]",
            "[[1], 2]",
            "{\"a\": [1, 2]}",
            "[]",
        ] {
            let quoted = quote_non_finite(text);
            let tree: Value = serde_json::from_str(&quoted).unwrap();
            let Number(n) = serde_json::from_str(&quoted).unwrap();
            let Numbers { pair: p, first } = serde_json::from_str(&quoted).unwrap();
            let same = |a: Option<f64>, b: Option<f64>| a.map(f64::to_bits) == b.map(f64::to_bits);
            assert!(same(n, as_f64(&tree)), "{text}: {n:?}");
            let want = tree_pair(&tree);
            assert!(
                same(first, tree.get(0).and_then(as_f64)),
                "{text}: first {first:?}"
            );
            assert!(
                same(p.map(|x| x[0]), want.map(|x| x[0]))
                    && same(p.map(|x| x[1]), want.map(|x| x[1])),
                "{text}: {p:?} vs {want:?}"
            );
        }
    }
}
