//! JSON paths in jq's notation (`."torch.add".config[0].input[1].args[0].shape`), so every error
//! about a config points at the value it is about.

use std::fmt;

/// Where a value sits in the config file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonPath(String);

impl JsonPath {
    /// The document itself.
    pub fn root() -> JsonPath {
        JsonPath::default()
    }

    /// The member `key` of the object at this path.
    pub fn key(&self, key: &str) -> JsonPath {
        let plain = key
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if plain {
            JsonPath(format!("{}.{key}", self.0))
        } else {
            let quoted = serde_json::to_string(key).unwrap_or_else(|_| format!("\"{key}\""));
            JsonPath(format!("{}.{quoted}", self.0))
        }
    }

    /// The element `index` of the array at this path.
    pub fn index(&self, index: usize) -> JsonPath {
        JsonPath(format!("{}[{index}]", self.0))
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str(".")
        } else {
            f.write_str(&self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_are_not_identifiers_are_quoted() {
        let path = JsonPath::root()
            .key("torch.add")
            .key("config")
            .index(0)
            .key("input")
            .index(2)
            .key("__range__");
        assert_eq!(
            path.to_string(),
            r#"."torch.add".config[0].input[2].__range__"#
        );
        assert_eq!(JsonPath::root().to_string(), ".");
    }
}
