//! milabench's merge rules, used for suite layers, inheritance, the `*` entry and overrides:
//! mappings merge key by key (older keys first, in their order, then new keys), lists are
//! replaced unless the newer value is `{append: [...]}`, anything else is replaced, `null`
//! replaces a scalar or list (it cancels an argv option), and `!delete` removes a key.

use crate::error::{At, ConfigError};
use crate::value::{Map, Node, Value};

/// Merges `newer` on top of `older`. `path` is the dotted key path, for errors.
pub fn merge(older: Node, newer: Node, path: &str) -> Result<Node, ConfigError> {
    match (older.value, newer.value) {
        (Value::Map(old), Value::Map(new)) => {
            let mut result =
                Map::with_capacity_and_hasher(old.len() + new.len(), Default::default());
            let mut new = new;
            for (key, old_value) in old {
                match new.shift_remove(&key) {
                    Some(Node {
                        value: Value::Delete,
                        ..
                    }) => {}
                    Some(new_value) => {
                        let merged = merge(old_value, new_value, &join(path, &key))?;
                        result.insert(key, merged);
                    }
                    None => {
                        result.insert(key, old_value);
                    }
                }
            }
            for (key, new_value) in new {
                if !matches!(new_value.value, Value::Delete) {
                    result.insert(key, cleanup(new_value));
                }
            }
            Ok(Node::at(
                Value::Map(result),
                newer.location.or(older.location),
            ))
        }
        (Value::Map(_), other) => Err(ConfigError::Merge {
            at: At(newer.location),
            key: display_path(path),
            message: format!("a mapping cannot be replaced by {}", Value::kind(&other)),
            fix: if matches!(other, Value::Null) {
                "to remove the whole entry use `!delete ''`; to cancel one argv option set that option to null".into()
            } else {
                "write a mapping here as well (argv given as a mapping must stay a mapping)".into()
            },
        }),
        (Value::Seq(mut old), Value::Map(mut new)) => match new.shift_remove("append") {
            Some(Node {
                value: Value::Seq(extra),
                ..
            }) if new.is_empty() => {
                old.extend(extra.into_iter().map(cleanup));
                Ok(Node::at(Value::Seq(old), newer.location.or(older.location)))
            }
            Some(Node {
                value: Value::Seq(_),
                ..
            }) => Err(ConfigError::Merge {
                at: At(newer.location),
                key: display_path(path),
                message: format!(
                    "`append` cannot be combined with other keys ({})",
                    new.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
                fix: "write only `{append: [...]}`".into(),
            }),
            Some(other) => Err(ConfigError::Merge {
                at: At(other.location.clone()),
                key: display_path(path),
                message: format!("`append` holds {}, not a list", other.kind()),
                fix: "write `{append: [item, ...]}`".into(),
            }),
            None => Err(ConfigError::Merge {
                at: At(newer.location),
                key: display_path(path),
                message: "a list can only be extended by a mapping with an `append` key".into(),
                fix: "write `{append: [item, ...]}` to extend the list, or a list to replace it"
                    .into(),
            }),
        },
        (_, value) => Ok(cleanup(Node::at(value, newer.location))),
    }
}

/// Removes `!delete` markers from a value inserted fresh.
pub fn cleanup(node: Node) -> Node {
    let value = match node.value {
        Value::Map(m) => Value::Map(
            m.into_iter()
                .filter(|(_, v)| !matches!(v.value, Value::Delete))
                .map(|(k, v)| (k, cleanup(v)))
                .collect(),
        ),
        Value::Seq(items) => Value::Seq(items.into_iter().map(cleanup).collect()),
        other => other,
    };
    Node::at(value, node.location)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn display_path(path: &str) -> String {
    if path.is_empty() {
        "(top level)".into()
    } else {
        path.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_str;
    use proptest::prelude::*;

    fn yaml(text: &str) -> Node {
        parse_str(text, "t.yaml").expect("valid yaml")
    }

    fn merged(a: &str, b: &str) -> serde_json::Value {
        merge(yaml(a), yaml(b), "").expect("merges").to_json()
    }

    #[test]
    fn maps_merge_in_order() {
        assert_eq!(
            serde_json::to_string(&merged("{b: 1, a: {x: 1}}", "{c: 3, a: {y: 2}, b: 5}"))
                .expect("json"),
            r#"{"b":5,"a":{"x":1,"y":2},"c":3}"#
        );
    }

    #[test]
    fn lists_replace_or_append() {
        assert_eq!(
            merged("{t: [1, 2]}", "{t: [3]}"),
            serde_json::json!({"t": [3]})
        );
        assert_eq!(
            merged("{t: [1, 2]}", "{t: {append: [3]}}"),
            serde_json::json!({"t": [1, 2, 3]})
        );
        let err = merge(yaml("{t: [1]}"), yaml("{t: {x: 1}}"), "").expect_err("fails");
        assert!(err.to_string().contains("append"), "{err}");
    }

    #[test]
    fn null_cancels_scalars_but_not_mappings() {
        assert_eq!(
            merged("{argv: {--a: 1, --b: 2}}", "{argv: {--a: null}}"),
            serde_json::json!({"argv": {"--a": null, "--b": 2}})
        );
        let err = merge(yaml("{argv: {--a: 1}}"), yaml("{argv: null}"), "").expect_err("fails");
        let text = err.to_string();
        assert!(text.starts_with("t.yaml:1:"), "{text}");
        assert!(text.contains("`argv`"), "{text}");
    }

    #[test]
    fn delete_removes_existing_keys_and_vanishes_elsewhere() {
        assert_eq!(
            merged("{a: 1, b: 2}", "{a: !delete '', c: {d: !delete ''}}"),
            serde_json::json!({"b": 2, "c": {}})
        );
    }

    fn arb_node() -> impl Strategy<Value = Node> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            "[a-z]{0,3}".prop_map(Value::Str),
        ]
        .prop_map(Node::new);
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| Node::new(Value::Seq(v))),
                prop::collection::vec(("[a-c]", inner), 0..4)
                    .prop_map(|entries| { Node::new(Value::Map(entries.into_iter().collect())) }),
            ]
        })
    }

    fn arb_map() -> impl Strategy<Value = Node> {
        prop::collection::vec(("[a-d]", arb_node()), 0..5)
            .prop_map(|entries| Node::new(Value::Map(entries.into_iter().collect())))
    }

    proptest! {
        #[test]
        fn merging_with_itself_is_identity(a in arb_map()) {
            let m = merge(a.clone(), a.clone(), "").expect("self merge never fails");
            prop_assert_eq!(m.to_json(), a.to_json());
        }

        #[test]
        fn empty_map_is_neutral(a in arb_map()) {
            let left = merge(Node::empty_map(), a.clone(), "").expect("merges");
            let right = merge(a.clone(), Node::empty_map(), "").expect("merges");
            prop_assert_eq!(left.to_json(), a.to_json());
            prop_assert_eq!(right.to_json(), a.to_json());
        }

        #[test]
        fn newer_scalars_win_and_keys_are_kept(a in arb_map(), b in arb_map()) {
            if let Ok(m) = merge(a.clone(), b.clone(), "") {
                let (ma, mb, mm) = (a.as_map().unwrap(), b.as_map().unwrap(), m.as_map().unwrap());
                // Every key of either side is present, older keys first in their order.
                let expected: Vec<&String> = ma.keys().chain(mb.keys().filter(|k| !ma.contains_key(*k))).collect();
                prop_assert_eq!(mm.keys().collect::<Vec<_>>(), expected);
                for (k, v) in mb {
                    if !matches!(v.value, Value::Map(_) | Value::Seq(_)) {
                        prop_assert_eq!(&mm[k].to_json(), &v.to_json());
                    }
                }
            }
        }

        #[test]
        fn merge_is_associative(a in arb_map(), b in arb_map(), c in arb_map()) {
            let left = merge(a.clone(), b.clone(), "").and_then(|ab| merge(ab, c.clone(), ""));
            let right = merge(b, c, "").and_then(|bc| merge(a, bc, ""));
            if let (Ok(l), Ok(r)) = (left, right) {
                prop_assert_eq!(l.to_json(), r.to_json());
            }
        }
    }
}
