//! Nsight Compute and Nsight Systems over batches of runs (PARAM's `--ncu` and `--nsys`).
//!
//! Each run is first measured as usual; the measured runs are then queued, and every
//! `batch_size` runs of one operator (and at the end) the queue is profiled in one child
//! process: the Nsight tool starting the batch command (by default this `benchit ops`) on a
//! config holding exactly the queued runs, with the Nsight warm-up and iteration counts, on the
//! GPU `cuda_device` (its `CUDA_VISIBLE_DEVICES`). The measured passes of that child carry the
//! NVTX range [`NVTX_RANGE`], which Nsight Compute is told to profile. The batch's files go into
//! `<output>_nsight/` (`batch_<n>.json` its config, `batch_<n>_ncu.log` or
//! `batch_<n>_nsys.nsys-rep` the tool's output, `batch_<n>_batch_*.json` the child's records);
//! a record in PARAM's shape (`ncu_file`/`nsys_file`, the command, the batch config, the first
//! and last run ids) follows the batch's runs in the output file.

use camino::{Utf8Path, Utf8PathBuf};
use serde_json::{Map, Value, json};

use super::expand::ExpandedRun;
use super::runner::RunOptions;

/// The NVTX range around each measured pass of a profiled batch (the worker's name for it).
pub const NVTX_RANGE: &str = "benchit_measure";

/// The input data generator every config names (the only one there is).
const GENERATOR: &str = "PyTorch:DefaultDataGenerator";

/// Which Nsight tool profiles the batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NsightTool {
    /// Nsight Compute (`ncu`): kernel metrics, as CSV in a log file.
    Compute,
    /// Nsight Systems (`nsys profile`): a timeline report.
    Systems,
}

impl NsightTool {
    /// The name of the tool's program and of its option (`ncu`, `nsys`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Compute => "ncu",
            Self::Systems => "nsys",
        }
    }
}

/// How the batches are profiled.
#[derive(Debug, Clone)]
pub struct NsightOptions {
    /// The tool.
    pub tool: NsightTool,
    /// Its program.
    pub bin: Utf8PathBuf,
    /// Options added to its command line (read from `--ncu-args-file`/`--nsys-args-file`).
    pub extra_args: Vec<String>,
    /// Warm-up iterations of each run in a profiled batch.
    pub warmup: u32,
    /// Measured iterations of each run in a profiled batch.
    pub iterations: u32,
    /// Runs per profiled batch.
    pub batch_size: usize,
    /// `CUDA_VISIBLE_DEVICES` of the profiled child.
    pub cuda_device: String,
    /// The command the tool starts; the batch's options are appended to it.
    pub batch_cmd: Vec<String>,
}

impl NsightOptions {
    /// The file the tool writes for the batch whose files start with `stem`.
    pub fn output_file(&self, stem: &str) -> String {
        match self.tool {
            NsightTool::Compute => format!("{stem}_ncu.log"),
            NsightTool::Systems => format!("{stem}_nsys.nsys-rep"),
        }
    }

    /// The whole command line of one batch: the tool and its options, then the batch command
    /// with the batch config and the options of the parent run (`cuda` is the device: the
    /// child sees only `cuda_device`).
    pub fn command(&self, stem: &str, batch_config: &Utf8Path, run: &RunOptions) -> Vec<String> {
        let output = self.output_file(stem);
        let mut line: Vec<String> = vec![self.bin.to_string()];
        match self.tool {
            NsightTool::Compute => line.extend(
                [
                    "--log-file",
                    &output,
                    "--csv",
                    "--app-replay-buffer",
                    "file",
                    "--nvtx",
                    "--nvtx-include",
                    &format!("{NVTX_RANGE}/"),
                    "--target-processes",
                    "all",
                ]
                .map(String::from),
            ),
            NsightTool::Systems => {
                let report = output.trim_end_matches(".nsys-rep");
                line.extend(["profile", "-t", "cuda,nvtx", "-o", report].map(String::from));
            }
        }
        line.extend(self.extra_args.iter().cloned());
        line.extend(self.batch_cmd.iter().cloned());
        // The mode as the command line spells it: its serialised name.
        let mode = json!(run.exec_mode);
        line.extend(
            [
                "--config",
                batch_config.as_str(),
                "-w",
                &self.warmup.to_string(),
                "-i",
                &self.iterations.to_string(),
                "--device",
                "cuda",
                "--exec-mode",
                mode.as_str().unwrap_or("discrete"),
                "--output-prefix",
                &format!("{stem}_batch"),
                "--nvtx",
            ]
            .map(String::from),
        );
        if run.backward {
            line.push("--backward".into());
        }
        if run.flush_l2 {
            line.extend(["--cuda-l2-cache".into(), "off".into()]);
        }
        line
    }
}

