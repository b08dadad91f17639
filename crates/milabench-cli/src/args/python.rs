//! The Python milabench's command line of June 2026, as its scripts spell it: its command groups
//! (`analysis`, `tools`, `data`, `slurm schedule`) mapped onto our commands, and its
//! underscore spellings of every flag (`--run_name`) accepted beside ours. `--help` shows ours.

use camino::Utf8PathBuf;
use clap::{Args, Subcommand};

use super::{
    DevArgs, NewArgs, PinArgs, ReplayArgs, ReportArgs, ResolveArgs, RunArgs, SuiteArgs,
    SummaryArgs, SysinfoArgs,
};

/// `command` (ours) also accepting the Python tool's spellings: each long flag spelled with `-`
/// also accepted with `_` (hidden), in every subcommand (`--run_name` for `--run-name`), and
/// `tools pin -c FILE` naming a constraint file as there (`-c` is `--config` elsewhere).
pub fn with_python_spellings(command: clap::Command) -> clap::Command {
    underscores(command).mut_subcommand("tools", |tools| {
        tools.mut_subcommand("pin", |pin| {
            pin.mut_arg("config", |config| config.short(None))
                .mut_arg("constraints", |constraints| constraints.short('c'))
        })
    })
}

/// Hidden `_` aliases of every long flag with a `-`, recursively.
fn underscores(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| match arg.get_long() {
            Some(long) if long.contains('-') => {
                let python = long.replace('-', "_");
                arg.alias(python)
            }
            _ => arg,
        })
        .mut_subcommands(underscores)
}

/// `milabench analysis`: the Python tool's group for reports and comparisons.
#[derive(Debug, Subcommand)]
pub enum AnalysisCommand {
    /// `milabench summary`: the per-benchmark summary of run folders as JSON.
    Summary(SummaryArgs),
    /// `milabench report`: the results table and score of run folders.
    Generate(Box<ReportArgs>),
    /// Compare the run folders under `--folder` (the Python tool's form), the oldest first;
    /// `milabench compare RUN...` compares named folders.
    Compare(FolderCompareArgs),
    /// `milabench replay`: the validation layers over a recorded run.
    Replay(ReplayArgs),
    /// Not here: writes runs into the Python tool's SQL schema; use `milabench db import`
    /// (our results database) or `report --publish` (the milabench dashboard).
    Publish(PythonOnlyArgs),
    /// Not here: opens a GitHub pull request with results.
    Pr(PythonOnlyArgs),
}

/// `milabench tools`: the Python tool's group of maintenance commands.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// `milabench pin`: compile each benchmark's requirements into pinned files.
    Pin(ToolsPinArgs),
    /// `milabench new`: a new benchmark folder from the template.
    New(ToolsNewArgs),
    /// `milabench resolve`: the resolved suite (`--lean`: enabled benchmarks only).
    Resolve(ToolsResolveArgs),
    /// The resolved suite with the system block of each benchmark (`milabench resolve
    /// --with-system`).
    Matrix(ResolveArgs),
    /// Print the `MILABENCH_*` variables that set this tool's options, as `export` lines
    /// (commented out when unset).
    Env,
    /// `milabench dev`: a shell in a benchmark's environment.
    Shell(DevArgs),
    /// Print the CI matrix of a suite as JSON: its enabled benchmarks grouped by benchmark
    /// folder, `[{name, select, multinode}]`.
    Ci(CiArgs),
    /// Make a venv's progress bars quiet: writes a `sitecustomize.py` into its site-packages
    /// that swaps tqdm for benchmate's throttled bar (redrawn at most every 30 s).
    Patch(PatchArgs),
    /// `milabench sysinfo`: what this machine is.
    Machine(SysinfoArgs),
    /// Not here: `run` with a system file's `docker_image` (or `run --container IMAGE`) runs
    /// each benchmark in the image on its node.
    Container(PythonOnlyArgs),
    /// Not here: `milabench dev BENCH -- pip ...` runs pip in a benchmark's environment.
    Pip(PythonOnlyArgs),
    /// Not here: uninstalls venv packages that the system site-packages provide.
    PreferSystem(PythonOnlyArgs),
    /// Not here: creates the Python tool's SQL tables; our database migrates itself.
    Sqlsetup(PythonOnlyArgs),
    /// Not here: an ssh tunnel to the Python tool's database server.
    Tunnel(PythonOnlyArgs),
}

/// `milabench data`: the Python tool's group for benchmark data.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Copy a shared base folder's `data` and `cache` to a local base (untarring `data.tar`,
    /// `cache.tar` or `.tar.gz` archives when there are some) and link its `venv`; prints the
    /// `MILABENCH_BASE` to use.
    Sharedsetup(SharedSetupArgs),
    /// Archive a base folder's `data` and `cache` as `data.tar` and `cache.tar` in a shared
    /// folder, for `data sharedsetup` on other machines.
    Archive(ArchiveArgs),
    /// `milabench run` (which prepares, then runs).
    #[command(name = "prepare_run", alias = "prepare-run")]
    PrepareRun(Box<RunArgs>),
    /// Not here: checks access to gated models on the Hugging Face hub.
    Gated(PythonOnlyArgs),
}

