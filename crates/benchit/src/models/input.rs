//! What `benchit benchmark` takes: Python scripts (with optional `::HASH,HASH` targets) and
//! ONNX files; the labels of a script's first line; build names.

use camino::{Utf8Path, Utf8PathBuf};
use indexmap::IndexMap;
use serde::Serialize;

use super::framework::imports_keras;

/// The kind of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// A Python script whose models are discovered.
    Script,
    /// An ONNX file, the model itself.
    Onnx,
    /// A live PyTorch model handed over by the Python program that started benchit
    /// (benchmate's `benchmark_model`); its path is only a name.
    Model,
}

/// One input of a benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Input {
    /// The argument as given.
    pub arg: String,
    /// The file, absolute.
    pub path: Utf8PathBuf,
    /// Script or ONNX file.
    pub kind: InputKind,
    /// Invocation hashes to build (`script.py::h1,h2`); empty: all of them.
    pub targets: Vec<String>,
    /// What benchit reads in a script before running it (empty for other inputs).
    #[serde(skip)]
    pub script: ScriptFacts,
}

/// What benchit reads in a script before running it, from one read of the file when the input
/// is parsed: whether to install and run it and how to name its builds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptFacts {
    /// Its `# labels:` line.
    pub labels: Labels,
    /// A warning per malformed label item.
    pub label_warnings: Vec<String>,
    /// Whether it imports TensorFlow or Keras (see [`imports_keras`]).
    pub imports_keras: bool,
}

impl ScriptFacts {
    /// The facts of the script whose text is `source`.
    pub fn of(source: &str) -> ScriptFacts {
        let (labels, label_warnings) = parse_labels(source);
        ScriptFacts {
            labels,
            label_warnings,
            imports_keras: imports_keras(source),
        }
    }
}

/// Why an input cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Neither `.py` nor `.onnx`.
    #[error("`{arg}` is neither a Python script (.py) nor an ONNX file (.onnx); give one of those")]
    Extension {
        /// The argument.
        arg: String,
    },
    /// The file does not exist.
    #[error("`{path}` does not exist; check the path (relative paths start at the current folder)")]
    Missing {
        /// The file.
        path: Utf8PathBuf,
    },
    /// A `::` target that is not an invocation hash.
    #[error(
        "`{arg}`: `{target}` is not an invocation hash (8 hexadecimal digits, as `benchit --analyze-only` shows them)"
    )]
    Target {
        /// The argument.
        arg: String,
        /// The bad target.
        target: String,
    },
    /// `--all` in a folder that cannot be read.
    #[error("cannot list the scripts of `{dir}`; check that --search-dir names a folder")]
    SearchDir {
        /// The folder.
        dir: Utf8PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// `--all` in a folder without scripts.
    #[error("`{dir}` holds no Python script (*.py); give --search-dir the folder of your scripts")]
    NoScripts {
        /// The folder.
        dir: Utf8PathBuf,
    },
    /// `::` on an ONNX file.
    #[error(
        "`{arg}`: `::` targets select invocations of a script; an ONNX file has one model, drop `::...`"
    )]
    OnnxTarget {
        /// The argument.
        arg: String,
    },
}

impl Input {
    /// Parses `arg` (`x.py`, `x.py::h1,h2`, `x.onnx`) relative to `cwd`; the file must exist.
    pub fn parse(arg: &str, cwd: &Utf8Path) -> Result<Input, InputError> {
        let (file, targets) = match arg.split_once("::") {
            Some((file, targets)) => (file, Some(targets)),
            None => (arg, None),
        };
        let lower = file.to_ascii_lowercase();
        let kind = if lower.ends_with(".py") {
            InputKind::Script
        } else if lower.ends_with(".onnx") {
            InputKind::Onnx
        } else {
            return Err(InputError::Extension { arg: arg.into() });
        };
        let targets: Vec<String> = match targets {
            None => Vec::new(),
            Some(_) if kind == InputKind::Onnx => {
                return Err(InputError::OnnxTarget { arg: arg.into() });
            }
            Some(list) => list
                .split(',')
                .map(|t| {
                    let t = t.trim().to_ascii_lowercase();
                    if t.len() == 8 && t.chars().all(|c| c.is_ascii_hexdigit()) {
                        Ok(t)
                    } else {
                        Err(InputError::Target {
                            arg: arg.into(),
                            target: t,
                        })
                    }
                })
                .collect::<Result<_, _>>()?,
        };
        let path = cwd.join(file);
        if !path.is_file() {
            return Err(InputError::Missing { path });
        }
        // A script that cannot be read is left to the worker, which reports why.
        let script = match kind {
            InputKind::Script => fs_err::read_to_string(&path)
                .map(|source| ScriptFacts::of(&source))
                .unwrap_or_default(),
            InputKind::Onnx | InputKind::Model => ScriptFacts::default(),
        };
        Ok(Input {
            arg: arg.into(),
            path,
            kind,
            targets,
            script,
        })
    }

