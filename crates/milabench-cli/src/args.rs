//! clap definitions of every `milabench` command and its flags.

use camino::Utf8PathBuf;
use clap::{Args, Parser, Subcommand, ValueEnum};
use milabench_vocab::env_vars;

mod python;

pub use python::{
    AnalysisCommand, ArchiveArgs, CiArgs, DataCommand, FolderCompareArgs, SharedSetupArgs,
    ToolsCommand, ToolsPinArgs, with_python_spellings,
};

/// Run machine-learning benchmark suites and report their results.
///
/// A suite is a YAML file naming real PyTorch benchmarks. `resolve` shows what a suite means
/// after includes, inheritance, matrices and overrides are applied.
///
/// Exit codes: 0 success, 1 benchmark failures, 2 bad input, 3 internal or environment failure
/// (a full disk, a database or server that cannot be reached, a bug), 130 interrupted.
#[derive(Debug, Parser)]
#[command(name = "milabench", version, propagate_version = true)]
pub struct Cli {
    /// Options shared by every command.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Base folder for environments, data, caches and runs [env: MILABENCH_BASE] [default: ./workdir].
    #[arg(long, global = true, value_name = "DIR")]
    pub base: Option<Utf8PathBuf>,
    /// Settings file (YAML) layered between built-in defaults and MILABENCH_* variables
    /// [env: MILABENCH_SETTINGS].
    #[arg(long, global = true, value_name = "FILE")]
    pub settings: Option<Utf8PathBuf>,
    /// Results database: a SQLite file, or a PostgreSQL URL `postgres://USER:PASSWORD@HOST/DB`
    /// [env: MILABENCH_DB] [default: <base>/results.db].
    #[arg(long, global = true, value_name = "FILE|URL")]
    pub db: Option<String>,
    /// A debug trail on stderr: what was resolved (suite, system, arch, run name), planned
    /// (each benchmark's processes) and started.
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

/// Every `milabench` command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the resolved suite: every benchmark with its final settings.
    ///
    /// Applies the built-in defaults, the suite file and its includes, `--override`s, matrix
    /// expansion, `inherits` chains, the `*` entry and `${...}` interpolation, then selection.
    /// Benchmark folders need not exist.
    Resolve(ResolveArgs),
    /// Print the results table and the suite score of one or more run folders.
    ///
    /// Reads every `.data` file under the folders (nested folders too, `install*`/`prepare*`
    /// skipped), pools each benchmark's processes, and prints per benchmark the failures, the
    /// trimmed mean training rate (`perf`), its spread, peak GPU memory, energy and `score`,
    /// then the failure rate (PASS at 1% or less) and the weighted geometric-mean `Score`.
    /// `--format text` is the Python tool's layout followed by the 95% intervals (batch means,
    /// over the rates the trimmed mean counts) and the warm-up found; json/csv/md/html carry
    /// the intervals in their rows.
    /// Weights and the list of expected benchmarks come from `--config` when given, else from
    /// the data. Exit status 1 when the failure rate is above 1%.
    Report(ReportArgs),
    /// Print the per-benchmark summary of run folders as JSON (NaN written as null).
    Summary(SummaryArgs),
    /// Compare runs: the change of each benchmark's perf against the first run, and whether it
    /// is beyond the noise of the rate samples (the 95% interval of the change, from batch
    /// means: better, worse or cannot tell; `--threshold` sets the smallest change that counts).
    Compare(CompareArgs),
    /// Replay a recorded event stream (.data file or run folder) through the validation layers
    /// and print their report. Exit status 1 when a layer objects.
    Replay(ReplayArgs),
    /// Print what this machine is: CPU model and cores, memory, operating system, accelerators
    /// (read with NVML, nvidia-smi or rocm-smi) with their memory, load, temperature and power.
    ///
    /// The same facts a run records in each benchmark's `meta` event. A machine without GPUs
    /// lists none; a GPU tool that fails is said as a warning, and the exit status stays 0.
    Sysinfo(SysinfoArgs),
    /// Check, in seconds, that a run can start: Python and uv, free disk under the base folder
    /// for the environments to install, memory, the accelerators and the suite's
    /// requirements, every other node of the system over ssh (the same milabench at the same
    /// path, the base folder there), the environments, the prepared data (the record a
    /// successful `prepare` leaves, with the same arguments), and the package index when an
    /// environment must be installed.
    ///
    /// Prints one line per check (ok, warn or FAIL) with the fix for each problem. Exit status
    /// 1 when a check fails.
    Check(CheckArgs),
    /// Run the suite: every selected benchmark, one after the other, then the report.
    ///
    /// Benchmarks whose `requires_capabilities` are not met on this system are skipped (and
    /// said so). With `--dry-run`, print the commands as a shell script instead.
    Run(RunArgs),
    /// Build the Python environment of every install group of the selected benchmarks.
    ///
    /// One venv per install group under `<base>/venv/`, made with uv (found on PATH, else
    /// installed once into `<base>/tools/` with the interpreter's pip) or pip. Each gets its
    /// benchmarks' `requirements.<variant>.txt` (their `requirements.in` when no pin exists),
    /// `constraints/<variant>.txt`, voir and benchmate. A group whose inputs did not change since
    /// its last successful install is left alone. A group another process is installing is
    /// waited for (its pid is named). Installer output goes to
    /// `<base>/logs/install/<group>.log`. Exit status 1 when a group fails.
    ///
    /// A group whose interpreter is named (its `python:` key in the suite, `--python`,
    /// `MILABENCH_PYTHON`) is an existing environment: its venv is an overlay made with
    /// `--system-site-packages` over it, which uses what the interpreter has (torch, say) and
    /// receives only what the group needs and lacks (from the benchmarks' `requirements.in`,
    /// with pip: the interpreter's versions stand, whatever the pinned files say); the
    /// interpreter's torch version is part of its fingerprint. `--offline --find-links DIR` installs from a wheelhouse made by
    /// `milabench bundle`, with no network.
    Install(InstallArgs),
    /// Pin requirements: compile each benchmark's `requirements.in` into
    /// `requirements.<variant>.txt` with `uv pip compile` under `constraints/<variant>.txt`.
    ///
    /// Benchmarks sharing an install group are first compiled together into
    /// `.pin/constraints-<variant>-<group>.txt`, so they agree on every version.
    Pin(PinArgs),
    /// Download every package the selected install groups need into a wheelhouse, for
    /// `milabench install --offline --find-links DIR` on a machine without a network.
    ///
    /// Per group: its requirement files (the `--arch`'s pinned `requirements.<variant>.txt`)
    /// under `constraints/<variant>.txt`, and voir, with `pip download` of the interpreter
    /// (`--python-version` and `--platform` for another machine); uv too, unless `--installer
    /// pip`. benchmate is installed from the checkout and needs nothing downloaded. Logs go to
    /// `<base>/logs/bundle/`. Exit status 1 when a download fails.
    Bundle(BundleArgs),
    /// Open a shell (or run `-- CMD...`) in a benchmark's environment, with the variables and
    /// working folder a run gives it.
    Dev(DevArgs),
    /// Create a new benchmark folder from the template (a working minimal benchmark).
    New(NewArgs),
    /// Run each selected benchmark's prepare step once (datasets, model files), in its
    /// environment, with the arguments its run will get.
    ///
    /// The step is `benchfile.yaml`'s `prepare` command, else `prepare.py` when the folder has
    /// one. Events go to `<base>/runs/prepare.<time>/`. Exit status 1 when a step fails.
    Prepare(PrepareArgs),
    /// Internal: the watchdog `run` and `prepare` start beside each benchmark; it kills the
    /// benchmark's processes when the command that started it dies (its standard input ends).
    #[command(name = "__watchdog", hide = true)]
    Watchdog,
    /// The results database: import run folders, list the runs it holds, export one.
    #[command(subcommand)]
    Db(DbCommand),
    /// One benchmark's perf over the runs of the results database, each run compared with the
    /// previous comparable one (same benchmark, same GPU model and count).
    History(HistoryArgs),
    /// Run suites through Slurm: print the system of the allocation this runs in, or submit a
    /// run as a batch job (and follow it). See docs/slurm.md.
    #[command(subcommand)]
    Slurm(SlurmCommand),
    /// Load an OpenAI-compatible LLM server and measure it as `vllm bench serve` and MLPerf do:
    /// streamed requests (`/v1/completions` or `/v1/chat/completions`), per request the time to
    /// first token (TTFT), every inter-token gap (ITL), the time per output token (TPOT) and
    /// the end-to-end latency; their mean and p50/p90/p95/p99, request and output-token
    /// throughput and goodput under `--slo`, each with its 95% interval.
    ///
    /// Scenarios: `offline` (`--requests` sent at once), `server` (Poisson arrivals at `--rate`
    /// for `--duration`, the same seeded schedule whatever the server does), `concurrency`
    /// (`--concurrency` requests in flight), `sweep` (server runs at `--rate`, then times
    /// `--sweep-factor`, until one breaks the SLO: 99% of requests within it and none failed;
    /// the highest rate that held is reported). `--run-dir` writes the results as the data
    /// events of a run folder (`<--name>.data`, made before the first request; an existing one
    /// is refused), for `report`, `compare` and the results database.
    ///
    /// With a server command after `--` (`milabench load --model M -- vllm serve M`), the
    /// server is started first, once every flag is checked, on the port the command names or
    /// else a free loopback port (`--host 127.0.0.1 --port N` added), waited for until
    /// `--health` answers, and stopped with its process group and every process it started at
    /// the end; this is how suites run serving benchmarks.
    /// Ctrl-C ends the run early, keeping and showing what was measured (exit status 130).
    ///
    /// Exit status 1 when requests failed (HTTP errors, timeouts, malformed streams, a server
    /// that went away; counted and shown, never as latency samples), none was sent, or no
    /// sweep rate held; 2 for flags or files that cannot work; 3 when the server cannot be
    /// reached at the start.
    Load(LoadArgs),
    /// Read the batch-size sizer's scaling files (docs/sweeps.md).
    #[command(subcommand)]
    Sizer(SizerCommand),
    /// The Python milabench's names for `summary`, `report` (`generate`), `compare` and
    /// `replay` (docs/compatibility.md).
    #[command(subcommand)]
    Analysis(AnalysisCommand),
    /// The Python milabench's names for `pin`, `new`, `resolve`, `dev` (`shell`), `sysinfo`
    /// (`machine`), and its `ci`, `env` and `patch` (docs/compatibility.md).
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// The Python milabench's data commands: `sharedsetup` and `archive` (copy the prepared
    /// data of a shared base folder to a local one and back), `prepare_run`
    /// (docs/compatibility.md).
    #[command(subcommand)]
    Data(DataCommand),
}

