//! The Python milabench's command groups (`analysis`, `tools`, `data`, `slurm schedule`): each
//! command handed to ours, or, where it has no meaning here, refused in one line (exit 2).

use clap::{Args as _, FromArgMatches as _};
use milabench::ExitCode;
use milabench::settings::EnvVars;
use milabench::{SharedSetup, SharedStep};
use milabench_vocab::env_vars::ALL;

use crate::args::{
    AnalysisCommand, ArchiveArgs, CiArgs, CompareArgs, DataCommand, FolderCompareArgs, GlobalArgs,
    SharedSetupArgs, ToolsCommand, ToolsPinArgs,
};
use crate::output::{note, write_output};

/// Runs an `analysis` command.
pub fn analysis(global: &GlobalArgs, command: AnalysisCommand) -> crate::errors::Result<ExitCode> {
    match command {
        AnalysisCommand::Summary(args) => super::summary::run(&args),
        AnalysisCommand::Generate(args) => super::report::run(global, &args),
        AnalysisCommand::Compare(args) => compare_folder(global, &args),
        AnalysisCommand::Replay(args) => super::replay::run(&args),
        AnalysisCommand::Publish(_) => refuse(
            "analysis publish",
            "it writes runs into the Python tool's SQL schema; `milabench db import RUN` indexes runs in this tool's results database (SQLite, or PostgreSQL with --db URL)",
        ),
        AnalysisCommand::Pr(_) => refuse(
            "analysis pr",
            "it opens a GitHub pull request with results; publish them with `report --publish` or keep the run folders",
        ),
    }
}

/// Runs a `tools` command.
pub fn tools(global: &GlobalArgs, command: ToolsCommand) -> crate::errors::Result<ExitCode> {
    match command {
        ToolsCommand::Pin(args) => pin(global, args),
        ToolsCommand::New(args) => super::new::run(&args.as_new()),
        ToolsCommand::Resolve(mut args) => {
            args.resolve.enabled_only |= args.lean;
            super::resolve::run(global, &args.resolve)
        }
        ToolsCommand::Matrix(mut args) => {
            args.with_system = true;
            super::resolve::run(global, &args)
        }
        ToolsCommand::Env => env_lines(),
        ToolsCommand::Shell(args) => super::dev::run(global, &args),
        ToolsCommand::Ci(args) => ci(global, &args),
        ToolsCommand::Patch(args) => {
            let file = milabench::install::patch_progress_bars(&args.venv)?;
            note(&format!(
                "wrote {file}: progress bars in {} are quiet",
                args.venv
            ));
            Ok(ExitCode::Success)
        }
        ToolsCommand::Machine(args) => super::sysinfo::run(global, &args),
        ToolsCommand::Container(_) => refuse(
            "tools container",
            "name the image in the system file (`docker_image`, `docker:` or `container:`) or pass `milabench run --container IMAGE`: each benchmark then runs in it on its node (docs/containers.md)",
        ),
        ToolsCommand::Pip(_) => refuse(
            "tools pip",
            "`milabench dev BENCH -- pip ARGS` runs pip in a benchmark's environment",
        ),
        ToolsCommand::PreferSystem(_) => refuse(
            "tools prefer-system",
            "an environment over a site's Python is an overlay here (`install --python PYTHON`), which uses the site's packages without uninstalling anything",
        ),
        ToolsCommand::Sqlsetup(_) => refuse(
            "tools sqlsetup",
            "the results database makes and migrates its own tables (`milabench db`)",
        ),
        ToolsCommand::Tunnel(_) => refuse(
            "tools tunnel",
            "it opens an ssh tunnel to the Python tool's database server; use `ssh -L` and `--db postgres://...` for a remote PostgreSQL",
        ),
    }
}

/// Runs a `data` command.
pub fn data(global: &GlobalArgs, command: DataCommand) -> crate::errors::Result<ExitCode> {
    match command {
        DataCommand::Sharedsetup(args) => shared_setup(&args),
        DataCommand::Archive(args) => archive(&args),
        DataCommand::PrepareRun(args) => super::run::run(global, &args),
        DataCommand::Gated(_) => refuse(
            "data gated",
            "it checks access to gated models on the Hugging Face hub; `milabench check` checks what a run needs",
        ),
    }
}

/// `slurm schedule`, refused.
pub fn slurm_schedule() -> crate::errors::Result<ExitCode> {
    refuse(
        "slurm schedule",
        "`milabench slurm submit` submits a run (`--profile` names the sbatch profile, `--wait` follows the job like --sync, sbatch options go after `--`)",
    )
}

/// `--github-issues`, refused wherever it is given.
pub fn refuse_github_issues(given: bool) -> crate::errors::Result<()> {
    if given {
        crate::errors::bail!(
            "--github-issues: links to open GitHub issues for failures are not made here; the validation report and the run folder hold each failure's output"
        );
    }
    Ok(())
}

/// The one-line refusal of a Python-only command (exit 2, bad input).
fn refuse(command: &str, why: &str) -> crate::errors::Result<ExitCode> {
    crate::errors::bail!("`{command}` is the Python milabench's and has no meaning here: {why}")
}

