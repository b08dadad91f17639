//! The pack host: the Python helper that evaluates `benchfile.py` files (see
//! `benchmarks/_packhost` and [`milabench_plan::host_request`]).
//!
//! It has no dependency beyond the standard library, so it runs on the orchestrator's own
//! Python (`python3` on `PATH`) with its folder on `PYTHONPATH`: a virtual environment of its
//! own would cost a second of uv and hold nothing. Each question starts it once (a whole suite
//! is one question, see [`PackHost::prefetch`]), and it answers each benchmark on a channel of
//! its own as soon as it has read its benchfile. A benchfile that does not answer within
//! [`ANSWER_LIMIT`] is stopped and named, one that ends the host is named with its exit status
//! (the host starts again for the benchmarks after it), and either answer is kept for the rest
//! of the process: a broken benchfile costs its own benchmark, once.

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
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
    /// How long it may take to answer about one benchmark ([`ANSWER_LIMIT`]).
    pub limit: Duration,
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
        Ok(PackHost {
            python,
            root,
            limit: ANSWER_LIMIT,
        })
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
    /// (see [`PackHost::prefetch`]) already has them, or already knows its benchfile gives none
    /// (asked once: a benchfile that loops costs one [`ANSWER_LIMIT`] per process).
    pub fn plan(&self, bench: &ResolvedBench, request: &HostRequest) -> Result<HostPlan, Error> {
        let key = memo_key(request);
        let known = memo().lock().ok().and_then(|m| m.get(&key).cloned());
        let answer = match known {
            Some(answer) => answer,
            None => {
                let answer = self
                    .ask(std::slice::from_ref(request))
                    .map_err(|(message, fix)| Error::PackHost {
                        bench: bench.name.clone(),
                        message,
                        fix,
                    })?
                    .pop()
                    .unwrap_or_else(|| Err("the pack host gave no answer".into()));
                if let Ok(mut memo) = memo().lock() {
                    memo.insert(key, answer.clone());
                }
                answer
            }
        };
        answer.map_err(|error| Error::PackHost {
            bench: bench.name.clone(),
            message: error,
            fix: "fix its benchfile.py, or describe the folder with a benchfile.yaml \
                  (docs/benchfile.md)"
                .into(),
        })
    }

    /// Asks the host about many benchmarks at once (one Python start for a whole suite, and one
    /// more after each benchfile that stopped it) and keeps the answers for
    /// [`PackHost::plan`], which reports each failure with its own benchmark's name.
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
            memo.insert(memo_key(request), answer);
        }
    }

    /// An answer for each of `requests`, in order (a plan, or why its benchfile gave none), or
    /// why the host could not be asked at all (with the fix). A benchfile that stops the host
    /// (it exits, or runs past the time limit) is answered with how the host ended, and the
    /// host is started again for the requests after it.
    fn ask(
        &self,
        requests: &[HostRequest],
    ) -> Result<Vec<Result<HostPlan, String>>, (String, String)> {
        let mut answers = Vec::with_capacity(requests.len());
        while answers.len() < requests.len() {
            let rest = &requests[answers.len()..];
            let (given, stopped) = self.ask_once(rest)?;
            answers.extend(given);
            if let Some(why) = stopped {
                // The host was reading the benchfile of the first request left unanswered.
                answers.push(Err(why));
            }
        }
        Ok(answers)
    }

    /// One start of the host for `requests`: the answers it gave, in order, and, when it
    /// stopped before answering them all, how it ended.
    fn ask_once(&self, requests: &[HostRequest]) -> Result<HostAnswers, (String, String)> {
        let input = serde_json::to_vec(requests).map_err(|e| {
            (
                format!("could not write its request: {e}"),
                "report this bug".into(),
            )
        })?;
        let argv = self.argv("plan");
        // The host stops a benchfile past `limit` itself; this bounds one that keeps Python from
        // stopping it (a wait in native code, its own SIGALRM handler), one limit more than all
        // the answers may take.
        let whole = self.limit * u32::try_from(requests.len() + 1).unwrap_or(u32::MAX);
        let mut command = HelperCommand::new(&argv[0], &argv[1..], whole);
        command.env = self.env().into_iter().collect();
        command.env.push((
            "PACKHOST_ANSWER_LIMIT".into(),
            self.limit.as_secs_f64().to_string(),
        ));
        command.stdin = Some(input);
        let output = match command.run_to_limit() {
            Ok(output) => output,
            Err(HelperError::NotFound { .. }) => {
                return Err((
                    format!("{} was not found", self.python),
                    "install Python 3.10 or newer, or put it on PATH".into(),
                ));
            }
            Err(failed) => {
                return Err((
                    format!("the pack host ({}) failed: {failed}", argv.join(" ")),
                    "check that python3 runs".into(),
                ));
            }
        };
        // Standard output is the host's own channel (the benchfile's output goes to standard
        // error): a line that is not an answer is a broken host.
        let answers: Vec<Result<HostPlan, String>> = output
            .stdout
            .lines()
            .take(requests.len())
            .map(|line| match serde_json::from_str::<HostAnswer>(line) {
                Ok(HostAnswer {
                    ok: true,
                    plan: Some(plan),
                    ..
                }) => Ok(plan),
                Ok(HostAnswer { error, .. }) => {
                    Err(error.unwrap_or_else(|| "the pack host answered without a plan".into()))
                }
                Err(e) => Err(format!("the pack host's answer is not one ({e}): {line}")),
            })
            .collect();
        if answers.len() == requests.len() {
            return Ok((answers, None));
        }
        let stopped = if output.timed_out {
            format!(
                "its benchfile.py did not finish within {} s and the pack host was killed with \
                 it (a loop, or a wait in native code?)",
                self.limit.as_secs_f64()
            )
        } else {
            let ended = match (output.status.code(), output.status.signal()) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                (None, None) => format!("ended with {}", output.status),
            };
            format!(
                "the pack host {ended} while reading its benchfile.py (os._exit, or a crash of \
                 Python?)"
            )
        };
        Ok((
            answers,
            Some(format!(
                "{stopped}; its last words: {}",
                last_lines(benchfile_output(&output.stderr), 5)
            )),
        ))
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
                container: None,
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