/// `milabench sizer` commands.
#[derive(Debug, Subcommand)]
pub enum SizerCommand {
    /// Print the memory model fitted to each benchmark's observations in a scaling file: the
    /// MiB per item of a batch, the MiB at batch size 0, how far the observations are from the
    /// line (root mean square and largest), and with `--capacity` the batch size that fills it.
    Show(SizerShowArgs),
}

/// Arguments of `milabench sizer show`.
#[derive(Debug, Args)]
pub struct SizerShowArgs {
    /// The scaling file (`sizer.save` writes it, `sizer.config` reads it).
    #[arg(value_name = "FILE")]
    pub file: Utf8PathBuf,
    /// GPU memory to fill (`80 GiB`, `81920 MiB`, `40GB`): adds the batch size the model
    /// gives for it.
    #[arg(long, value_name = "SIZE")]
    pub capacity: Option<String>,
}

/// `milabench slurm` commands.
#[derive(Debug, Subcommand)]
pub enum SlurmCommand {
    /// Print, as a system file (YAML), the system `run` builds inside a Slurm allocation
    /// (from SLURM_JOB_NODELIST, SLURM_GPUS_ON_NODE or SLURM_JOB_GPUS, SLURM_CPUS_PER_TASK):
    /// every allocated node, the one this runs on first, other ranks started with `srun`.
    System,
    /// Write a batch script that runs the suite into `<base>/runs/<run-name>/slurm-job.sh`,
    /// submit it with `sbatch --parsable`, and print the job id and the run folder.
    ///
    /// The script runs this milabench's `run` with the same suite options, `--run-name` of
    /// the folder and `--resume` (so submitting it again, by hand or with `--resume`, finishes
    /// what a cancelled or timed-out job left). sbatch options come from the settings file's
    /// profile (`slurm.profiles`), then those after `--`, which win. The job's output goes to
    /// `slurm-<job id>.out` in the run folder. Exit status with `--wait`: the suite's.
    ///
    /// With --per-bench, a job array of one task per benchmark writes into the same folder
    /// (outputs `slurm-<array id>_<task>.out`), then `slurm-report.sh` reports it.
    Submit(Box<SlurmSubmitArgs>),
    /// Not here: the Python tool's sbatch wrapper; `milabench slurm submit` submits a run
    /// (`--wait` follows it, sbatch options after `--`).
    Schedule(python::PythonOnlyArgs),
}

