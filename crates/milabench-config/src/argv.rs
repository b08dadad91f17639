//! Rendering a benchmark's `argv` into command-line arguments, as milabench does: a list is
//! used as written; a mapping gives positionals first (keys whose value is `true` and that do not
//! start with `-`), then options in written order: `true` is a bare flag, `null` drops the
//! option, a list is joined by commas, `--` appends its list verbatim, and `false` is an error
//! (use `null` to cancel an option).

use crate::error::{At, ConfigError};
use crate::value::{Node, Value};

/// Renders `argv` of benchmark `bench` into arguments.
pub fn render(bench: &str, argv: &Node) -> Result<Vec<String>, ConfigError> {
    match &argv.value {
        Value::Null => Ok(Vec::new()),
        Value::Seq(items) => Ok(items.iter().map(Node::python_str).collect()),
        Value::Map(map) => {
            let mut positionals = Vec::new();
            let mut options = Vec::new();
            for (key, value) in map {
                match &value.value {
                    Value::Null | Value::Delete => {}
                    Value::Bool(true) if key.starts_with('-') => options.push(key.clone()),
                    Value::Bool(true) => positionals.push(key.clone()),
                    Value::Bool(false) => {
                        return Err(ConfigError::Argv {
                            at: At(value.location.clone()),
                            bench: bench.to_string(),
                            message: format!("`{key}: false` does not cancel an option"),
                            fix: format!("write `{key}: null` to drop it"),
                        });
                    }
                    _ if key == "--" => match &value.value {
                        Value::Seq(items) => options.extend(items.iter().map(Node::python_str)),
                        _ => {
                            return Err(ConfigError::Argv {
                                at: At(value.location.clone()),
                                bench: bench.to_string(),
                                message: format!("`--` holds {}, not a list", value.kind()),
                                fix: "write `--: [arg, ...]`".into(),
                            });
                        }
                    },
                    Value::Seq(items) => {
                        options.push(key.clone());
                        let joined: Vec<String> = items.iter().map(Node::python_str).collect();
                        options.push(joined.join(","));
                    }
                    _ => {
                        options.push(key.clone());
                        options.push(value.python_str());
                    }
                }
            }
            positionals.extend(options);
            Ok(positionals)
        }
        _ => Err(ConfigError::Argv {
            at: At(argv.location.clone()),
            bench: bench.to_string(),
            message: format!("argv is {}; it must be a mapping or a list", argv.kind()),
            fix: "write `argv: {--flag: value}` or `argv: [--flag, value]`".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_str;

    fn rendered(text: &str) -> Result<Vec<String>, ConfigError> {
        render("b", &parse_str(text, "t.yaml").expect("yaml"))
    }

    #[test]
    fn mapping_renders_positionals_first() {
        let out = rendered(
            "{bench/x.py: true, --config: c.yaml, epochs=1: true, --lr: 0.010, --flag: true, \
             --gone: null, --sizes: [1, 2], --f: 1e-4, --yes: yes, --: [-x, 1]}",
        )
        .expect("renders");
        assert_eq!(
            out,
            [
                "bench/x.py",
                "epochs=1",
                "--config",
                "c.yaml",
                "--lr",
                "0.01",
                "--flag",
                "--sizes",
                "1,2",
                "--f",
                "1e-4",
                "--yes",
                "-x",
                "1"
            ]
        );
    }

    #[test]
    fn list_is_verbatim() {
        assert_eq!(rendered("[a, 1, 2.5]").expect("ok"), ["a", "1", "2.5"]);
    }

    #[test]
    fn false_and_scalars_are_errors() {
        let err = rendered("{--a: false}").expect_err("fails");
        assert!(err.to_string().contains("`--a: null`"), "{err}");
        assert!(err.to_string().starts_with("t.yaml:1:7"), "{err}");
        let err = rendered("'--a 1'").expect_err("fails");
        assert!(
            err.to_string().contains("must be a mapping or a list"),
            "{err}"
        );
    }
}