/// `tools pin`: `-c constraints/<variant>.txt` names the variant when `--variant` does not.
fn pin(global: &GlobalArgs, mut args: ToolsPinArgs) -> crate::errors::Result<ExitCode> {
    for file in &args.constraints {
        let stem = file.file_stem().unwrap_or_default();
        let is_arch = ["cpu", "cuda", "rocm", "xpu", "hpu"].contains(&stem);
        match &args.pin.variant {
            Some(variant) if variant == stem => {}
            None if is_arch => args.pin.variant = Some(stem.to_owned()),
            _ => crate::errors::bail!(
                "tools pin -c {file}: pins are compiled under the checkout's constraints/<variant>.txt alone\n  fix: name the variant (`--variant cuda`, or `-c constraints/cuda.txt`) and put extra constraints in that file"
            ),
        }
    }
    super::pin::run(global, &args.pin)
}

/// `tools env`: every variable that sets an option, as `export` lines; unset ones commented.
fn env_lines() -> crate::errors::Result<ExitCode> {
    let env = EnvVars::from_process();
    let mut text = String::new();
    for name in ALL {
        match env.get(name) {
            Some(value) => text.push_str(&format!(
                "export {name}={}\n",
                milabench_vocab::shell_quote(value)
            )),
            None => text.push_str(&format!("# export {name}=\n")),
        }
    }
    write_output(None, &text)?;
    Ok(ExitCode::Success)
}

/// `tools ci`: the suite's CI matrix as one line of JSON.
fn ci(global: &GlobalArgs, args: &CiArgs) -> crate::errors::Result<ExitCode> {
    let env = EnvVars::from_process();
    let settings =
        crate::settings::load_suite_settings(global, &args.suite, Default::default(), &env)?;
    let resolved = milabench::resolve(&settings, &args.suite.selection(), &env)?;
    let groups = milabench::ci_groups(&resolved.suite.benches, &args.exclude_tags);
    write_output(None, &(serde_json::to_string(&groups)? + "\n"))?;
    Ok(ExitCode::Success)
}

/// `analysis compare --folder DIR`: the run folders under DIR, oldest first (the last `--last`
/// of them, those whose name holds `--filter`), compared with `milabench compare`.
fn compare_folder(
    global: &GlobalArgs,
    args: &FolderCompareArgs,
) -> crate::errors::Result<ExitCode> {
    let read = std::fs::read_dir(&args.folder).map_err(|e| {
        crate::errors::usage!(
            "cannot read --folder {}: {e}\n  fix: give the folder that holds the run folders (<base>/runs)",
            args.folder
        )
    })?;
    let mut runs: Vec<(std::time::SystemTime, String)> = Vec::new();
    for entry in read.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_run = entry.file_type().is_ok_and(|t| t.is_dir())
            && !name.starts_with("install")
            && !name.starts_with("prepare")
            && args
                .filter
                .as_ref()
                .is_none_or(|f| name.contains(f.as_str()));
        if is_run {
            let modified = entry.metadata().and_then(|m| m.modified())?;
            runs.push((modified, entry.path().display().to_string()));
        }
    }
    runs.sort();
    if let Some(last) = args.last {
        let keep = runs.len().saturating_sub(last as usize);
        runs.drain(..keep);
    }
    if runs.len() < 2 {
        crate::errors::bail!(
            "analysis compare: {} run folder(s) under {}{}, and a comparison needs two\n  fix: check --folder and --filter",
            runs.len(),
            args.folder,
            args.filter
                .as_ref()
                .map(|f| format!(" whose name holds `{f}`"))
                .unwrap_or_default()
        );
    }
    let argv = std::iter::once("compare".to_owned()).chain(runs.into_iter().map(|(_, r)| r));
    let matches =
        CompareArgs::augment_args(clap::Command::new("compare")).try_get_matches_from(argv)?;
    super::compare::run(global, &CompareArgs::from_arg_matches(&matches)?)
}

/// `data sharedsetup`: the shared data copied to the local base, each step said.
fn shared_setup(args: &SharedSetupArgs) -> crate::errors::Result<ExitCode> {
    let setup = SharedSetup {
        network: args.network.clone().into(),
        local: args.local.clone().into(),
        archives_only: args.archive,
        maybe: args.maybe,
    };
    let steps = milabench::shared_setup(&setup, &mut say_step)?;
    if !matches!(steps[..], [SharedStep::NothingShared { .. }]) {
        note("use it with:");
        write_output(
            None,
            &format!(
                "export MILABENCH_BASE={}\n",
                milabench_vocab::shell_quote(args.local.as_str())
            ),
        )?;
    }
    Ok(ExitCode::Success)
}

/// `data archive`: the local data archived into the shared folder, each step said.
fn archive(args: &ArchiveArgs) -> crate::errors::Result<ExitCode> {
    milabench::archive_shared_data(
        args.local.as_std_path(),
        args.network.as_std_path(),
        &mut say_step,
    )?;
    Ok(ExitCode::Success)
}

/// One line on stderr per shared-data step, before it runs.
fn say_step(step: &SharedStep) {
    let line = match step {
        SharedStep::Unpacked { archive, into } => {
            format!("unpacking {} into {}", archive.display(), into.display())
        }
        SharedStep::Copied { from, to } => {
            format!("copying {} to {}", from.display(), to.display())
        }
        SharedStep::Linked { link, target } => {
            format!("linking {} to {}", link.display(), target.display())
        }
        SharedStep::Archived { folder, archive } => {
            format!("archiving {} as {}", folder.display(), archive.display())
        }
        SharedStep::NothingShared { data } => {
            format!(
                "no shared data at {} (--maybe): nothing to do",
                data.display()
            )
        }
    };
    note(&line);
}