/// Arguments of `milabench slurm submit`.
#[derive(Debug, Args)]
pub struct SlurmSubmitArgs {
    /// Which suite and which benchmarks.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Name of the run folder under `<base>/runs` [env: MILABENCH_RUN_NAME] [default:
    /// <random>.{time}].
    #[arg(long, value_name = "NAME")]
    pub run_name: Option<String>,
    /// Continue the run named by `--run-name` in a new job: the benchmarks already complete in
    /// its folder are left out.
    #[arg(long, requires = "run_name")]
    pub resume: bool,
    /// Observation preset passed to `run` (`smoke`, `normal`, `high`).
    #[arg(long, value_name = "NAME")]
    pub fidelity: Option<String>,
    /// Passed to `run`: skip its preflight.
    #[arg(long)]
    pub no_check: bool,
    /// Passed to `run`: skip its install and prepare.
    #[arg(long)]
    pub no_setup: bool,
    /// The settings file's sbatch profile to use [default: its `slurm.default`].
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Follow the job until it ends: print its output as it lands, then exit with the suite's
    /// exit status (or say why Slurm ended the job). With --per-bench: follow every task, then
    /// print the report of the folder and write it there (`report.txt`, `report.html`); the
    /// exit status combines the tasks'.
    #[arg(long)]
    pub wait: bool,
    /// One job per benchmark of the selection, as a job array (`--array=0-(N-1)%CAP`): each
    /// task runs `run --select <its benchmark> --resume --share-run-folder` into the same run
    /// folder, then one report of the folder (a last job, after every task, writes
    /// `report.txt` and `report.html` there; with --wait, this command does).
    #[arg(long)]
    pub per_bench: bool,
    /// With --per-bench: how many tasks of the array may run at once (`%CAP`).
    #[arg(long, value_name = "CAP", default_value_t = 4, requires = "per_bench",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_parallel: u32,
    /// sbatch options (after `--`), written into the script after the profile's, so they win.
    #[arg(last = true, value_name = "SBATCH_OPTIONS")]
    pub sbatch: Vec<String>,
}

/// Output formats of `check`.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum CheckFormat {
    /// A table.
    #[default]
    Text,
    /// A JSON list of `{name, status, detail, fix}`.
    Json,
}

/// Arguments of `milabench check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Which suite and which benchmarks.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,
    /// GiB of free disk the base folder needs (default: 8 per environment to install, plus 1).
    #[arg(long, value_name = "GIB")]
    pub need_disk: Option<u64>,
}

/// Arguments of `milabench prepare`.
#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// Which suite and which benchmarks.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Python-tool flags of how errors are shown.
    #[command(flatten)]
    pub traces: TraceArgs,
}

/// The Python tool's flags of how errors are shown, accepted by `install` and `prepare`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Accepted for the Python tool's scripts: errors are one paragraph here, installer and
    /// benchmark output goes to the logs.
    #[arg(long, alias = "shortrace")]
    pub shorttrace: bool,
    /// Not here: links to open GitHub issues for failures; refused with that message.
    #[arg(long, hide = true)]
    pub github_issues: bool,
}

/// Arguments of `milabench new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// Name of the benchmark (its folder and its key in a suite).
    pub name: String,
    /// Folder that receives the new benchmark folder.
    #[arg(long, default_value = "benchmarks", value_name = "DIR")]
    pub dest: std::path::PathBuf,
}

/// Installers for `--installer`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum InstallerArg {
    /// uv (bootstrapped into `<base>/tools` when not on PATH).
    Uv,
    /// pip of each environment.
    Pip,
}

/// Accelerator families for `--arch`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ArchArg {
    /// NVIDIA.
    Cuda,
    /// AMD.
    Rocm,
    /// Intel GPUs.
    Xpu,
    /// Intel Gaudi.
    Hpu,
    /// No accelerator.
    Cpu,
}

/// Flags shared by the commands that build or use environments.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// Python interpreter environments are made from [env: MILABENCH_PYTHON] [default: python3
    /// on PATH].
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<Utf8PathBuf>,
    /// Accelerator family [env: MILABENCH_GPU_ARCH] [default: detected from the drivers].
    #[arg(long, value_enum)]
    pub arch: Option<ArchArg>,
}

/// Arguments of `milabench install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Which suite and which benchmarks.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Interpreter and arch.
    #[command(flatten)]
    pub env: EnvArgs,
    /// Rebuild every environment, even those whose inputs did not change (`--update`, the
    /// Python tool's flag to update the packages, does the same here: the pinned files say
    /// which versions).
    #[arg(long, alias = "update")]
    pub force: bool,
    /// Python-tool flags of how errors are shown.
    #[command(flatten)]
    pub traces: TraceArgs,
    /// Requirements variant: `cpu`, `cuda`, `rocm`, `xpu`, `hpu` (pinned files) or `unpinned`
    /// (`requirements.in`) [default: each benchmark's `install_variant`, i.e. the arch].
    #[arg(long, value_name = "VARIANT")]
    pub variant: Option<String>,
    /// Package installer [env: MILABENCH_INSTALLER] [default: uv].
    #[arg(long, value_enum)]
    pub installer: Option<InstallerArg>,
    /// Where packages come from besides the package index.
    #[command(flatten)]
    pub sources: SourceArgs,
    /// Change nothing: say, per group, the interpreter its venv is made from, whether it is up
    /// to date, and which requirements are present, would be added or would be replaced.
    #[arg(long)]
    pub dry_run: bool,
}

/// Where packages come from.
#[derive(Debug, Args)]
pub struct SourceArgs {
    /// A folder of wheels to install from (a wheelhouse made by `milabench bundle`); repeatable.
    #[arg(long, value_name = "DIR")]
    pub find_links: Vec<Utf8PathBuf>,
    /// Install from the `--find-links` folders alone: no package index, no network (uv's
    /// bootstrap included: put uv on PATH, or bundle it).
    #[arg(long, requires = "find_links")]
    pub offline: bool,
}

impl SourceArgs {
    /// The sources these flags name.
    pub fn sources(&self) -> milabench::install::Sources {
        milabench::install::Sources {
            find_links: self.find_links.clone(),
            offline: self.offline,
        }
    }
}

