//! What goes into an install group's environment: its benchmarks' requirement files (pinned per
//! variant when present), the arch's constraints, installer arguments from the suite, and the
//! least Python version the group accepts.

use camino::{Utf8Path, Utf8PathBuf};
use milabench_config::{Node, ResolvedBench, Value};

use crate::error::EnvError;
use crate::project::ProjectTree;
use crate::python::{MIN_PYTHON, PythonVersion};

/// The variant that installs `requirements.in` as written.
pub const UNPINNED: &str = "unpinned";

/// One requirement file of a benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementFile {
    /// The benchmark it belongs to.
    pub bench: String,
    /// The file.
    pub path: Utf8PathBuf,
    /// Whether it is a pinned `requirements.<variant>.txt` (else `requirements.in`).
    pub pinned: bool,
}

/// A Python environment shared by benchmarks: what to install into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallGroup {
    /// The group's name (`install_group` of its benchmarks).
    pub name: String,
    /// Its benchmarks, in suite order.
    pub benches: Vec<String>,
    /// Its benchmarks' definition folders, in suite order.
    pub definitions: Vec<Utf8PathBuf>,
    /// The variant asked for (`cpu`, `cuda`, ..., or `unpinned`).
    pub variant: String,
    /// The requirement files, in suite order.
    pub requirements: Vec<RequirementFile>,
    /// `constraints/<variant>.txt` (or `<arch>.txt` for `unpinned`), when it exists.
    pub constraints: Option<Utf8PathBuf>,
    /// Constraint lines from the benchmarks' `pip.constraints` settings.
    pub extra_constraints: Vec<String>,
    /// Override lines from the benchmarks' `pip.overrides` settings: requirements that replace
    /// whatever any package of the group asks for that package (uv's `--overrides`), where a
    /// constraint could only narrow it (a wheel that pins a build the index does not carry).
    pub overrides: Vec<String>,
    /// Installer arguments from the benchmarks' `pip.args` settings.
    pub installer_args: Vec<String>,
    /// The least Python version: the newest of the benchmarks' `requires_python` and
    /// [`MIN_PYTHON`].
    pub min_python: PythonVersion,
    /// The venv folder the suite gives the group (`dirs.venv` of its first benchmark), if any.
    pub venv: Option<Utf8PathBuf>,
    /// The existing interpreter the suite names for the group (its benchmarks' `python` key),
    /// if any: the group's venv is then an overlay over it (see [`crate::Environments`]).
    pub python: Option<Utf8PathBuf>,
}

impl InstallGroup {
    /// The group as an overlay over an existing interpreter installs it: each benchmark's
    /// `requirements.in` (names with the ranges their authors wrote) in place of the pinned
    /// file, and no arch constraints file, so that what the interpreter has (the site's torch,
    /// say) satisfies a requirement in whatever version it is, and only what it lacks is added.
    /// The suite's own `pip.constraints` stay.
    pub fn for_overlay(&self) -> InstallGroup {
        let mut group = self.clone();
        for req in &mut group.requirements {
            let unpinned = req.path.with_file_name("requirements.in");
            if req.pinned && unpinned.is_file() {
                req.path = unpinned;
                req.pinned = false;
            }
        }
        group.constraints = None;
        group
    }

    /// Whether any requirement file fell back to `requirements.in` although a pinned variant
    /// was asked for.
    pub fn unpinned_fallbacks(&self) -> Vec<&RequirementFile> {
        if self.variant == UNPINNED {
            return Vec::new();
        }
        self.requirements.iter().filter(|r| !r.pinned).collect()
    }
}