    /// The file name without its extension: the first part of build names.
    pub fn stem(&self) -> &str {
        self.path.file_stem().unwrap_or("input")
    }
}

/// Every Python script directly in `dir` (MLAgility's corpus mode), sorted by name: files ending
/// in `.py`, but not `__init__.py` nor hidden files. Sub-folders are not searched.
pub fn scripts_in(dir: &Utf8Path) -> Result<Vec<Utf8PathBuf>, InputError> {
    let listing_error = |source| InputError::SearchDir {
        dir: dir.to_owned(),
        source,
    };
    let mut scripts = Vec::new();
    for entry in dir.read_dir_utf8().map_err(listing_error)? {
        let entry = entry.map_err(listing_error)?;
        let name = entry.file_name();
        let is_script = name.to_ascii_lowercase().ends_with(".py")
            && name != "__init__.py"
            && !name.starts_with('.');
        if is_script && entry.path().is_file() {
            scripts.push(entry.path().to_owned());
        }
    }
    if scripts.is_empty() {
        return Err(InputError::NoScripts {
            dir: dir.to_owned(),
        });
    }
    scripts.sort();
    Ok(scripts)
}

/// Labels of a script: `# labels: key::v1,v2 key2::v3` on its first line.
pub type Labels = IndexMap<String, Vec<String>>;

/// The labels of the script `text` (its first line), and a warning per malformed item.
pub fn parse_labels(text: &str) -> (Labels, Vec<String>) {
    let mut labels = Labels::new();
    let mut warnings = Vec::new();
    let first = text.lines().next().unwrap_or("");
    let Some(rest) = first
        .trim_start()
        .strip_prefix('#')
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix("labels:"))
    else {
        return (labels, warnings);
    };
    for item in rest.split_whitespace() {
        match item.split_once("::") {
            Some((key, values)) if !key.is_empty() => {
                let entry = labels.entry(key.to_string()).or_default();
                entry.extend(
                    values
                        .split(',')
                        .filter(|v| !v.is_empty())
                        .map(str::to_string),
                );
            }
            _ => warnings.push(format!(
                "label `{item}` is not `key::value[,value]`; it is ignored"
            )),
        }
    }
    (labels, warnings)
}

/// Parses `--labels` items (`key::v1,v2`) into the labels a script must carry.
pub fn parse_label_filter(items: &[String]) -> Result<Labels, String> {
    let mut labels = Labels::new();
    for item in items {
        match item.split_once("::") {
            Some((key, values)) if !key.is_empty() && !values.is_empty() => {
                labels.entry(key.to_string()).or_default().extend(
                    values
                        .split(',')
                        .filter(|v| !v.is_empty())
                        .map(str::to_string),
                );
            }
            _ => {
                return Err(format!(
                    "--labels `{item}` is not `key::value[,value]` (for example `author::me`)"
                ));
            }
        }
    }
    Ok(labels)
}

/// Whether a script with `labels` is selected by `required`: for every required key, the script
/// has at least one of its values. (MLAgility checked the reverse, that each of the script's
/// values was required, so a script with more values than asked was dropped.)
pub fn labels_match(labels: &Labels, required: &Labels) -> bool {
    required.iter().all(|(key, wanted)| {
        labels
            .get(key)
            .is_some_and(|values| values.iter().any(|v| wanted.contains(v)))
    })
}