/// Arguments of `milabench bundle`.
#[derive(Debug, Args)]
pub struct BundleArgs {
    /// Which suite and which benchmarks.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Interpreter (whose pip downloads) and arch (whose pinned files and constraints are
    /// used).
    #[command(flatten)]
    pub env: EnvArgs,
    /// The wheelhouse folder (created; files already there are kept).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Utf8PathBuf,
    /// Requirements variant [default: each benchmark's `install_variant`, i.e. the arch].
    #[arg(long, value_name = "VARIANT")]
    pub variant: Option<String>,
    /// The installer the offline machine will use: with uv (the default) the `uv` package is
    /// added, for its bootstrap [env: MILABENCH_INSTALLER].
    #[arg(long, value_enum)]
    pub installer: Option<InstallerArg>,
    /// The offline machine's Python version (`3.11`) [default: this interpreter's]; binary
    /// wheels only.
    #[arg(long, value_name = "X.Y")]
    pub python_version: Option<String>,
    /// The offline machine's platform tag (`manylinux_2_28_x86_64`), repeatable [default:
    /// this machine's]; binary wheels only.
    #[arg(long, value_name = "TAG")]
    pub platform: Vec<String>,
    /// A folder of wheels to download from besides the package index; repeatable.
    #[arg(long, value_name = "DIR")]
    pub find_links: Vec<Utf8PathBuf>,
}

/// Arguments of `milabench pin`.
#[derive(Debug, Args)]
pub struct PinArgs {
    /// Which suite and which benchmarks.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Interpreter and arch.
    #[command(flatten)]
    pub env: EnvArgs,
    /// Variant to pin [default: the arch].
    #[arg(long, value_parser = ["cpu", "cuda", "rocm", "xpu", "hpu"])]
    pub variant: Option<String>,
}

/// Arguments of `milabench dev`.
#[derive(Debug, Args)]
pub struct DevArgs {
    /// Which suite (selection flags narrow the candidates).
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// The benchmark whose environment to enter.
    #[arg(value_name = "BENCH")]
    pub bench: String,
    /// Command to run instead of a shell (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Arguments of `milabench run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Which suite and which benchmarks.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Name of the run folder under `<base>/runs` (`{time}` is replaced by the local time)
    /// [env: MILABENCH_RUN_NAME] [default: <random>.{time}].
    #[arg(long, value_name = "NAME")]
    pub run_name: Option<String>,
    /// Run every benchmark process (prepare and run) inside this image, with the runtime and
    /// settings of the system file's `container` block (podman when it has none); the
    /// orchestrator stays on the host. See docs/containers.md [env: MILABENCH_CONTAINER].
    #[arg(long, value_name = "IMAGE")]
    pub container: Option<String>,
    /// Run each benchmark this many times (tags `R0`, `R1`, ..., each repeat in its own
    /// files; the report pools them by benchmark), each benchmark's repeats in a row (A1 A2 B1
    /// B2) unless `--interleave` [default: 1; with `--resume`, the run's own].
    #[arg(long, value_name = "N")]
    pub repeat: Option<usize>,
    /// Alternate the repeats benchmark by benchmark, the whole suite `--repeat` times over
    /// (A1 B1 A2 B2; the Python tool's order), so that a drift of the machine during the run
    /// lands on every benchmark alike. Compare two runs made this way with `milabench compare`.
    #[arg(long, requires = "repeat")]
    pub interleave: bool,
    /// Print what would run and run nothing: `--dry-run` writes a shell script of the
    /// commands, `--dry-run=json` the plans (per benchmark: its processes with argv, env, cwd
    /// and devices, the files written before them, the time limit) for other tools to read.
    #[arg(long, value_name = "FORMAT", value_enum, num_args = 0..=1, require_equals = true,
          default_missing_value = "shell")]
    pub dry_run: Option<DryRunFormat>,
    /// Extra validation layers judging the run's events as they are recorded (comma-separated:
    /// loss, planning, usage, ... or `all`); error, ensure_rate and version always run. Their
    /// verdicts end the run's report, go to `validation.txt` in the run folder and count in
    /// the exit code, as `milabench replay` would judge the folder.
    #[arg(long, value_delimiter = ',', value_name = "LAYERS")]
    pub validations: Vec<String>,
    /// Continue the run named by `--run-name`: leave out the benchmarks whose processes already
    /// completed in its folder (which must exist). Refused while that run, or a process it
    /// started, still runs.
    #[arg(long, requires = "run_name")]
    pub resume: bool,
    /// With --resume: write into the run folder beside other `run --resume --share-run-folder`
    /// processes that run other benchmarks at once (the tasks of `milabench slurm submit
    /// --per-bench`). The folder's lock is taken shared (a plain `run` of it is refused while
    /// any runs) and each benchmark's own (`.milabench.<bench>.lock`) exclusively; the
    /// validation report is appended to, and `report.html` is left to whoever reports the
    /// whole folder.
    #[arg(long, requires = "resume")]
    pub share_run_folder: bool,
    /// Observation preset, applied like an `--override` after the suite: `smoke` (a few
    /// observations, to check that everything runs), `normal`, `high` (more observations, tighter
    /// figures); read from `fidelity/<NAME>.yaml` beside the suite file.
    #[arg(long, value_name = "NAME")]
    pub fidelity: Option<String>,
    /// Skip the preflight `run` does first (tools, disk, memory, accelerators, every node over
    /// ssh: `milabench check` without the package index); a failed check stops the run.
    #[arg(long)]
    pub no_check: bool,
    /// Skip the set-up `run` does first (`install` of the selected benchmarks' environments,
    /// then `prepare`, either of which failing stops the run); use it when both are done.
    #[arg(long)]
    pub no_setup: bool,
    /// Stop each benchmark once its rate is known to this share (e.g. `1%`): the half-width
    /// of the 95% interval of its pooled rates (batch means) under PCT of their mean at each of
    /// 10 rates in a row, after at least 25 rates per process (stopping at the first estimate
    /// under PCT would often promise more than the report then shows). The benchmark's own
    /// early-stop count stays the most
    /// observations and `max_duration` stays in force; a benchmark stopped this way says so
    /// and records why in its `.data` files.
    #[arg(long, value_name = "PCT", value_parser = positive_percentage)]
    pub precision: Option<f64>,
    /// Run a sweep: one run per value (`KEY=[V1,V2,...]`), the product of every `--sweep`
    /// axis, the first varying fastest. A key starting with `sizer.` or `cpu.` sets that
    /// system option; any other is an `--override` of the suite
    /// (`resnet50.argv.--batch-size=[32,64]`). Runs are named `<run-name>-<key><value>...`
    /// (default run name `sweep.{time}`). Replaces the system file's `multirun` block; finished
    /// runs are recorded (`multirun.cache`) and skipped when the command is run again. See
    /// docs/sweeps.md.
    #[arg(long = "sweep", value_name = "KEY=VALUES")]
    pub sweep: Vec<String>,
    /// Show the live dashboard while the suite runs (progress, ETA, each process's rate, loss
    /// and GPUs, its stderr; `q` closes it and the run goes on) [default: on an interactive
    /// terminal of at least 80x20, plain lines in CI or when stderr is not a terminal].
    /// The Python tool's `--dash long|short|no` is accepted: `no` is `--no-dash`.
    #[arg(long, value_name = "STYLE", value_enum, num_args = 0..=1, default_missing_value = "long",
          overrides_with = "no_dash")]
    pub dash: Option<DashStyle>,
    /// Plain progress lines instead of the dashboard.
    #[arg(long, overrides_with = "dash")]
    pub no_dash: bool,
    /// The Python tool's flag for no terminal display: `--no-dash` [env: MILABENCH_NOTERM].
    #[arg(long)]
    pub noterm: bool,
    /// Accepted for the Python tool's scripts: tracebacks are always shown whole here.
    #[arg(long)]
    pub fulltrace: bool,
    /// Not here: the Python tool's logger plugins (its run folder, validation layers and
    /// dashboard cover what they did); refused with that message.
    #[arg(long, num_args = 1.., hide = true)]
    pub plugin: Vec<String>,
    /// Not here: links to open GitHub issues for failures; refused with that message.
    #[arg(long, hide = true)]
    pub github_issues: bool,
    /// Publishing the run to a milabench dashboard once it is over.
    #[command(flatten)]
    pub publish: PublishArgs,
}

