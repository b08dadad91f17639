//! GuideLLM, the Python load generator, as the peer of the load figure: installed with uv into
//! `target/bench-guidellm` (uv's cache is the user's, as for `cargo xtask e2e`; the second run
//! finds it there), and run once per rate against the mock server.
//!
//! GuideLLM needs torch (its data loader is torch's `DataLoader`). torch is taken from uv's cache
//! only, never downloaded for this: the CPU suite's environments (`cargo xtask e2e`) put it
//! there. Its synthetic prompts need a tokenizer; a word-level one over Faker's words (the words
//! GuideLLM's prompts are made of) is built here with the `tokenizers` library GuideLLM already
//! has, and `HF_HUB_OFFLINE=1` makes any download from a model hub fail loudly.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use super::install::{ScratchVenv, check};
use super::tree_cpu::{CpuTrace, wait_traced};

/// The GuideLLM release measured.
pub const VERSION: &str = "0.8.1";

/// Builds the tokenizer folder named by its argument: a word level over Faker's English words
/// and punctuation, lower-cased.
const TOKENIZER_SCRIPT: &str = r#"
import string, sys
from faker.providers.lorem.en_US import Provider
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
from transformers import PreTrainedTokenizerFast
words = sorted({w.lower() for w in Provider.word_list} | set(string.punctuation))
vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tokenizer.normalizer = normalizers.Lowercase()
tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]").save_pretrained(sys.argv[1])
"#;

/// An installed GuideLLM and the files its runs use.
pub struct GuideLlm {
    /// `guidellm` in its environment.
    program: PathBuf,
    /// The local tokenizer folder.
    tokenizer: PathBuf,
    /// Where each run's report and log go.
    runs: PathBuf,
}

/// Installs GuideLLM into `dir` unless it is there already.
pub fn install(dir: &Path) -> anyhow::Result<GuideLlm> {
    let venv = dir.join("venv");
    let marker = venv.join("installed-by-xtask");
    let installed = GuideLlm {
        program: venv.join("bin/guidellm"),
        tokenizer: dir.join("tokenizer"),
        runs: dir.join("runs"),
    };
    let wanted = format!("guidellm=={VERSION}");
    if fs_err::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(installed);
    }
    let scratch = ScratchVenv::create(&venv, &dir.join("tools"))?;
    let (cache, venv_python) = (&scratch.cache, &scratch.python);
    let install = |args: &[&str]| scratch.install(args);
    check(&mut install(&["--offline", "torch"])).with_context(|| {
        format!(
            "GuideLLM needs torch, which is not in uv's cache ({}); this bench does not download it: `cargo xtask e2e` installs the CPU suite, which puts it there",
            cache.display()
        )
    })?;
    check(&mut install(&[&wanted]))?;
    check(
        Command::new(venv_python)
            .env("HF_HUB_OFFLINE", "1")
            .args(["-c", TOKENIZER_SCRIPT])
            .arg(&installed.tokenizer),
    )
    .context("could not build GuideLLM's local tokenizer")?;
    fs_err::write(&marker, wanted)?;
    Ok(installed)
}

impl GuideLlm {
    /// Runs GuideLLM's Poisson profile at `rate` for `seconds` against the mock server at `url`
    /// (its completions route, streamed, prompts of 32 tokens, answers of 16); returns the path
    /// of its JSON report and the CPU trace of its processes.
    pub fn run(&self, url: &str, rate: f64, seconds: u64) -> anyhow::Result<(PathBuf, CpuTrace)> {
        fs_err::create_dir_all(&self.runs)?;
        let report = self.runs.join(format!("poisson-{rate:.3}.json"));
        let log_path = self.runs.join(format!("poisson-{rate:.3}.log"));
        let log = fs_err::File::create(&log_path)?.into_file();
        let mut child = Command::new(&self.program)
            .env("HF_HUB_OFFLINE", "1")
            .arg("run")
            .arg("--backend")
            .arg(format!(
                "kind=openai_http,target={url},model=mock,request_format=/v1/completions,http2=false"
            ))
            .arg("--profile")
            .arg(format!("kind=poisson,rate={rate}"))
            .arg("--constraint")
            .arg(format!("kind=max_duration,seconds={seconds}"))
            .arg("--tokenizer")
            .arg(format!(
                "kind=huggingface_auto,model={}",
                self.tokenizer.display()
            ))
            .arg("--data")
            .arg("kind=synthetic_text,prompt_tokens=32,output_tokens=16")
            .arg("--output")
            .arg(format!("kind=json,path={}", report.display()))
            .arg("--disable-console")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("could not start {}", self.program.display()))?;
        let (status, trace) = wait_traced(&mut child)?;
        if !status.success() {
            bail!(
                "GuideLLM failed at {rate} requests/s ({status}); its output is in {}",
                log_path.display()
            );
        }
        Ok((report, trace))
    }
}
