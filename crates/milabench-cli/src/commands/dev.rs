//! `milabench dev BENCH [-- CMD...]`: a shell or a command inside a benchmark's environment,
//! with the variables and working folder its run processes get (taken from its plan).

use std::os::unix::process::CommandExt as _;

use crate::errors::{Context as _, bail};
use milabench::ExitCode;
use milabench::install::{EnvError, read_fingerprint};
use milabench::settings::EnvVars;
use milabench::{PlannedBench, plan_context, plan_one};

use crate::args::{DevArgs, GlobalArgs};
use crate::settings::suite_session;

/// Replaces this process with the shell or the command.
#[allow(clippy::print_stderr)]
pub fn run(global: &GlobalArgs, args: &DevArgs) -> crate::errors::Result<ExitCode> {
    let env = EnvVars::from_process();
    let session = suite_session(global, &args.suite, Default::default(), None, env)?;
    let resolved = session.resolved();
    let settings = session.settings();
    let Some(bench) = resolved.suite.benches.iter().find(|b| b.name == args.bench) else {
        let known: Vec<&str> = resolved.suite.runnable().map(|b| b.name.as_str()).collect();
        bail!(
            "no benchmark `{}` in the suite; known: {}",
            args.bench,
            known.join(", ")
        );
    };
    let venv = Some(bench.folders.venv.clone())
        .filter(|venv| !venv.as_str().is_empty())
        .unwrap_or_else(|| settings.layout().venv.join(&bench.install_group));
    if read_fingerprint(&venv).is_none() {
        return Err(EnvError::NotInstalled {
            bench: bench.name.clone(),
            group: bench.install_group.clone(),
            venv,
            state: "not installed".into(),
        }
        .into());
    }
    let ctx = plan_context(resolved, None)?;
    let plan = match plan_one(bench, &ctx)? {
        PlannedBench::Run(plan) => plan,
        PlannedBench::Skipped { bench, unmet } => {
            bail!(
                "`{bench}` does not run on this system ({})",
                unmet.join(", ")
            )
        }
        PlannedBench::BrokenBenchfile { bench, reason } => {
            bail!("benchmark `{bench}`: its benchfile.py gives no plan: {reason}")
        }
    };
    let process = plan
        .processes
        .first()
        .with_context(|| format!("the plan of `{}` has no process", bench.name))?;
    let (program, rest) = match args.command.split_first() {
        Some((program, rest)) => (program.clone(), rest.to_vec()),
        None => {
            let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
            eprintln!(
                "entering the environment of `{}` ({venv}) in {}; `exit` leaves it",
                bench.name, process.cwd
            );
            (shell, Vec::new())
        }
    };
    let err = std::process::Command::new(&program)
        .args(&rest)
        .envs(&process.env)
        .current_dir(&process.cwd)
        .exec();
    Err(err).with_context(|| format!("could not start `{program}`"))
}