/// Groups `benches` by install group, in suite order of each group's first benchmark.
///
/// The variant is `variant` when given, else each benchmark's `install_variant` setting, else
/// `arch`. A benchmark's pinned `requirements.<variant>.txt` is used when present, else its
/// `requirements.in`.
pub fn install_groups<'a>(
    benches: impl IntoIterator<Item = &'a ResolvedBench>,
    project: &ProjectTree,
    arch: &str,
    variant: Option<&str>,
) -> Result<Vec<InstallGroup>, EnvError> {
    let mut groups: Vec<InstallGroup> = Vec::new();
    for bench in benches {
        let name = bench.install_group.clone();
        let bench_variant = variant
            .map(str::to_string)
            .or_else(|| bench.str_setting("install_variant"))
            .unwrap_or_else(|| arch.to_string());
        let index = match groups.iter().position(|g| g.name == name) {
            Some(index) => {
                if groups[index].variant != bench_variant {
                    return Err(EnvError::Requirements {
                        bench: bench.name.clone(),
                        group: name,
                        problem: format!(
                            "install_variant `{bench_variant}` differs from `{}` of the other benchmarks of the group",
                            groups[index].variant
                        ),
                        hint: "give every benchmark of an install group the same install_variant, or pass --variant".into(),
                    });
                }
                index
            }
            None => {
                let constraints_name = if bench_variant == UNPINNED {
                    arch
                } else {
                    &bench_variant
                };
                groups.push(InstallGroup {
                    name: name.clone(),
                    benches: Vec::new(),
                    definitions: Vec::new(),
                    variant: bench_variant.clone(),
                    requirements: Vec::new(),
                    constraints: project.constraints(constraints_name),
                    extra_constraints: Vec::new(),
                    overrides: Vec::new(),
                    installer_args: Vec::new(),
                    min_python: MIN_PYTHON,
                    venv: Some(bench.folders.venv.clone()).filter(|venv| !venv.as_str().is_empty()),
                    python: bench.str_setting("python").map(Utf8PathBuf::from),
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[index];
        let python = bench.str_setting("python").map(Utf8PathBuf::from);
        if python != group.python {
            let shown = |p: &Option<Utf8PathBuf>| {
                p.as_ref()
                    .map_or_else(|| "none".to_string(), |p| format!("`{p}`"))
            };
            return Err(EnvError::Requirements {
                bench: bench.name.clone(),
                group: name,
                problem: format!(
                    "`python: {}` differs from {} of the other benchmarks of the group",
                    shown(&python),
                    shown(&group.python)
                ),
                hint: "give every benchmark of an install group the same `python` (or none)".into(),
            });
        }
        let definition = bench
            .definition
            .clone()
            .ok_or_else(|| EnvError::Requirements {
                bench: bench.name.clone(),
                group: name.clone(),
                problem: "has no `definition` folder".into(),
                hint: "set `definition:` to the benchmark's folder".into(),
            })?;
        group.benches.push(bench.name.clone());
        if !group.definitions.contains(&definition) {
            group.definitions.push(definition.clone());
            group
                .requirements
                .push(requirement_file(bench, &name, &definition, &bench_variant)?);
        }
        if let Some(pip) = bench.config.get("pip") {
            for arg in strings(pip.get("args")) {
                if !group.installer_args.contains(&arg) {
                    group.installer_args.push(arg);
                }
            }
            for line in strings(pip.get("constraints")) {
                if !group.extra_constraints.contains(&line) {
                    group.extra_constraints.push(line);
                }
            }
            for line in strings(pip.get("overrides")) {
                if !group.overrides.contains(&line) {
                    group.overrides.push(line);
                }
            }
        }
        if let Some(text) = bench.str_setting("requires_python") {
            let needed = PythonVersion::parse(&text).ok_or_else(|| EnvError::Requirements {
                bench: bench.name.clone(),
                group: name.clone(),
                problem: format!("`requires_python: {text}` is not a version"),
                hint: "write a lower bound such as `requires_python: \">=3.11\"`".into(),
            })?;
            group.min_python = group.min_python.max(needed);
        }
    }
    Ok(groups)
}

/// The requirement file of one benchmark for `variant`.
fn requirement_file(
    bench: &ResolvedBench,
    group: &str,
    definition: &Utf8Path,
    variant: &str,
) -> Result<RequirementFile, EnvError> {
    if variant != UNPINNED {
        let pinned = definition.join(format!("requirements.{variant}.txt"));
        if pinned.is_file() {
            return Ok(RequirementFile {
                bench: bench.name.clone(),
                path: pinned,
                pinned: true,
            });
        }
    }
    let unpinned = definition.join("requirements.in");
    if unpinned.is_file() {
        return Ok(RequirementFile {
            bench: bench.name.clone(),
            path: unpinned,
            pinned: false,
        });
    }
    Err(EnvError::Requirements {
        bench: bench.name.clone(),
        group: group.to_string(),
        problem: format!("neither {definition}/requirements.{variant}.txt nor {unpinned} exists"),
        hint: "write the benchmark's requirements.in (one requirement a line)".into(),
    })
}

/// A string or a list of strings from the suite.
fn strings(node: Option<&Node>) -> Vec<String> {
    match node.map(|n| &n.value) {
        Some(Value::Seq(items)) => items.iter().map(Node::python_str).collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(_) => vec![node.map(Node::python_str).unwrap_or_default()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(name: &str, definition: &Utf8Path, extra: serde_json::Value) -> ResolvedBench {
        let mut config = serde_json::json!({
            "install_group": "g", "definition": definition.as_str(),
        });
        config
            .as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        ResolvedBench::new(name.into(), Node::from_json(&config)).expect("a benchmark")
    }

    #[test]
    fn pinned_files_win_and_settings_merge() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Utf8Path::from_path(dir.path()).expect("utf8");
        let (a, b) = (root.join("a"), root.join("b"));
        for d in [&a, &b] {
            fs_err::create_dir_all(d).expect("mkdir");
            fs_err::write(d.join("requirements.in"), "x\n").expect("write");
        }
        fs_err::write(a.join("requirements.cpu.txt"), "x==1\n").expect("write");
        let benches = [
            bench(
                "one",
                &a,
                serde_json::json!({"pip": {"args": ["--no-index"]}}),
            ),
            bench("two", &b, serde_json::json!({"requires_python": ">=3.12"})),
            bench(
                "three",
                &a,
                serde_json::json!({"pip": {"constraints": "x<2", "overrides": ["y==1"]}}),
            ),
        ];
        let project = ProjectTree { root: root.into() };
        let groups = install_groups(&benches, &project, "cpu", None).expect("groups");
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        assert_eq!(g.benches, ["one", "two", "three"]);
        assert_eq!(g.requirements.len(), 2, "one file per folder");
        assert!(g.requirements[0].pinned && !g.requirements[1].pinned);
        assert_eq!(g.unpinned_fallbacks().len(), 1);
        assert_eq!(g.installer_args, ["--no-index"]);
        assert_eq!(g.extra_constraints, ["x<2"]);
        assert_eq!(g.overrides, ["y==1"]);
        assert_eq!(g.min_python.to_string(), "3.12.0");

        let unpinned = install_groups(&benches, &project, "cpu", Some(UNPINNED)).expect("ok");
        assert!(unpinned[0].requirements.iter().all(|r| !r.pinned));
        assert!(unpinned[0].unpinned_fallbacks().is_empty());
    }

    #[test]
    fn missing_requirements_and_mixed_variants_are_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Utf8Path::from_path(dir.path()).expect("utf8");
        let project = ProjectTree { root: root.into() };
        let lone = [bench("lone", root, serde_json::json!({}))];
        let err = install_groups(&lone, &project, "cpu", None).expect_err("no file");
        assert!(err.to_string().contains("requirements.in"), "{err}");

        fs_err::write(root.join("requirements.in"), "x\n").expect("write");
        let mixed = [
            bench("a", root, serde_json::json!({"install_variant": "cpu"})),
            bench("b", root, serde_json::json!({"install_variant": "cuda"})),
        ];
        let err = install_groups(&mixed, &project, "cpu", None).expect_err("mixed");
        assert!(err.to_string().contains("install_variant"), "{err}");

        let site = serde_json::json!({"python": "/opt/site/bin/python3"});
        let same = [bench("a", root, site.clone()), bench("b", root, site)];
        let groups = install_groups(&same, &project, "cpu", None).expect("same python");
        assert_eq!(
            groups[0].python.as_deref(),
            Some(Utf8Path::new("/opt/site/bin/python3"))
        );
        let differ = [
            bench(
                "a",
                root,
                serde_json::json!({"python": "/opt/site/bin/python3"}),
            ),
            bench("b", root, serde_json::json!({})),
        ];
        let err = install_groups(&differ, &project, "cpu", None).expect_err("two pythons");
        assert!(err.to_string().contains("`python: none` differs"), "{err}");
    }
}