/// `--dash` styles (the Python tool's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DashStyle {
    /// The live dashboard.
    Long,
    /// The live dashboard (one style here).
    Short,
    /// No dashboard: plain lines.
    No,
}

/// `--publish KEY` and `--dashboard-url URL` of `run` and `report`.
#[derive(Debug, Args)]
pub struct PublishArgs {
    /// Once the run (or the report) is complete and written, push its run folders (their
    /// `.data` files) to the milabench dashboard with this push key, as the Python tool does.
    /// The key is never shown. A failed push leaves everything local as it was and exits
    /// non-zero [env: MILABENCH_PUBLISH_KEY].
    #[arg(long, value_name = "KEY", env = env_vars::MILABENCH_PUBLISH_KEY, hide_env = true)]
    pub publish: Option<String>,
    /// The dashboard `--publish` pushes to [env: MILABENCH_DASHBOARD_URL] [default:
    /// https://www.milabench.com].
    #[arg(long, value_name = "URL", env = env_vars::MILABENCH_DASHBOARD_URL, hide_env = true)]
    pub dashboard_url: Option<String>,
}

/// Output formats of `run --dry-run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DryRunFormat {
    /// A shell script that starts the same processes.
    Shell,
    /// The plans as a JSON array.
    Json,
}

/// Output formats of `report`.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum ReportFormat {
    /// The Python milabench layout.
    #[default]
    Text,
    /// Markdown tables.
    Md,
    /// CSV, one row per benchmark and a `(suite)` row.
    Csv,
    /// JSON, NaN as null.
    Json,
    /// One self-contained HTML page (inline SVG plots and CSS, nothing fetched): the headline,
    /// the sortable table, a plot per benchmark, failures and validation.
    Html,
}

/// Arguments of `milabench report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run folders (or `.data` files) to report on; several are pooled.
    #[arg(long, num_args = 1.., required_unless_present = "sweep", value_name = "DIR")]
    pub runs: Vec<String>,
    /// The run folders of a sweep, one per point (in the order given): per benchmark the rate
    /// and GPU memory against the swept value (read from each folder's `sweep.json`), the best
    /// point, and the speed-up and scaling efficiency against the first point, with their 95%
    /// intervals. `--format html` plots them; `csv` gives a row per benchmark and point.
    #[arg(long, num_args = 1.., conflicts_with_all = ["runs", "price"], value_name = "DIR")]
    pub sweep: Vec<String>,
    /// Suite giving the weights and the expected benchmarks (an enabled one absent from the runs
    /// counts as one failed process).
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Price of the machine: adds `Price ($)` and `RPP (Price / Score)`.
    #[arg(long, value_name = "P", value_parser = zero_or_more)]
    pub price: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Write the report to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<Utf8PathBuf>,
    /// Also write the HTML page to FILE (the Python tool's flag; `--format html -o FILE` writes
    /// only the page).
    #[arg(long, value_name = "FILE")]
    pub html: Option<Utf8PathBuf>,
    /// Per benchmark, keep only its most recent run (by the start time of its processes) when
    /// the folders hold several.
    #[arg(long)]
    pub latest: bool,
    /// Per benchmark, leave out its runs where a process failed (a benchmark failed in every
    /// run keeps them, so it still shows).
    #[arg(long)]
    pub filter_failures: bool,
    /// Gather every run folder under each `--runs` folder into one run folder,
    /// `<folder>/<--run-name>` (default: the newest run's name), and report that: the `.data`
    /// files are hard-linked (copied across file systems), the newest run's file winning when
    /// two have one name; `install*` and `prepare*` folders are left out. Unlike the Python
    /// tool, nothing is moved or deleted.
    #[arg(long)]
    pub consolidate: bool,
    /// With `--consolidate`: the name of the gathered run folder.
    #[arg(long, value_name = "NAME", requires = "consolidate")]
    pub run_name: Option<String>,
    /// Not here: the Python tool's comparison with a summary file; `milabench compare` compares
    /// run folders. Refused with that message.
    #[arg(long, value_name = "FILE", hide = true)]
    pub compare: Option<String>,
    /// Not here: the Python tool's GPU comparison table. Refused with that message.
    #[arg(long, hide = true)]
    pub compare_gpus: bool,
    /// Publishing the runs to a milabench dashboard once the report is written.
    #[command(flatten)]
    pub publish: PublishArgs,
}

/// Arguments of `milabench summary`.
#[derive(Debug, Args)]
pub struct SummaryArgs {
    /// Run folders (or `.data` files); several are pooled.
    #[arg(long, num_args = 1.., required_unless_present = "folders", value_name = "DIR")]
    pub runs: Vec<String>,
    /// Run folders given without `--runs` (the Python tool's `analysis summary DIR`).
    #[arg(value_name = "DIR", conflicts_with = "runs", hide = true)]
    pub folders: Vec<String>,
    /// Output format (JSON only).
    #[arg(long, value_enum, default_value_t = SummaryFormat::Json)]
    pub format: SummaryFormat,
    /// Write the summary to this file instead of stdout.
    #[arg(long, short = 'o', alias = "out", value_name = "FILE")]
    pub output: Option<Utf8PathBuf>,
}

