//! Pinning: compiling each benchmark's `requirements.in` into `requirements.<variant>.txt` with
//! `uv pip compile`, under the arch's constraints. A group with several benchmark folders is
//! first compiled as a whole into `.pin/constraints-<variant>-<group>.txt`, and each folder's
//! file is then compiled under that lock, so the benchmarks of one environment agree.

use camino::{Utf8Path, Utf8PathBuf};
use milabench_exec::HelperCommand;

use crate::error::EnvError;
use crate::group::{InstallGroup, UNPINNED};
use crate::install::{Environments, Event, Stage, check};
use crate::process::run_logged;
use crate::tool::Tool;

/// The files a pin wrote for one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// The install group.
    pub group: String,
    /// The group lock, when the group has several benchmark folders.
    pub group_lock: Option<Utf8PathBuf>,
    /// Each benchmark folder's `requirements.<variant>.txt`.
    pub files: Vec<Utf8PathBuf>,
    /// The log.
    pub log: Utf8PathBuf,
}

impl Environments {
    /// Compiles `group`'s pinned requirement files for `variant`.
    pub fn pin(
        &self,
        group: &InstallGroup,
        variant: &str,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<Pinned, EnvError> {
        if variant == UNPINNED {
            return Err(EnvError::PinUnpinned);
        }
        let Tool::Uv { bin, .. } = &self.tool else {
            return Err(EnvError::PinNeedsUv);
        };
        self.python.check(&group.name, group.min_python)?;
        let root = &self.project.root;
        let log_path = self
            .layout
            .logs
            .join("pin")
            .join(format!("{}.log", group.name));
        let log_dir = log_path.parent().expect("a log file has a folder");
        fs_err::create_dir_all(log_dir).map_err(EnvError::io("could not create", log_dir))?;
        let mut log =
            fs_err::File::create(&log_path).map_err(EnvError::io("could not create", &log_path))?;
        let inputs: Vec<Utf8PathBuf> = group
            .definitions
            .iter()
            .map(|d| d.join("requirements.in"))
            .collect();
        for input in &inputs {
            if !input.is_file() {
                return Err(EnvError::Requirements {
                    bench: group.benches.join(", "),
                    group: group.name.clone(),
                    problem: format!("{input} does not exist"),
                    hint: "pin compiles requirements.in; write one per benchmark folder".into(),
                });
            }
        }
        let mut constraints: Vec<Utf8PathBuf> =
            self.project.constraints(variant).into_iter().collect();
        // In the checkout's `.pin/`, as the group's lock below: uv names the file in the pinned
        // files' `# via --override` lines, which must not hold a base folder's path.
        let overrides = crate::install::write_overrides(
            group,
            &root
                .join(".pin")
                .join(format!("overrides-{variant}-{}.txt", group.name)),
        )?;
        let command = format!("milabench pin --variant {variant} --select {}", group.name);
        let python_version = format!(
            "{}.{}",
            self.python.version.major, self.python.version.minor
        );
        let mut compile = |inputs: &[Utf8PathBuf],
                           constraints: &[Utf8PathBuf],
                           output: &Utf8Path|
         -> Result<(), EnvError> {
            on_event(Event::Stage {
                group: &group.name,
                stage: Stage::Compile,
            });
            let partial = output.with_extension("partial");
            let mut args: Vec<String> = [
                "pip",
                "compile",
                "--no-config",
                "--quiet",
                "--emit-index-url",
                "--emit-find-links",
                "--index-strategy",
                "unsafe-best-match",
                "--python-version",
                &python_version,
                "--custom-compile-command",
                &command,
                "-o",
            ]
            .map(String::from)
            .to_vec();
            args.push(relative(root, &partial));
            args.extend(inputs.iter().map(|i| relative(root, i)));
            for c in constraints {
                args.extend(["-c".to_string(), relative(root, c)]);
            }
            if let Some(file) = &overrides {
                args.extend(["--overrides".to_string(), relative(root, file)]);
            }
            args.extend(group.installer_args.iter().cloned());
            let mut step = HelperCommand::unlimited(bin, args);
            self.uv_env(&mut step);
            step.cwd = Some(root.clone().into());
            let _ = fs_err::remove_file(&partial);
            let finished = run_logged(&step, &log_path, &mut log, &mut |line| {
                on_event(Event::Line {
                    group: &group.name,
                    line,
                })
            });
            let result = finished.and_then(|f| check(&group.name, Stage::Compile, f, &log_path));
            if let Err(e) = result {
                let _ = fs_err::remove_file(&partial);
                return Err(e);
            }
            fs_err::rename(&partial, output).map_err(EnvError::io("could not write", output))
        };
        let group_lock = if inputs.len() > 1 {
            let dir = root.join(".pin");
            fs_err::create_dir_all(&dir).map_err(EnvError::io("could not create", &dir))?;
            let lock = dir.join(format!("constraints-{variant}-{}.txt", group.name));
            compile(&inputs, &constraints, &lock)?;
            constraints = vec![lock.clone()];
            Some(lock)
        } else {
            None
        };
        let mut files = Vec::new();
        for (input, definition) in inputs.iter().zip(&group.definitions) {
            let output = definition.join(format!("requirements.{variant}.txt"));
            compile(std::slice::from_ref(input), &constraints, &output)?;
            files.push(output);
        }
        Ok(Pinned {
            group: group.name.clone(),
            group_lock,
            files,
            log: log_path,
        })
    }
}

/// `path` relative to `root` when it is inside it (stable annotations in the pinned files).
fn relative(root: &Utf8Path, path: &Utf8Path) -> String {
    path.strip_prefix(root)
        .map(|p| p.to_string())
        .unwrap_or_else(|_| path.to_string())
}
