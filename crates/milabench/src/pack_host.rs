//! The pack host: the Python helper that evaluates `benchfile.py` files (see
//! `benchmarks/_packhost` and [`milabench_plan::host_request`]).
//!
//! It has no dependency beyond the standard library, so it runs on the orchestrator's own
//! Python (`python3` on `PATH`) with its folder on `PYTHONPATH`: a virtual environment of its
//! own would cost a second of uv and hold nothing. Each question starts it once (a whole suite
//! is one question, see [`PackHost::prefetch`]); a benchfile that does not answer within
//! [`ANSWER_LIMIT`] is stopped with its process group and named.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use camino::Utf8PathBuf;
use indexmap::IndexMap;
use milabench_config::ResolvedBench;
use milabench_exec::{HelperCommand, HelperError};
use milabench_plan::{
    BenchPlan, HostAnswer, HostPlan, HostRequest, PlanContext, PlannedFile, ProcessSpec,
};

use crate::error::Error;

/// How long the host may take to answer about one benchmark.
pub const ANSWER_LIMIT: Duration = Duration::from_secs(120);

/// The file of a benchmark folder that the pack host reads.
pub const BENCHFILE_PY: &str = "benchfile.py";

/// Whether a benchmark folder is defined by a `benchfile.py` (and no `benchfile.yaml`, which
/// folders written for us use and which wins).
pub fn defined_in_python(folder: &Path) -> bool {
    folder.join(BENCHFILE_PY).is_file()
        && !folder
            .join(milabench_config::benchfile::BENCHFILE_NAME)
            .is_file()
}

/// How to start the pack host.
#[derive(Debug, Clone)]
pub struct PackHost {
    /// The Python that runs it.
    pub python: Utf8PathBuf,
    /// Its folder (`benchmarks/_packhost`), put on `PYTHONPATH`.
    pub root: Utf8PathBuf,
}

impl PackHost {
    /// The host of the checkout that holds `folder` (or that this program was built from),
    /// run by the first `python3` on `path_var`.
    pub fn locate(folder: &Path, path_var: &str) -> Result<PackHost, Error> {
        let start = camino::Utf8Path::from_path(folder).unwrap_or(camino::Utf8Path::new("."));
        let project = milabench_env::ProjectTree::locate(start)?;
        let root = project.root.join("benchmarks/_packhost");
        if !root.join("packhost/__main__.py").is_file() {
            return Err(Error::PackHost {
                bench: folder.display().to_string(),
                message: format!("the pack host is missing from {root}"),
                fix: "reinstall milabench from a complete checkout".into(),
            });
        }
        let python = milabench_env::find_on_path("python3", Some(path_var))
            .or_else(|| milabench_env::find_on_path("python", Some(path_var)))
            .ok_or_else(|| Error::PackHost {
                bench: folder.display().to_string(),
                message: "no python3 on PATH to read its benchfile.py".into(),
                fix: "install Python 3.10 or newer, or put it on PATH".into(),
            })?;
        Ok(PackHost { python, root })
    }

    /// The command line that runs the host's `method` (`plan`, `install`, `prepare`).
    pub fn argv(&self, method: &str) -> Vec<String> {
        [self.python.as_str(), "-s", "-m", "packhost", method]
            .map(str::to_string)
            .to_vec()
    }

    /// The variables the host needs on top of the caller's.
    pub fn env(&self) -> IndexMap<String, String> {
        IndexMap::from([
            ("PYTHONPATH".to_string(), self.root.to_string()),
            ("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string()),
        ])
    }

    /// The plans of `bench`, asked of the host unless an earlier question of this process
    /// (see [`PackHost::prefetch`]) already has them.
    pub fn plan(&self, bench: &ResolvedBench, request: &HostRequest) -> Result<HostPlan, Error> {
        let key = memo_key(request);
        if let Some(plan) = memo().lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(plan);
        }
        let answer = self
            .ask(std::slice::from_ref(request))
            .map_err(|(message, fix)| Error::PackHost {
                bench: bench.name.clone(),
                message,
                fix,
            })?
            .pop()
            .unwrap_or_else(|| Err("the pack host gave no answer".into()));
        match answer {
            Ok(plan) => {
                if let Ok(mut memo) = memo().lock() {
                    memo.insert(key, plan.clone());
                }
                Ok(plan)
            }
            Err(error) => Err(Error::PackHost {
                bench: bench.name.clone(),
                message: error,
                fix: "fix its benchfile.py, or describe the folder with a benchfile.yaml \
                      (docs/benchfile.md)"
                    .into(),
            }),
        }
    }

