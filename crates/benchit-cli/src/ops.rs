//! `benchit ops`: operator microbenchmarks from PARAM-style JSON configs.

use std::time::Duration;

use camino::Utf8PathBuf;
use clap::Args;
use milabench_exec::{ExitCode, Interrupt};
use milabench_vocab::TextTable;

use crate::{Format, worker_command};
use benchit::ops::nsight::{NsightOptions, NsightTool};
use benchit::ops::stats::{PassSummary, RunStats, summarize};
use benchit::ops::{self, ExecMode, ExpandedRun, OpsConfig, Outcome, RunOptions, RunRecord};

/// Arguments of `benchit ops`.
#[derive(Debug, Args)]
#[command(
    about = "Run operator microbenchmarks from a PARAM-style JSON config",
    long_about = "Run operator microbenchmarks from a PARAM-style JSON config.\n\n\
        The config maps operator names (torch.add, torch.nn.Linear, aten::mm, ...) to build and \
        input argument specs; `__range__` and `__copy__` expand into one run per combination, \
        with PARAM's ids `<config>|<build>|<input>` (range ids `<variant>_<combination>`). Each \
        run is timed by a Python worker (torch), `-w` warm-up then `-i` measured iterations. \
        A run that cannot work (unknown operator or dtype, negative size, reversed value_range, \
        an operator raising) is recorded as failed with its reason and the others run.\n\n\
        Results go to `<prefix>_<pid>_<time>.json` as JSON lines in PARAM's record shape (a setup \
        line, one line per run, a closing `finish_time` line always written); stdout gets a table \
        of median and p90 times per id.\n\n\
        Exit status: 0 all runs measured; 1 some runs failed, or the run ended early (the worker \
        could not start, a timeout, a failed install of the Python environment); 2 bad input; \
        3 a file or folder the machine would not read or write (the output file on a full disk); \
        130 interrupted.",
    after_help = "Examples:\n  \
        benchit ops -c benchmarks/opbench/configs/simple_add.json -w 5 -i 20\n  \
        benchit ops -c mm_range.json --list\n  \
        benchit ops -c mm_range.json -r 'torch.mm|0|0|0_3' -s 'torch.mm|0|0|1_2'"
)]
pub(crate) struct OpsArgs {
    /// The JSON config.
    #[arg(short, long, value_name = "CONFIG.json")]
    config: Utf8PathBuf,
    /// Warm-up iterations per run (timed, recorded apart).
    #[arg(short, long, default_value_t = 1, value_name = "N")]
    warmup: u32,
    /// Measured iterations per run. `-w 0 -i 0` records the runs without measuring them.
    #[arg(
        short = 'i',
        long = "iterations",
        alias = "iteration",
        default_value_t = 1,
        value_name = "N"
    )]
    iterations: u32,
    /// Also time the backward pass (gradient creation is not timed).
    #[arg(short, long)]
    backward: bool,
    /// torch device: cpu, cuda, cuda:1, ...
    #[arg(short, long, default_value = "cpu")]
    device: String,
    /// Output files are PREFIX_<pid>_<unix time>.json (plus _trace.json and _worker.log).
    #[arg(
        short = 'o',
        long,
        default_value = "benchmark_result",
        value_name = "PREFIX"
    )]
    output_prefix: String,
    /// Start at this id, inclusive: `op|config|build|input`, e.g. `torch.add|0|0|0_3`.
    #[arg(short, long, value_name = "ID")]
    resume_id: Option<String>,
    /// Stop before this id (exclusive).
    #[arg(short, long = "stop-id", alias = "stop_id", value_name = "ID")]
    stop_id: Option<String>,
    /// Append the records to PREFIX.json (no pid or time in its name, so that every run with
    /// this prefix adds to one file) instead of writing a new PREFIX_<pid>_<unix time>.json.
    #[arg(short, long)]
    append: bool,
    /// How iterations are timed; the modes differ on CUDA only.
    #[arg(long, value_enum, default_value = "discrete")]
    exec_mode: ExecMode,
    /// Write a torch profiler (Kineto) trace: PREFIX_<pid>_<unix time>_trace.json.
    #[arg(short, long)]
    profile: bool,
    /// Print the expanded ids (with -r/-s applied) and exit; needs no Python.
    #[arg(long)]
    list: bool,
    /// Output format on stdout: text (median and p90 per id, or the ids with --list) or json.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Seconds one worker process may live.
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    timeout: u64,
    /// The GPU's L2 cache between iterations in discrete mode: `on` leaves it warm, `off` (or
    /// the bare flag) empties it before each timed call, outside the timing. CUDA only.
    #[arg(
        long,
        value_enum,
        num_args = 0..=1,
        default_value = "on",
        default_missing_value = "off",
        value_name = "on|off"
    )]
    cuda_l2_cache: Switch,
    /// Profile the measured runs with Nsight Compute, in batches of --run-batch-size runs of
    /// one operator: a CSV log per batch (PREFIX_<pid>_<time>_nsight/batch_<n>_ncu.log). CUDA
    /// only.
    #[arg(long, conflicts_with = "nsys")]
    ncu: bool,
    /// The Nsight Compute program.
    #[arg(long, default_value = "ncu", value_name = "PATH")]
    ncu_bin: Utf8PathBuf,
    /// A file of options added to Nsight Compute's command line (metrics, sections...).
    #[arg(long, value_name = "FILE")]
    ncu_args_file: Option<Utf8PathBuf>,
    /// Warm-up iterations of each run profiled by Nsight Compute.
    #[arg(long, default_value_t = 5, value_name = "N")]
    ncu_warmup: u32,
    /// Measured iterations of each run profiled by Nsight Compute.
    #[arg(long, default_value_t = 1, value_name = "N")]
    ncu_iteration: u32,
    /// Profile the measured runs with Nsight Systems, in batches: a report per batch
    /// (PREFIX_<pid>_<time>_nsight/batch_<n>_nsys.nsys-rep). CUDA only.
    #[arg(long)]
    nsys: bool,
    /// The Nsight Systems program.
    #[arg(long, default_value = "nsys", value_name = "PATH")]
    nsys_bin: Utf8PathBuf,
    /// A file of options added to `nsys profile`'s command line.
    #[arg(long, value_name = "FILE")]
    nsys_args_file: Option<Utf8PathBuf>,
    /// Warm-up iterations of each run profiled by Nsight Systems.
    #[arg(long, default_value_t = 5, value_name = "N")]
    nsys_warmup: u32,
    /// Measured iterations of each run profiled by Nsight Systems.
    #[arg(long, default_value_t = 10, value_name = "N")]
    nsys_iteration: u32,
    /// Runs per profiled batch (--ncu, --nsys).
    #[arg(long, default_value_t = 50, value_name = "N")]
    run_batch_size: usize,
    /// CUDA_VISIBLE_DEVICES of the profiled batches [default: the GPU of --device].
    #[arg(long, value_name = "GPU")]
    batch_cuda_device: Option<String>,
    /// The command Nsight starts for a batch; the batch's config and options are appended
    /// [default: this benchit's `ops`].
    #[arg(long, value_name = "COMMAND")]
    batch_cmd: Option<String>,
    /// What goes to standard error: `debug` adds the worker's and Nsight's command lines,
    /// `info` a line per run, `warning` and above only problems.
    #[arg(short = 'l', long, value_enum, default_value = "info")]
    log_level: LogLevel,
    /// Wrap each measured pass in the NVTX range Nsight profiles (set on profiled batches).
    #[arg(long, hide = true)]
    nvtx: bool,
}

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Switch {
    /// On.
    On,
    /// Off.
    Off,
}