/// What one start of the host answered ([`PackHost::ask_once`]): an answer per request it got
/// to, in order, and how it ended when it did not get to them all.
type HostAnswers = (Vec<Result<HostPlan, String>>, Option<String>);

/// The answers of this process, by request: a plan, or why the benchfile gives none.
fn memo() -> &'static Mutex<HashMap<String, Result<HostPlan, String>>> {
    static MEMO: OnceLock<Mutex<HashMap<String, Result<HostPlan, String>>>> = OnceLock::new();
    MEMO.get_or_init(Mutex::default)
}

/// The memo's key of a request: the request itself (its configuration holds the benchmark's
/// folder, tag, system and GPUs).
fn memo_key(request: &HostRequest) -> String {
    serde_json::to_string(request).unwrap_or_default()
}

/// The line the host writes on standard error before it reads each benchfile (`READING` in
/// `packhost/__main__.py`).
const READING: &str = "packhost: reading the benchfile.py of ";

/// What the host's standard error `stderr` holds since it started reading the last benchfile
/// it got to.
fn benchfile_output(stderr: &str) -> &str {
    stderr
        .rfind(READING)
        .and_then(|at| stderr[at..].split_once('\n'))
        .map_or(stderr, |(_, after)| after)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The pack host of this checkout, with a time limit of `limit`.
    fn host(limit: Duration) -> PackHost {
        let root = Utf8PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../benchmarks/_packhost"
        ));
        let path = std::env::var("PATH").unwrap_or_default();
        let python = milabench_env::find_on_path("python3", Some(&path)).expect("python3 on PATH");
        PackHost {
            python,
            root,
            limit,
        }
    }

    /// A request about the benchmark folder `dir/name` whose `benchfile.py` starts with `top`.
    fn request(dir: &Path, name: &str, top: &str) -> HostRequest {
        let folder = dir.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(BENCHFILE_PY),
            format!(
                "{top}\nfrom milabench.pack import Package\n\
                 class B(Package):\n    pass\n__pack__ = B\n"
            ),
        )
        .unwrap();
        let base = dir.join("base");
        HostRequest {
            config: serde_json::json!({
                "name": name, "tag": [name], "definition": folder,
                "plan": {"method": "per_gpu"}, "argv": {},
                "dirs": {"base": base, "venv": base, "data": base, "runs": base,
                         "extra": base, "cache": base},
                "system": {"arch": "cpu", "nodes": []},
            }),
            gpus: Vec::new(),
            placeholders: IndexMap::new(),
            variables: serde_json::Map::new(),
        }
    }

    /// A benchfile that loops costs its own time limit once, one that ends the host is named
    /// with the status and its own output, and the benchmarks after them are answered; what
    /// benchfiles and their subprocesses write on file descriptor 1 mixes with no answer.
    #[test]
    fn each_broken_benchfile_costs_its_own_answer_and_the_others_are_answered() {
        let dir = tempfile::tempdir().unwrap();
        let requests = [
            request(dir.path(), "good1", ""),
            request(dir.path(), "raises", "raise RuntimeError('at import')"),
            request(dir.path(), "loops", "while True:\n    pass"),
            request(
                dir.path(),
                "prints",
                "import os, subprocess, sys\nos.write(1, b'{not an answer\\n')\n\
                 subprocess.run([sys.executable, '-c', 'print(\"{\\\\\"ok\\\\\": true}\")'])",
            ),
            request(
                dir.path(),
                "exits",
                "print('exits now')\nimport os\nos._exit(3)",
            ),
            request(dir.path(), "sysexit", "import sys\nsys.exit(0)"),
            request(dir.path(), "good2", ""),
        ];
        let answers = host(Duration::from_secs(1))
            .ask(&requests)
            .expect("answers");
        let said: Vec<String> = answers
            .iter()
            .map(|a| match a {
                Ok(plan) => format!("plan of {}", plan.class),
                Err(e) => e.clone(),
            })
            .collect();
        assert_eq!(said.len(), 7, "{said:#?}");
        assert_eq!(said[0], "plan of B");
        assert!(
            said[1].starts_with("RuntimeError: at import (at "),
            "{}",
            said[1]
        );
        assert!(said[2].contains("did not finish within 1 s"), "{}", said[2]);
        assert_eq!(said[3], "plan of B");
        assert!(
            said[4]
                .starts_with("the pack host exited with status 3 while reading its benchfile.py")
                && said[4].ends_with("its last words: exits now"),
            "{}",
            said[4]
        );
        assert!(
            said[5].starts_with("the benchfile called sys.exit(0) (at "),
            "{}",
            said[5]
        );
        assert_eq!(said[6], "plan of B");
    }

    /// A benchfile that keeps the host from stopping it is killed with the host at the limit of
    /// the whole question; the answers given before are kept and it alone is named.
    #[test]
    fn a_benchfile_the_host_cannot_stop_is_killed_with_it_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let requests = [
            request(dir.path(), "good", ""),
            request(
                dir.path(),
                "deaf",
                "import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\ntime.sleep(600)",
            ),
        ];
        let answers = host(Duration::from_secs(1))
            .ask(&requests)
            .expect("answers");
        assert!(answers[0].is_ok(), "{:?}", answers[0]);
        let Err(said) = &answers[1] else {
            panic!("{:?}", answers[1])
        };
        assert!(
            said.starts_with(
                "its benchfile.py did not finish within 1 s and the pack host was killed"
            ),
            "{said}"
        );
    }
}