    /// Asks the host about many benchmarks at once (one Python start for a whole suite) and
    /// keeps the plans for [`PackHost::plan`]. Failures are left for `plan` to report, each
    /// with its own benchmark's name.
    pub fn prefetch(&self, requests: &[HostRequest]) {
        let missing: Vec<HostRequest> = {
            let Ok(memo) = memo().lock() else { return };
            requests
                .iter()
                .filter(|r| !memo.contains_key(&memo_key(r)))
                .cloned()
                .collect()
        };
        if missing.is_empty() {
            return;
        }
        let Ok(answers) = self.ask(&missing) else {
            return;
        };
        let Ok(mut memo) = memo().lock() else { return };
        for (request, answer) in missing.iter().zip(answers) {
            if let Ok(plan) = answer {
                memo.insert(memo_key(request), plan);
            }
        }
    }

    /// One start of the host for `requests`: an answer each, in order, or why the host could
    /// not answer at all (with the fix).
    fn ask(
        &self,
        requests: &[HostRequest],
    ) -> Result<Vec<Result<HostPlan, String>>, (String, String)> {
        let input = serde_json::to_vec(requests).map_err(|e| {
            (
                format!("could not write its request: {e}"),
                "report this bug".into(),
            )
        })?;
        let argv = self.argv("plan");
        let mut command = HelperCommand::new(&argv[0], &argv[1..], ANSWER_LIMIT);
        command.env = self.env().into_iter().collect();
        command.stdin = Some(input);
        let (stdout, stderr) = match command.run() {
            Ok(out) => (out.stdout, out.stderr),
            Err(HelperError::NotFound { .. }) => {
                return Err((
                    format!("{} was not found", self.python),
                    "install Python 3.10 or newer, or put it on PATH".into(),
                ));
            }
            Err(failed) => {
                return Err((
                    format!("the pack host ({}) failed: {failed}", argv.join(" ")),
                    "look for a loop or a network call at the top of the benchfile".into(),
                ));
            }
        };
        let answers: Vec<HostAnswer> = stdout
            .lines()
            .filter(|line| line.starts_with('{'))
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        if answers.len() != requests.len() {
            return Err((
                format!(
                    "the pack host gave {} answer(s) for {} question(s): {}",
                    answers.len(),
                    requests.len(),
                    last_lines(&stderr, 5)
                ),
                "run the benchfile with python to see its error".into(),
            ));
        }
        Ok(answers
            .into_iter()
            .map(|answer| match answer {
                HostAnswer {
                    ok: true,
                    plan: Some(plan),
                    ..
                } => Ok(plan),
                HostAnswer { error, .. } => {
                    Err(error.unwrap_or_else(|| "the pack host answered without a plan".into()))
                }
            })
            .collect())
    }

    /// A plan of one process that runs the benchfile's own `method` (`install` or `prepare`)
    /// in the host, its request written first beside the benchmark's other extra files.
    pub fn method_plan(
        &self,
        bench: &ResolvedBench,
        request: &HostRequest,
        method: &str,
        ctx: &PlanContext,
    ) -> Result<BenchPlan, Error> {
        let folders = &bench.folders;
        let file = folders
            .extra
            .join(format!("packhost-{}-{method}.json", bench.name));
        let content = serde_json::to_string(request).unwrap_or_default();
        let mut env = self.env();
        env.insert(
            "PATH".into(),
            format!("{}:{}", folders.venv.join("bin"), ctx.path),
        );
        env.insert("PYTHONUNBUFFERED".into(), "1".into());
        let mut argv = self.argv(method);
        argv.push(file.to_string());
        Ok(BenchPlan {
            bench: bench.name.clone(),
            processes: vec![ProcessSpec {
                tag: if method == "prepare" {
                    vec![bench.name.clone()]
                } else {
                    vec![bench.name.clone(), method.to_string()]
                },
                argv,
                env,
                cwd: folders.code.clone(),
                node: None,
                devices: Vec::new(),
                use_stdout: false,
                nolog: false,
                launch: milabench_plan::Launch::Local,
                node_command: None,
                job: None,
                config: request.config.clone(),
            }],
            files: vec![PlannedFile {
                path: file,
                content,
            }],
            max_duration: None,
        })
    }
}

/// Plans already answered in this process, by request.
fn memo() -> &'static Mutex<HashMap<String, HostPlan>> {
    static MEMO: OnceLock<Mutex<HashMap<String, HostPlan>>> = OnceLock::new();
    MEMO.get_or_init(Mutex::default)
}

/// The memo's key of a request: the request itself (its configuration holds the benchmark's
/// folder, tag, system and GPUs).
fn memo_key(request: &HostRequest) -> String {
    serde_json::to_string(request).unwrap_or_default()
}

/// The last `n` lines of `text`, on one line.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    let tail = lines[start..].join(" | ");
    if tail.is_empty() {
        "(nothing on standard error)".into()
    } else {
        tail
    }
}

/// The folder of a benchmark.
pub fn folder_of(bench: &ResolvedBench) -> PathBuf {
    bench.folders.code.clone().into_std_path_buf()
}