/// Output formats of `summary`.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum SummaryFormat {
    /// JSON with four-space indentation.
    #[default]
    Json,
}

/// Output formats of `compare`.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum CompareFormat {
    /// A table per compared run.
    #[default]
    Text,
    /// JSON.
    Json,
    /// One self-contained HTML page: the runs side by side, each change with its interval and
    /// verdict.
    Html,
}

/// Arguments of `milabench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Run folders: the first is the baseline, each other is compared with it.
    #[arg(num_args = 2.., required = true, value_name = "RUN")]
    pub runs: Vec<String>,
    /// Exit with status 1 when a benchmark is judged worse (the 95% interval of its change
    /// leaves out 0, and the change is beyond `--threshold`) and is slower than the baseline by
    /// more than PCT percent (`5` or `5%`); or when it ran in the baseline but is absent,
    /// failed in every process (and not in the baseline too) or measured no rate in a compared
    /// run. A slowdown that cannot be told from the noise never counts, however large.
    #[arg(long, value_name = "PCT", value_parser = percentage)]
    pub fail_above: Option<f64>,
    /// The smallest change that counts (`2%` or `2`): a change is better or worse only when
    /// its 95% interval leaves out 0 and it is larger than this, else "cannot tell". Without
    /// it, the noise floor (how far a second run of the same machine may land): 5%, or what
    /// the repeats of runs made with `--repeat` measure when larger; the output says which.
    /// Given, it also gates the exit status as `--fail-above 0` does: 1 for any worse, absent,
    /// failed (and not in the baseline too) or rateless benchmark.
    #[arg(long, value_name = "PCT", value_parser = percentage)]
    pub threshold: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
    /// Write the comparison to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<Utf8PathBuf>,
}

/// Arguments of `milabench replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// An event file (`.data`) or a folder of them (`--folder PATH`, the Python tool's
    /// spelling, is the same).
    #[arg(value_name = "PATH", required_unless_present = "folder")]
    pub path: Option<Utf8PathBuf>,
    /// The same as PATH.
    #[arg(long, value_name = "PATH", conflicts_with = "path", hide = true)]
    pub folder: Option<Utf8PathBuf>,
    /// Extra validation layers (comma-separated: loss, planning, usage, ... or `all`);
    /// error, ensure_rate and version always run.
    #[arg(long, value_delimiter = ',', value_name = "LAYERS")]
    pub validations: Vec<String>,
    /// GPUs the run had (the planning layer expects one process per GPU for per_gpu plans).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub gpus: usize,
}

/// Which suite to load and which of its benchmarks to keep.
#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// Suite YAML file [env: MILABENCH_CONFIG].
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<Utf8PathBuf>,
    /// System YAML file describing the nodes, arch and options [env: MILABENCH_SYSTEM].
    #[arg(long, value_name = "FILE")]
    pub system: Option<Utf8PathBuf>,
    /// Keep only benchmarks matching one of these names, groups, install groups or tags
    /// (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub select: Vec<String>,
    /// Drop benchmarks matching one of these names, groups, install groups or tags.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub exclude: Vec<String>,
    /// Override a suite value, applied after the suite files: `bench.key.sub=value` (value parsed
    /// as YAML) or a whole YAML mapping such as `{resnet50: {argv: {--batch-size: 64}}}`.
    /// Repeatable.
    #[arg(long = "override", value_name = "OVERRIDE")]
    pub overrides: Vec<String>,
    /// Values the suite's `requires_capabilities` can test, `KEY=VALUE` (comma-separated):
    /// `nodes=2` is `--override '*.capabilities.nodes=2'`.
    #[arg(long, value_delimiter = ',', value_name = "KEY=VALUE")]
    pub capabilities: Vec<String>,
    /// Run the benchmarks with the activated Python environment (`$CONDA_PREFIX`, else
    /// `$VIRTUAL_ENV`): `--python` of its interpreter, so each install group's venv is an
    /// overlay over it that uses what it has (docs/gpu.md).
    #[arg(long)]
    pub use_current_env: bool,
}

impl SuiteArgs {
    /// The selection and overrides these flags ask for: the `--override`s, then one per
    /// `--capabilities` entry.
    pub fn selection(&self) -> milabench::Selection {
        let mut overrides = self.overrides.clone();
        overrides.extend(
            self.capabilities
                .iter()
                .map(|entry| format!("*.capabilities.{entry}")),
        );
        milabench::Selection {
            overrides,
            select: self.select.clone(),
            exclude: self.exclude.clone(),
            ..milabench::Selection::default()
        }
    }
}

/// Output formats of `resolve`.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum StructuredFormat {
    /// YAML, keys in suite order.
    #[default]
    Yaml,
    /// JSON, keys in suite order.
    Json,
}

/// Arguments of `milabench resolve`.
#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// Which suite and which benchmarks.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = StructuredFormat::Yaml)]
    pub format: StructuredFormat,
    /// Hide disabled benchmarks (by default they are shown with `enabled: false`).
    #[arg(long)]
    pub enabled_only: bool,
    /// Include the resolved `system` block in every benchmark (hidden by default: it is the
    /// same for all of them).
    #[arg(long)]
    pub with_system: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}

/// Output formats of `sysinfo`.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum SysinfoFormat {
    /// One fact per line.
    #[default]
    Text,
    /// JSON with every detail.
    Json,
}

/// Arguments of `milabench sysinfo`.
#[derive(Debug, Args)]
pub struct SysinfoArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = SysinfoFormat::Text)]
    pub format: SysinfoFormat,
}

/// A share in percent above 0, written `1%` or `1`.
fn positive_percentage(text: &str) -> Result<f64, String> {
    match percentage(text) {
        Ok(x) if x > 0.0 => Ok(x),
        _ => Err(format!(
            "`{text}` is not a percentage above 0; give e.g. 1% or 0.5%"
        )),
    }
}

/// A share in percent, written `2%` or `2`.
fn percentage(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text);
    zero_or_more(number)
        .map_err(|_| format!("`{text}` is not a percentage of 0 or more; give e.g. 2% or 0.5%"))
}

/// A number of 0 or more (a price, a percentage): NaN, infinities and negative numbers are
/// refused.
fn zero_or_more(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!(
            "`{text}` is not a number of 0 or more; give e.g. 5 or 2.5"
        )),
    }
}

// ---- Results database: `db import|list|export` and `history` ----