/// How much `benchit ops` says on standard error (PARAM's logging levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
enum LogLevel {
    /// Also the command lines started.
    Debug,
    /// A line per run.
    Info,
    /// Problems only.
    Warning,
    /// Problems only.
    Error,
    /// Problems only.
    Critical,
}

/// The Nsight options of `args`, checked: CUDA only, the program found, the extra options
/// read. `None` without --ncu or --nsys.
fn nsight_options(args: &OpsArgs) -> crate::errors::Result<Option<NsightOptions>> {
    let (tool, bin, args_file, warmup, iterations) = if args.ncu {
        (
            NsightTool::Compute,
            &args.ncu_bin,
            &args.ncu_args_file,
            args.ncu_warmup,
            args.ncu_iteration,
        )
    } else if args.nsys {
        (
            NsightTool::Systems,
            &args.nsys_bin,
            &args.nsys_args_file,
            args.nsys_warmup,
            args.nsys_iteration,
        )
    } else {
        return Ok(None);
    };
    let flag = tool.name();
    if !args.device.starts_with("cuda") {
        crate::errors::bail!(
            "--{flag} profiles CUDA kernels, and the device is `{}`\n  fix: run on a GPU with --device cuda, or leave out --{flag}",
            args.device
        );
    }
    if args.run_batch_size == 0 {
        crate::errors::bail!("--run-batch-size must be at least 1");
    }
    let found = if bin.as_str().contains('/') {
        bin.is_file()
    } else {
        milabench_env::find_on_path(bin.as_str(), std::env::var("PATH").ok().as_deref()).is_some()
    };
    if !found {
        crate::errors::bail!(
            "the Nsight program `{bin}` was not found\n  fix: install Nsight ({flag} comes with the CUDA toolkit) or name it with --{flag}-bin PATH"
        );
    }
    let extra_args = match args_file {
        None => Vec::new(),
        Some(file) => {
            let text = fs_err::read_to_string(file)?;
            shlex::split(&text).ok_or_else(|| {
                crate::errors::usage!(
                    "{file}: unbalanced quotes\n  fix: quote each option as a shell would"
                )
            })?
        }
    };
    let batch_cmd = match &args.batch_cmd {
        Some(line) => shlex::split(line)
            .filter(|words| !words.is_empty())
            .ok_or_else(|| crate::errors::usage!("--batch-cmd `{line}` is not a command line"))?,
        None => vec![std::env::current_exe()?.display().to_string(), "ops".into()],
    };
    let cuda_device = args
        .batch_cuda_device
        .clone()
        .unwrap_or_else(|| args.device.strip_prefix("cuda:").unwrap_or("0").to_owned());
    Ok(Some(NsightOptions {
        tool,
        bin: bin.clone(),
        extra_args,
        warmup,
        iterations,
        batch_size: args.run_batch_size,
        cuda_device,
        batch_cmd,
    }))
}