/// A config holding exactly `runs` (all of one operator), one config entry per run with its
/// expanded build and input: the batch command runs them in this order.
pub fn batch_config(runs: &[&ExpandedRun]) -> Value {
    let Some(first) = runs.first() else {
        return json!({});
    };
    let mut entries = Vec::with_capacity(runs.len());
    let mut has_build = false;
    for run in runs {
        let mut entry = Map::new();
        if let Some(build) = run.config.get("build").filter(|b| !b.is_null()) {
            entry.insert("build".into(), json!([build]));
            has_build = true;
        }
        entry.insert("input".into(), json!([run.config.get("input")]));
        entries.push(Value::Object(entry));
    }
    let mut op = Map::new();
    if has_build {
        op.insert("build_data_generator".into(), json!(GENERATOR));
    }
    op.insert("input_data_generator".into(), json!(GENERATOR));
    op.insert("config".into(), Value::Array(entries));
    json!({ first.op_name.clone(): op })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{ExecMode, OpsConfig, expand};

    fn options(tool: NsightTool) -> NsightOptions {
        NsightOptions {
            tool,
            bin: "/opt/nsight/ncu".into(),
            extra_args: vec!["--metrics".into(), "sm__cycles_elapsed.avg".into()],
            warmup: 5,
            iterations: 1,
            batch_size: 50,
            cuda_device: "1".into(),
            batch_cmd: vec!["benchit".into(), "ops".into()],
        }
    }

    fn run_options() -> RunOptions {
        RunOptions {
            config_file: "mm.json".into(),
            device: "cuda".into(),
            warmup: 1,
            iterations: 10,
            backward: true,
            exec_mode: ExecMode::Discrete,
            flush_l2: true,
            nvtx: false,
            nsight: None,
            profile: false,
            output_prefix: "out".into(),
            append: false,
            resume_id: None,
            stop_id: None,
            timeout: std::time::Duration::from_secs(60),
        }
    }

    /// The Nsight Compute line: its CSV log, the NVTX filter on the worker's range, the extra
    /// options, then the batch command with the batch's counts and the parent's options.
    #[test]
    fn the_compute_command_line_profiles_the_measured_range() {
        let line = options(NsightTool::Compute).command("p_1_2_0", "b.json".into(), &run_options());
        assert_eq!(
            line.join(" "),
            "/opt/nsight/ncu --log-file p_1_2_0_ncu.log --csv --app-replay-buffer file --nvtx \
             --nvtx-include benchit_measure/ --target-processes all --metrics \
             sm__cycles_elapsed.avg benchit ops --config b.json -w 5 -i 1 --device cuda \
             --exec-mode discrete --output-prefix p_1_2_0_batch --nvtx --backward \
             --cuda-l2-cache off"
        );
    }

    /// Nsight Systems writes a report named without its extension on the command line.
    #[test]
    fn the_systems_command_line_names_its_report() {
        let line = options(NsightTool::Systems).command("p", "b.json".into(), &run_options());
        assert_eq!(
            line[..6],
            [
                "/opt/nsight/ncu",
                "profile",
                "-t",
                "cuda,nvtx",
                "-o",
                "p_nsys"
            ]
        );
        assert_eq!(
            options(NsightTool::Systems).output_file("p"),
            "p_nsys.nsys-rep"
        );
    }

    /// The batch config, read back as a config, expands into the queued runs' own specs.
    #[test]
    fn a_batch_config_holds_exactly_the_queued_runs() {
        let config = OpsConfig::parse(
            r#"{"torch.nn.Linear": {
                "build_data_generator": "PyTorch:DefaultDataGenerator",
                "input_data_generator": "PyTorch:DefaultDataGenerator",
                "input_iterator": "RangeConfigIterator",
                "config": [{"build": [{"args": [{"type": "int", "value": 8}, {"type": "int", "value": 4}]}],
                            "input": [{"args": [{"type": "tensor", "dtype": "float", "shape": [[2, 4, 2], 8], "__range__": ["shape"]}]}]}]}}"#,
            "linear.json",
        )
        .unwrap();
        let runs: Vec<ExpandedRun> = expand(&config).collect();
        let queued: Vec<&ExpandedRun> = runs.iter().collect();
        let batch = batch_config(&queued).to_string();
        let again = OpsConfig::parse(&batch, "batch.json").unwrap();
        let replayed: Vec<Value> = expand(&again).map(|r| r.config).collect();
        let originals: Vec<Value> = runs.iter().map(|r| r.config.clone()).collect();
        assert_eq!(replayed, originals);
    }
}