/// Scenarios of `milabench load`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadScenario {
    /// Every request at once: throughput.
    Offline,
    /// Poisson arrivals at `--rate`.
    Server,
    /// `--concurrency` requests in flight.
    Concurrency,
    /// Rates stepped from `--rate` until the SLO breaks.
    Sweep,
    /// The highest rate between `--rate` and `--max-rate` whose `--slo` p99 bounds hold:
    /// `--sweep-steps` bisections, searched `--repeats` times for a 95% interval.
    SloSearch,
    /// The requests of `--trace`, each at its time.
    Replay,
}

/// OpenAI routes of `milabench load`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadApi {
    /// `/v1/completions`.
    Completions,
    /// `/v1/chat/completions`.
    Chat,
}

/// Arguments of `milabench load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The server's base URL, `http://HOST:PORT` or `https://HOST[:PORT]` (a trailing `/v1`
    /// is accepted); not given when a server command follows `--`.
    #[arg(long, value_name = "URL", required_unless_present = "serve")]
    pub endpoint: Option<String>,
    /// Also trust the certificate authorities of this PEM file for an `https` endpoint (a
    /// private or self-signed certificate); the system's are always trusted.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<Utf8PathBuf>,
    /// The `model` of every request.
    #[arg(long, value_name = "NAME")]
    pub model: String,
    /// The route.
    #[arg(long, value_enum, default_value_t = LoadApi::Completions)]
    pub api: LoadApi,
    /// How requests are released.
    #[arg(long, value_enum, default_value_t = LoadScenario::Server)]
    pub scenario: LoadScenario,
    /// Requests per second (server), the first rate (sweep), the lowest rate (SLO search).
    #[arg(long, default_value_t = 10.0, value_parser = above_zero)]
    pub rate: f64,
    /// The highest rate an SLO search tries, requests per second.
    #[arg(long, value_parser = above_zero)]
    pub max_rate: Option<f64>,
    /// Independent searches of an SLO search (each with the next seed): their spread gives
    /// the 95% interval of the rate found.
    #[arg(long, default_value_t = 3, value_parser = at_least_one)]
    pub repeats: usize,
    /// Shape of the gamma distribution of the gaps between server arrivals, their mean kept
    /// at `1 / rate`: 1 is Poisson, below 1 burstier, above 1 more even.
    #[arg(long, default_value_t = 1.0, value_parser = above_zero)]
    pub burstiness: f64,
    /// How long the rate of server arrivals takes to rise linearly from 0 to `--rate`.
    #[arg(long, default_value = "0s", value_parser = load_duration, allow_hyphen_values = true)]
    pub ramp_up: std::time::Duration,
    /// Requests in flight (concurrency).
    #[arg(long, default_value_t = 8, value_parser = at_least_one)]
    pub concurrency: usize,
    /// Ratio of successive sweep rates.
    #[arg(long, default_value_t = 1.5, value_parser = above_one)]
    pub sweep_factor: f64,
    /// Most rates a sweep tries; the bisections of an SLO search.
    #[arg(long, default_value_t = 8, value_parser = at_least_one)]
    pub sweep_steps: usize,
    /// How long requests are released (each sweep step): `60s`, `2m`, ...
    #[arg(long, default_value = "60s", value_parser = load_duration, allow_hyphen_values = true)]
    pub duration: std::time::Duration,
    /// Most requests (per sweep step); offline sends exactly this many [default: 100 offline].
    #[arg(long, value_parser = at_least_one)]
    pub requests: Option<usize>,
    /// Input tokens of synthetic prompts: `N`, `uniform:LOW:HIGH` or `normal:MEAN:STD`.
    #[arg(long, default_value = "128", value_name = "DIST")]
    pub input_tokens: String,
    /// Output tokens (`max_tokens`) of synthetic prompts, as `--input-tokens`.
    #[arg(long, default_value = "128", value_name = "DIST")]
    pub output_tokens: String,
    /// A JSON-lines file of prompts, `{"prompt": "...", "max_tokens": N}` per line, or a
    /// ShareGPT-format JSON list of conversations (first human turn the prompt, the answer's
    /// words its `max_tokens`), used in turn instead of synthetic ones.
    #[arg(long, value_name = "FILE")]
    pub prompts: Option<Utf8PathBuf>,
    /// Start each synthetic prompt with one of `--prefixes` shared prefixes of this many words
    /// (a server's prefix cache can reuse them); `--input-tokens` is the length of the rest.
    #[arg(long, value_name = "N", conflicts_with_all = ["prompts", "trace", "turns"])]
    pub prefix_tokens: Option<u32>,
    /// How many different shared prefixes (`--prefix-tokens`), used in turn.
    #[arg(long, default_value_t = 1, value_parser = at_least_one, requires = "prefix_tokens")]
    pub prefixes: usize,
    /// Sessions of this many turns: each turn's prompt carries the conversation so far (earlier
    /// questions, each with a stand-in answer of its `--output-tokens`) and a new question of
    /// `--input-tokens` words.
    #[arg(long, value_name = "N", value_parser = at_least_one, conflicts_with_all = ["prompts", "trace"])]
    pub turns: Option<usize>,
    /// A trace to replay with `--scenario replay`: JSON lines of `{"timestamp": MS,
    /// "input_length": N, "output_length": N}`.
    #[arg(long, value_name = "FILE", conflicts_with = "prompts")]
    pub trace: Option<Utf8PathBuf>,
    /// `max_tokens` of file prompts without one.
    #[arg(long, default_value_t = 128)]
    pub max_tokens: u32,
    /// Ask the server to ignore end-of-sequence tokens (`ignore_eos`), so every answer is
    /// `max_tokens` long.
    #[arg(long)]
    pub ignore_eos: bool,
    /// Longest a request may take, streaming included; a stalled stream fails after it.
    #[arg(long, default_value = "120s", value_parser = load_duration, allow_hyphen_values = true)]
    pub timeout: std::time::Duration,
    /// Seed of the prompts and of the arrival schedule.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Most connections open at once.
    #[arg(long, default_value_t = 1024, value_parser = at_least_one)]
    pub max_connections: usize,
    /// Latency bounds for goodput and for the sweep's verdict: `ttft=500ms,tpot=50ms[,e2e=10s]`.
    #[arg(long, value_name = "BOUNDS", allow_hyphen_values = true)]
    pub slo: Option<String>,
    /// Write the results as `<DIR>/<NAME>.data` (the events of a run folder).
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<Utf8PathBuf>,
    /// The benchmark name in `--run-dir`.
    #[arg(long, default_value = "load")]
    pub name: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LoadFormat::Text)]
    pub format: LoadFormat,
    /// Write the results as data events on the benchmark data channel (`DATA_FD`) instead
    /// of a table: how a suite's serving benchmark reports to the orchestrator.
    #[arg(long, conflicts_with_all = ["run_dir", "format"])]
    pub emit_events: bool,
    /// The path that answers with success once the started server is ready.
    #[arg(
        long,
        default_value = "/health",
        value_name = "PATH",
        requires = "serve"
    )]
    pub health: String,
    /// How long the started server may take to become ready (loading a model can take
    /// minutes).
    #[arg(
        long,
        default_value = "600s",
        value_parser = load_duration,
        requires = "serve",
        allow_hyphen_values = true
    )]
    pub ready_timeout: std::time::Duration,
    /// Append the started server's output to this file [default: this command's own output].
    #[arg(long, value_name = "FILE", requires = "serve")]
    pub server_log: Option<Utf8PathBuf>,
    /// The server to start for the run, and its arguments (after `--`).
    #[arg(last = true, value_name = "SERVER")]
    pub serve: Vec<String>,
}