/// `<stem>[_<author>]_<invocation hash>`: the build name (and folder) of one invocation.
pub fn build_name(stem: &str, labels: &Labels, invocation_hash: &str) -> String {
    match labels.get("author").and_then(|a| a.first()) {
        Some(author) => format!("{stem}_{author}_{invocation_hash}"),
        None => format!("{stem}_{invocation_hash}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_and_targets() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = Utf8Path::from_path(dir.path()).unwrap();
        fs_err::write(cwd.join("a.py"), "").unwrap();
        fs_err::write(cwd.join("m.ONNX"), "").unwrap();
        let input = Input::parse("a.py::24ADC42F,2a1e15ca", cwd).unwrap();
        assert_eq!(input.kind, InputKind::Script);
        assert_eq!(input.targets, ["24adc42f", "2a1e15ca"]);
        assert_eq!(input.stem(), "a");
        assert_eq!(Input::parse("m.ONNX", cwd).unwrap().kind, InputKind::Onnx);
        assert!(matches!(
            Input::parse("a.txt", cwd),
            Err(InputError::Extension { .. })
        ));
        assert!(matches!(
            Input::parse("b.py", cwd),
            Err(InputError::Missing { .. })
        ));
        assert!(matches!(
            Input::parse("a.py::xyz", cwd),
            Err(InputError::Target { .. })
        ));
        assert!(matches!(
            Input::parse("m.ONNX::24adc42f", cwd),
            Err(InputError::OnnxTarget { .. })
        ));
    }

    #[test]
    fn a_search_folder_gives_its_scripts_in_order() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = Utf8Path::from_path(dir.path()).expect("utf-8");
        for name in [
            "b.py",
            "a.py",
            "__init__.py",
            ".hidden.py",
            "notes.txt",
            "C.PY",
        ] {
            fs_err::write(root.join(name), "").expect("write");
        }
        fs_err::create_dir(root.join("sub.py")).expect("mkdir");
        fs_err::write(root.join("sub.py/inner.py"), "").expect("write");
        let names: Vec<String> = scripts_in(root)
            .expect("listed")
            .iter()
            .map(|p| p.file_name().expect("name").to_string())
            .collect();
        assert_eq!(names, ["C.PY", "a.py", "b.py"]);
        let empty = tempfile::tempdir().expect("temp dir");
        let empty = Utf8Path::from_path(empty.path()).expect("utf-8");
        assert!(matches!(
            scripts_in(empty),
            Err(InputError::NoScripts { .. })
        ));
        assert!(matches!(
            scripts_in(&root.join("missing")),
            Err(InputError::SearchDir { .. })
        ));
    }

    #[test]
    fn labels_come_from_the_first_line() {
        let (labels, warnings) = parse_labels(
            "# labels: name::hello author::mlagility,x test_group::a oops\nimport torch\n",
        );
        assert_eq!(labels["name"], ["hello"]);
        assert_eq!(labels["author"], ["mlagility", "x"]);
        assert_eq!(labels["test_group"], ["a"]);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("`oops`"));
        assert!(parse_labels("import torch\n# labels: a::b\n").0.is_empty());
        assert!(parse_labels("").0.is_empty());
    }

    #[test]
    fn label_filters_select_scripts_with_one_of_the_values() {
        let (labels, _) = parse_labels("# labels: author::me test_group::a,b\n");
        let filter = |items: &[&str]| {
            parse_label_filter(&items.iter().map(|i| i.to_string()).collect::<Vec<_>>()).unwrap()
        };
        assert!(labels_match(&labels, &Labels::new()));
        assert!(labels_match(&labels, &filter(&["test_group::a"])));
        assert!(labels_match(
            &labels,
            &filter(&["test_group::c,b", "author::me"])
        ));
        assert!(!labels_match(&labels, &filter(&["test_group::c"])));
        assert!(!labels_match(&labels, &filter(&["task::x"])));
        assert!(parse_label_filter(&["nokey".to_string()]).is_err());
        assert!(parse_label_filter(&["k::".to_string()]).is_err());
    }

    #[test]
    fn build_names_carry_the_author() {
        let (labels, _) = parse_labels("# labels: author::mlagility\n");
        assert_eq!(
            build_name("hello_world", &labels, "24adc42f"),
            "hello_world_mlagility_24adc42f"
        );
        assert_eq!(
            build_name("hello_world", &Labels::new(), "24adc42f"),
            "hello_world_24adc42f"
        );
    }
}