/// A Python-only command's arguments: anything, for the one-line message that says why the
/// command has no meaning here.
#[derive(Debug, Args)]
pub struct PythonOnlyArgs {
    /// The command's arguments (not used).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub args: Vec<String>,
}

/// Arguments of `milabench analysis compare`.
#[derive(Debug, Args)]
pub struct FolderCompareArgs {
    /// Folder holding run folders (`<base>/runs`).
    #[arg(long, value_name = "DIR")]
    pub folder: Utf8PathBuf,
    /// Keep the run folders whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Compare only the N most recent run folders.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    pub last: Option<u32>,
    /// The metric compared: only `train_rate` here (each benchmark's perf).
    #[arg(long, default_value = "train_rate", value_parser = ["train_rate"])]
    pub metric: String,
    /// The statistic compared: only `median` and `mean` are accepted; both compare the
    /// report's perf (the trimmed mean of the rates) with its 95% interval.
    #[arg(long, default_value = "median", value_parser = ["median", "mean"])]
    pub stat: String,
}

/// Arguments of `milabench tools pin`.
#[derive(Debug, Args)]
pub struct ToolsPinArgs {
    /// What `milabench pin` takes.
    #[command(flatten)]
    pub pin: PinArgs,
    /// Pin again from the `requirements.in` files alone (the default here: existing pins are
    /// never read back).
    #[arg(long)]
    pub from_scratch: bool,
    /// Constraint files (`-c`, as in the Python tool; `--config` has no short form here): only
    /// `constraints/<variant>.txt` of the checkout is used, so the one named gives the variant.
    #[arg(long = "constraints", num_args = 1.., value_name = "FILE")]
    pub constraints: Vec<Utf8PathBuf>,
}

/// Arguments of `milabench tools new`.
#[derive(Debug, Args)]
pub struct ToolsNewArgs {
    /// Name of the benchmark.
    #[arg(long = "name", value_name = "NAME")]
    pub name: String,
    /// Template: `simple`, `voir` and `stdout` all give our one template (a benchmark that
    /// reports through benchmate; `benchfile.yaml`'s `use_stdout` switches to stdout).
    #[arg(long, default_value = "simple", value_parser = ["simple", "voir", "stdout"])]
    pub template: String,
    /// Folder that receives the new benchmark folder.
    #[arg(long, default_value = "benchmarks", value_name = "DIR")]
    pub dest: std::path::PathBuf,
}

impl ToolsNewArgs {
    /// The same request as `milabench new`.
    pub fn as_new(&self) -> NewArgs {
        NewArgs {
            name: self.name.clone(),
            dest: self.dest.clone(),
        }
    }
}

/// Arguments of `milabench tools resolve`.
#[derive(Debug, Args)]
pub struct ToolsResolveArgs {
    /// What `milabench resolve` takes.
    #[command(flatten)]
    pub resolve: ResolveArgs,
    /// Only the benchmarks that run (enabled, weighted): `resolve --enabled-only`.
    #[arg(long)]
    pub lean: bool,
}

/// Arguments of `milabench tools ci`.
#[derive(Debug, Args)]
pub struct CiArgs {
    /// Which suite and which benchmarks.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Leave out the benchmarks with one of these tags (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "TAGS")]
    pub exclude_tags: Vec<String>,
}

/// Arguments of `milabench tools patch`.
#[derive(Debug, Args)]
pub struct PatchArgs {
    /// The virtual environment to patch.
    #[arg(long, value_name = "DIR")]
    pub venv: Utf8PathBuf,
}

/// Arguments of `milabench data sharedsetup`.
#[derive(Debug, Args)]
pub struct SharedSetupArgs {
    /// The shared base folder (network drive): its `data`, `cache` (folders or `.tar`/`.tar.gz`
    /// archives) and `venv`.
    #[arg(long, value_name = "DIR")]
    pub network: Utf8PathBuf,
    /// The local base folder to fill.
    #[arg(long, value_name = "DIR")]
    pub local: Utf8PathBuf,
    /// Only restore from archives: fail when `data.tar[.gz]` is missing instead of copying the
    /// folder.
    #[arg(long)]
    pub archive: bool,
    /// Succeed without doing anything when the shared data is not there.
    #[arg(long)]
    pub maybe: bool,
}

/// Arguments of `milabench data archive`.
#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// The base folder whose `data` and `cache` to archive.
    #[arg(long, value_name = "DIR")]
    pub local: Utf8PathBuf,
    /// The shared folder that receives `data.tar` and `cache.tar`.
    #[arg(long, value_name = "DIR")]
    pub network: Utf8PathBuf,
}