/// Output formats of `milabench load`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadFormat {
    /// A table of latencies, then throughputs, goodput, arrivals and errors.
    Text,
    /// The summaries (every figure with its interval), the failure and the sweep's verdict.
    Json,
}

/// A number above 0 (a request rate).
fn above_zero(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!(
            "`{text}` is not a number above 0; give e.g. 20 or 0.5"
        )),
    }
}

/// A number above 1 (the ratio of a sweep's successive rates).
fn above_one(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 1.0 => Ok(x),
        _ => Err(format!(
            "`{text}` is not a number above 1; give e.g. 2 or 1.5"
        )),
    }
}

/// A whole number of 1 or more (requests, connections, steps).
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "`{text}` is not a whole number of 1 or more; give e.g. 8"
        )),
    }
}

/// A duration of `milabench load`: `500ms`, `60s`, `2m`; its flags take values that start with
/// `-` so that `-1s` is said to be negative rather than taken for a flag.
fn load_duration(text: &str) -> Result<std::time::Duration, String> {
    milabench::serving::parse_duration(text)
}

/// Output formats of the results-database commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum TableFormat {
    /// An aligned table.
    #[default]
    Text,
    /// JSON: an array of objects.
    Json,
    /// CSV with a header row.
    Csv,
    /// A Markdown table.
    Md,
}

/// `milabench db` commands.
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Load run folders (written by this tool or by the Python milabench) into the database,
    /// with the statistics `milabench report` computes on them. Importing a folder again
    /// changes nothing unless its `.data` files grew (then its run is replaced); a folder
    /// whose files are shorter than when imported, or another folder of a run name already
    /// stored, is refused (give it a `--namespace` of its own).
    Import(DbImportArgs),
    /// List the runs of the database: date, system, score, status (`incomplete`: still
    /// running, or killed).
    List(DbListArgs),
    /// Write one run back as JSON lines: the run, its statistics, weights, processes and
    /// metrics, one row per line with its `kind`.
    Export(DbExportArgs),
}

/// Arguments of `milabench db import`.
#[derive(Debug, Args)]
pub struct DbImportArgs {
    /// Run folders to import.
    #[arg(required = true, value_name = "RUN_FOLDER")]
    pub folders: Vec<Utf8PathBuf>,
    /// Namespace of the runs (runs are unique by namespace and name).
    #[arg(long, default_value = "", value_name = "NAME")]
    pub namespace: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    pub format: TableFormat,
}

/// Arguments of `milabench db list`.
#[derive(Debug, Args)]
pub struct DbListArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    pub format: TableFormat,
}

/// Arguments of `milabench db export`.
#[derive(Debug, Args)]
pub struct DbExportArgs {
    /// Name of the run.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Write to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<Utf8PathBuf>,
}

/// Arguments of `milabench history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only this benchmark.
    #[arg(long, value_name = "NAME")]
    pub bench: Option<String>,
    /// Only GPUs whose model contains this text (any case), e.g. `H100`.
    #[arg(long, value_name = "MODEL")]
    pub gpu: Option<String>,
    /// Only runs started on or after this day (`2024-06-01`, UTC) or time (RFC 3339).
    #[arg(long, value_name = "DATE", value_parser = since_date)]
    pub since: Option<f64>,
    /// Only the runs of this sweep: the `--run-name` of a `run --sweep` without its `{time}`
    /// (`sweep` without one), or the name of the system file of a `multirun` block without its
    /// extension. Alone (no `--bench`, no `--point`), lists the sweep's runs with their points.
    #[arg(long, value_name = "NAME")]
    pub sweep: Option<String>,
    /// Only runs of a sweep at this point, `KEY=VALUE` as the sweep set it
    /// (`resnet50.argv.--batch-size=64`, `sizer.mult=2`); repeated, the runs with every one.
    /// Each run is compared with the previous run at the same point.
    #[arg(long, value_name = "KEY=VALUE", value_parser = point_setting)]
    pub point: Vec<String>,
    /// The smallest change that counts (e.g. `2%`): a change against the previous comparable
    /// run is better or worse only when its 95% interval leaves out 0 and it is larger than
    /// this, else "cannot tell" (as `compare` judges); 5% without it, the default noise floor.
    /// Given, it also gates the exit status: 1 when the latest run of a benchmark shown is
    /// worse than the one before it.
    #[arg(long, value_name = "PCT", value_parser = percentage)]
    pub threshold: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    pub format: TableFormat,
}

/// `--point`: a `KEY=VALUE` setting of a sweep.
fn point_setting(text: &str) -> Result<String, String> {
    match text.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() => Ok(text.trim().to_owned()),
        _ => Err(format!(
            "`{text}` is not a setting of a sweep; give KEY=VALUE as the sweep set it, e.g. resnet50.argv.--batch-size=64 (`milabench history --sweep NAME` lists each run's point)"
        )),
    }
}

/// `--since`: a day (UTC midnight) or an RFC 3339 time, as seconds since the epoch.
fn since_date(text: &str) -> Result<f64, String> {
    let text = text.trim();
    if let Ok(ts) = text.parse::<jiff::Timestamp>() {
        return Ok(ts.as_microsecond() as f64 / 1e6);
    }
    text.parse::<jiff::civil::Date>()
        .ok()
        .and_then(|d| d.to_zoned(jiff::tz::TimeZone::UTC).ok())
        .map(|z| z.timestamp().as_second() as f64)
        .ok_or_else(|| {
            format!("`{text}` is not a date; give a day such as 2024-06-01 or a time such as 2024-06-01T12:00:00Z")
        })
}