/// Runs `benchit ops`; returns the exit status.
pub(crate) fn run(args: &OpsArgs) -> crate::errors::Result<ExitCode> {
    let config = OpsConfig::load(&args.config)?;
    let range = ops::select(&config, args.resume_id.as_deref(), args.stop_id.as_deref())?;
    let selected = ops::expand(&config).skip(range.start).take(range.len());
    if args.list {
        print_list(selected, args.format)?;
        return Ok(ExitCode::Success);
    }
    if range.len() > ops::config::MAX_RUNS_AT_ONCE {
        crate::errors::bail!(
            "the selection holds {} runs, more than the {} one `benchit ops` run keeps in memory\n  fix: run it in parts with --resume-id and --stop-id (`benchit ops --list` prints the ids), or use larger range steps",
            range.len(),
            ops::config::MAX_RUNS_AT_ONCE
        );
    }
    let nsight = nsight_options(args)?;
    if args.cuda_l2_cache == Switch::Off && !args.device.starts_with("cuda") {
        warn(
            args,
            "--cuda-l2-cache off has no effect off CUDA: the CPU's caches are left as they are",
        );
    }
    let runs: Vec<ExpandedRun> = selected.collect();
    let runs = runs.as_slice();
    let options = RunOptions {
        config_file: args.config.clone(),
        device: args.device.clone(),
        warmup: args.warmup,
        iterations: args.iterations,
        backward: args.backward,
        exec_mode: args.exec_mode,
        flush_l2: args.cuda_l2_cache == Switch::Off,
        nvtx: args.nvtx,
        nsight,
        profile: args.profile,
        output_prefix: args.output_prefix.clone(),
        append: args.append,
        resume_id: args.resume_id.clone(),
        stop_id: args.stop_id.clone(),
        timeout: Duration::from_secs(args.timeout),
    };
    // First, so that Ctrl-C during the first build of the environment is honoured (see
    // `models::run`).
    let interrupt = Interrupt::new();
    let ctrl_c = milabench_exec::install_ctrl_c(interrupt.clone())?;
    let worker = if options.is_dry_run() || runs.iter().all(|r| r.spec.is_err()) {
        None
    } else {
        let arch = if args.device.starts_with("cuda") {
            "cuda"
        } else {
            "cpu"
        };
        Some(worker_command(arch, None, &[])?)
    };
    if args.log_level == LogLevel::Debug {
        #[allow(clippy::print_stderr)]
        if let Some(worker) = &worker {
            eprintln!(
                "debug: worker: {} {} ops",
                worker.program,
                worker.args.join(" ")
            );
        }
        if let Some(nsight) = &options.nsight {
            let line = nsight.command(
                "<nsight>/batch_<n>",
                "<nsight>/batch_<n>.json".into(),
                &options,
            );
            #[allow(clippy::print_stderr)]
            {
                eprintln!("debug: each batch: {}", line.join(" "));
            }
        }
    }
    let total = runs.len();
    let mut done = 0;
    let summary = ops::run(
        runs,
        &options,
        worker.as_deref(),
        &interrupt,
        &mut |record| {
            done += 1;
            if args.log_level <= LogLevel::Info {
                progress(done, total, record);
            }
        },
    );
    ctrl_c.uninstall();
    let summary = summary?;
    print_summary(&summary, args.format)?;
    #[allow(clippy::print_stderr)]
    {
        eprintln!("wrote {}", summary.output);
        if let Some(trace) = &summary.trace_file {
            eprintln!("profiler trace: {trace}");
        }
        if let Some(error) = &summary.error {
            eprintln!("error: {error}");
        }
        if summary.worker_log.is_file() {
            eprintln!("worker log: {}", summary.worker_log);
        }
    }
    let failed = summary
        .records
        .iter()
        .any(|r| matches!(r.outcome, Outcome::Failed(_)));
    Ok(if summary.interrupted {
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "interrupted: {} of {total} runs recorded",
                summary.records.len()
            );
        }
        ExitCode::Interrupted
    } else if summary.error.is_some() || failed {
        ExitCode::BenchmarkFailures
    } else {
        ExitCode::Success
    })
}

/// A warning on standard error, unless --log-level is above warnings.
#[allow(clippy::print_stderr)]
fn warn(args: &OpsArgs, message: &str) {
    if args.log_level <= LogLevel::Warning {
        eprintln!("warning: {message}");
    }
}

#[allow(clippy::print_stderr)]
fn progress(done: usize, total: usize, record: &RunRecord) {
    let what = match &record.outcome {
        Outcome::Measured(_) => "ok".to_string(),
        Outcome::DryRun => "listed".to_string(),
        Outcome::Failed(reason) => format!("FAILED: {reason}"),
    };
    eprintln!("[{done}/{total}] {}|{} {what}", record.op_name, record.id);
}

/// Prints the ids as they are expanded, one at a time: a list of millions of ids holds one run
/// in memory. The JSON form is the pretty-printed array of `{op_name, id, config, problem}`.
#[allow(clippy::print_stdout)]
fn print_list(
    runs: impl Iterator<Item = ExpandedRun>,
    format: Format,
) -> crate::errors::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if format == Format::Json {
        write!(out, "[")?;
    }
    let mut first = true;
    for run in runs {
        match format {
            Format::Text => match &run.spec {
                Ok(_) => writeln!(out, "{}", run.full_id())?,
                Err(problem) => writeln!(out, "{}  (will fail: {problem})", run.full_id())?,
            },
            Format::Json => {
                let item = serde_json::json!({
                    "op_name": run.op_name,
                    "id": run.id.to_string(),
                    "config": run.config,
                    "problem": run.spec.as_ref().err(),
                });
                let text = serde_json::to_string_pretty(&item)?;
                write!(out, "{}\n  ", if first { "" } else { "," })?;
                write!(out, "{}", text.replace('\n', "\n  "))?;
                first = false;
            }
        }
    }
    if format == Format::Json {
        writeln!(out, "{}]", if first { "" } else { "\n" })?;
    }
    Ok(out.flush()?)
}

fn print_summary(summary: &ops::RunSummary, format: Format) -> crate::errors::Result<()> {
    use std::io::Write as _;
    let rows = summarize(&summary.records);
    let text = match format {
        Format::Text => table(&rows),
        Format::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "output": summary.output,
                "trace_file": summary.trace_file,
                "interrupted": summary.interrupted,
                "error": summary.error,
                "runs": rows,
            }))? + "\n"
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    Ok(out.flush()?)
}

/// The text table: one line per run and pass, with median and p90 in milliseconds; failures
/// show their reason.
fn table(rows: &[RunStats]) -> String {
    let mut table =
        TextTable::new(["operator", "id", "pass", "n", "median ms", "p90 ms"]).right_aligned(3..6);
    for row in rows {
        let mut pass = |name: &str, summary: &PassSummary| {
            table.row([
                row.op_name.clone(),
                row.id.clone(),
                name.to_owned(),
                summary.n.to_string(),
                format!("{:.4}", summary.median_ms),
                format!("{:.4}", summary.p90_ms),
            ]);
        };
        if let Some(forward) = &row.forward {
            pass("forward", forward);
        }
        if let Some(backward) = &row.backward {
            pass("backward", backward);
        }
        let note = match (&row.error, row.status) {
            (Some(error), _) => Some(format!("FAILED: {error}")),
            (None, "dry-run") => Some("not measured (-w 0 -i 0)".to_string()),
            (None, _) if row.forward.is_none() => Some("no measured iteration (-i 0)".to_string()),
            _ => None,
        };
        if let Some(note) = note {
            table.spanning_row([row.op_name.clone(), row.id.clone(), note]);
        }
    }
    table.render()
}
