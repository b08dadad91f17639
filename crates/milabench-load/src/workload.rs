//! What is asked of the server: prompts with their input and output lengths, drawn from seeded
//! distributions (alone, after shared prefixes, or as the turns of sessions), read from a
//! JSON-lines or ShareGPT-format file, or from a timestamped trace to replay.

use std::path::Path;
use std::str::FromStr;

use serde::Deserialize;

use crate::error::LoadError;

/// A distribution of token counts; every draw is at least 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LengthDist {
    /// Always this many.
    Fixed(u32),
    /// Uniform over `low..=high`.
    Uniform {
        /// Smallest count.
        low: u32,
        /// Largest count.
        high: u32,
    },
    /// Normal with this mean and standard deviation, rounded, at least 1.
    Normal {
        /// Mean count.
        mean: f64,
        /// Standard deviation.
        std: f64,
    },
}

impl LengthDist {
    /// One draw from `rng`.
    pub fn draw(&self, rng: &mut fastrand::Rng) -> u32 {
        match *self {
            LengthDist::Fixed(n) => n.max(1),
            LengthDist::Uniform { low, high } => rng.u32(low.max(1)..=high.max(low.max(1))),
            LengthDist::Normal { mean, std } => {
                // Box–Muller: two uniforms in (0, 1] make one standard normal.
                let u1 = 1.0 - rng.f64();
                let u2 = rng.f64();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (mean + std * z).round().max(1.0) as u32
            }
        }
    }
}

impl FromStr for LengthDist {
    type Err = String;

    /// `128` or `fixed:128`, `uniform:64:256`, `normal:128:32`.
    fn from_str(text: &str) -> Result<LengthDist, String> {
        let parts: Vec<&str> = text.split(':').collect();
        let int = |s: &str| match s.trim().parse::<u32>() {
            Ok(0) => Err(format!("`{text}`: a length is at least 1 token")),
            Ok(n) => Ok(n),
            Err(_) => Err(format!("`{s}` is not a whole number of tokens in `{text}`")),
        };
        let real = |s: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("`{s}` is not a non-negative number in `{text}`"))
        };
        match parts.as_slice() {
            [n] | ["fixed", n] => Ok(LengthDist::Fixed(int(n)?)),
            ["uniform", low, high] => {
                let (low, high) = (int(low)?, int(high)?);
                if low > high {
                    return Err(format!("`{text}`: the low end is above the high end"));
                }
                Ok(LengthDist::Uniform { low, high })
            }
            ["normal", mean, std] => Ok(LengthDist::Normal {
                mean: real(mean)?,
                std: real(std)?,
            }),
            _ => Err(format!(
                "`{text}` is not a length distribution: write N, fixed:N, uniform:LOW:HIGH or normal:MEAN:STD"
            )),
        }
    }
}

/// One request to send: its prompt and how many tokens to ask for.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The prompt text (the user message for chat).
    pub text: String,
    /// The input length the prompt was made for (synthetic prompts), or `None` (from a file).
    pub input_tokens: Option<u32>,
    /// `max_tokens` of the request.
    pub max_tokens: u32,
}

/// Where prompts come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// Made-up prompts of seeded lengths: one word per input token.
    Synthetic {
        /// Input lengths.
        input: LengthDist,
        /// Output lengths (`max_tokens`).
        output: LengthDist,
    },
    /// Prompts read from a file, used in turn (round robin).
    File(Vec<FilePrompt>),
    /// Made-up prompts that each start with one of `prefixes` shared prefixes of
    /// `prefix_tokens` words (prompt `i` with prefix `i mod prefixes`), then a part of their
    /// own of `input` words: what a server's prefix cache can reuse.
    SharedPrefix {
        /// Lengths of each prompt's own part.
        input: LengthDist,
        /// Output lengths (`max_tokens`).
        output: LengthDist,
        /// Words of each shared prefix.
        prefix_tokens: u32,
        /// How many different prefixes.
        prefixes: usize,
    },
    /// Sessions of `turns` successive requests: each turn's prompt is the conversation so far
    /// (every earlier question, each followed by a stand-in answer of the length it asked
    /// for) and a new question of `input` words.
    Sessions {
        /// Lengths of each new question.
        input: LengthDist,
        /// Output lengths (`max_tokens`), also the length of each stand-in answer.
        output: LengthDist,
        /// Turns per session.
        turns: usize,
    },
    /// The requests of a trace, replayed in order with their input and output lengths (the
    /// `replay` scenario sends each at its time).
    Trace(Vec<TraceEntry>),
}

/// One line of a trace to replay: `{"timestamp": MS, "input_length": N, "output_length": N}`
/// (the Mooncake trace's fields; `input_tokens` and `output_tokens` are read too).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct TraceEntry {
    /// When the request arrives, milliseconds from the start of the trace.
    pub timestamp: f64,
    /// Input tokens.
    #[serde(alias = "input_tokens")]
    pub input_length: u32,
    /// Output tokens (`max_tokens`).
    #[serde(alias = "output_tokens")]
    pub output_length: u32,
}

/// One conversation of a ShareGPT-format file (a JSON list of them).
#[derive(Debug, Deserialize)]
struct ShareGptConversation {
    conversations: Vec<ShareGptTurn>,
}

/// One turn of a ShareGPT conversation: who speaks (`human`, `gpt`, ...) and what they say.
#[derive(Debug, Deserialize)]
struct ShareGptTurn {
    from: String,
    value: String,
}

/// One line of a prompts file: `{"prompt": "...", "max_tokens": 128}` (`max_tokens` optional).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FilePrompt {
    /// The prompt text.
    pub prompt: String,
    /// Tokens to ask for; the workload's default when absent.
    pub max_tokens: Option<u32>,
}

/// Words the synthetic prompts are made of: common English words, one token each in the usual
/// tokenizers, so a prompt of `n` words is close to `n` tokens.
const WORDS: [&str; 16] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "on", "be",
    "at", "by",
];

impl Workload {
    /// Reads a prompts file: JSON lines of [`FilePrompt`] (blank lines skipped), or a
    /// ShareGPT-format JSON list of conversations (one that starts with `[`), whose first
    /// human turn is the prompt and the answer after it, in words, the `max_tokens`.
    pub fn from_file(path: &Path) -> Result<Workload, LoadError> {
        let text = read(path, file_error)?;
        let prompts = if text.trim_start().starts_with('[') {
            sharegpt(&text).map_err(|reason| file_error(path, 0, reason))?
        } else {
            json_lines(path, &text, file_error)?
        };
        if prompts.is_empty() {
            return Err(file_error(path, 0, "no prompt in the file".into()));
        }
        Ok(Workload::File(prompts))
    }

    /// Reads a trace to replay: JSON lines of [`TraceEntry`] (blank lines skipped), in order
    /// of their times.
    pub fn from_trace(path: &Path) -> Result<Workload, LoadError> {
        let entries: Vec<TraceEntry> = json_lines(path, &read(path, trace_error)?, trace_error)?;
        if entries.is_empty() {
            return Err(trace_error(path, 0, "no request in the trace".into()));
        }
        if let Some(i) = entries
            .windows(2)
            .position(|w| w[1].timestamp < w[0].timestamp)
        {
            return Err(trace_error(
                path,
                0,
                format!(
                    "the request after number {} comes earlier: sort the trace by timestamp",
                    i + 1
                ),
            ));
        }
        Ok(Workload::Trace(entries))
    }

    /// A trace's arrival times from its first request, at most `max`; empty for other
    /// workloads.
    pub fn trace_times(&self, max: usize) -> Vec<std::time::Duration> {
        let Workload::Trace(entries) = self else {
            return Vec::new();
        };
        let first = entries[0].timestamp;
        entries
            .iter()
            .take(max)
            .map(|e| std::time::Duration::from_secs_f64((e.timestamp - first).max(0.0) / 1e3))
            .collect()
    }

    /// `count` prompts drawn with `seed`; `default_max_tokens` serves file prompts without one.
    pub fn prompts(&self, count: usize, seed: u64, default_max_tokens: u32) -> Vec<Prompt> {
        self.stream(seed, default_max_tokens).take(count).collect()
    }

    /// The prompts [`Workload::prompts`] gives, in the same order, drawn one at a time as they
    /// are asked for (a long run holds none of those to come).
    pub fn stream(&self, seed: u64, default_max_tokens: u32) -> PromptStream {
        let mut rng = fastrand::Rng::with_seed(seed);
        let prefixes = match *self {
            Workload::SharedPrefix {
                prefix_tokens,
                prefixes,
                ..
            } => (0..prefixes)
                .map(|_| words(&mut rng, prefix_tokens))
                .collect(),
            _ => Vec::new(),
        };
        PromptStream {
            workload: self.clone(),
            rng,
            next: 0,
            default_max_tokens,
            prefixes,
            conversation: String::new(),
        }
    }
}

/// What is wrong with the prompts file at `path`.
fn file_error(path: &Path, line: usize, reason: String) -> LoadError {
    LoadError::PromptsFile {
        what: "prompts file",
        path: path.to_owned(),
        line,
        reason,
    }
}

/// What is wrong with the trace at `path`.
fn trace_error(path: &Path, line: usize, reason: String) -> LoadError {
    LoadError::PromptsFile {
        what: "trace",
        path: path.to_owned(),
        line,
        reason,
    }
}

/// The text of `path`; `error` says what is wrong with it.
fn read(path: &Path, error: FileError) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|e| error(path, 0, e.to_string()))
}

/// Makes the error of a file: [`file_error`] or [`trace_error`].
type FileError = fn(&Path, usize, String) -> LoadError;

/// Every non-blank line of `text` (read from `path`) as a `T`; `error` names the line.
fn json_lines<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
    error: FileError,
) -> Result<Vec<T>, LoadError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| serde_json::from_str(line).map_err(|e| error(path, i + 1, e.to_string())))
        .collect()
}

/// The prompts of a ShareGPT-format file: each conversation's first human turn, asking for as
/// many tokens as the answer after it has words (the default when it has none).
fn sharegpt(text: &str) -> Result<Vec<FilePrompt>, String> {
    let conversations: Vec<ShareGptConversation> = serde_json::from_str(text)
        .map_err(|e| format!("not a ShareGPT list of {{\"conversations\": [...]}}: {e}"))?;
    Ok(conversations
        .iter()
        .filter_map(|c| {
            let asked = c
                .conversations
                .iter()
                .position(|t| matches!(t.from.as_str(), "human" | "user"))?;
            let answer = c.conversations.get(asked + 1);
            let words = answer.map_or(0, |a| a.value.split_whitespace().count());
            Some(FilePrompt {
                prompt: c.conversations[asked].value.clone(),
                max_tokens: u32::try_from(words).ok().filter(|&n| n > 0),
            })
        })
        .collect())
}

/// `n` of the synthetic prompts' words drawn from `rng`, separated by spaces.
fn words(rng: &mut fastrand::Rng, n: u32) -> String {
    (0..n)
        .map(|_| WORDS[rng.usize(..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// The endless seeded sequence of a workload's prompts ([`Workload::stream`]).
#[derive(Debug, Clone)]
pub struct PromptStream {
    workload: Workload,
    rng: fastrand::Rng,
    next: usize,
    default_max_tokens: u32,
    /// The shared prefixes of a [`Workload::SharedPrefix`], drawn first.
    prefixes: Vec<String>,
    /// The session's conversation so far, for [`Workload::Sessions`].
    conversation: String,
}

impl Iterator for PromptStream {
    type Item = Prompt;

    fn next(&mut self) -> Option<Prompt> {
        let i = self.next;
        self.next += 1;
        Some(match &self.workload {
            Workload::Synthetic { input, output } => {
                let rng = &mut self.rng;
                let n = input.draw(rng);
                let max_tokens = output.draw(rng);
                Prompt {
                    text: words(rng, n),
                    input_tokens: Some(n),
                    max_tokens,
                }
            }
            Workload::SharedPrefix {
                input,
                output,
                prefix_tokens,
                ..
            } => {
                let rng = &mut self.rng;
                let n = input.draw(rng);
                let max_tokens = output.draw(rng);
                let prefix = &self.prefixes[i % self.prefixes.len()];
                Prompt {
                    text: format!("{prefix} {}", words(rng, n)),
                    input_tokens: Some(prefix_tokens + n),
                    max_tokens,
                }
            }
            Workload::Sessions {
                input,
                output,
                turns,
            } => {
                if i.is_multiple_of(*turns) {
                    self.conversation.clear();
                }
                let rng = &mut self.rng;
                let n = input.draw(rng);
                let max_tokens = output.draw(rng);
                let question = words(rng, n);
                let text = self.conversation.clone() + &question;
                let answer = words(rng, max_tokens);
                self.conversation = format!("{text} {answer} ");
                Prompt {
                    input_tokens: Some(text.split(' ').count() as u32),
                    text,
                    max_tokens,
                }
            }
            Workload::Trace(entries) => {
                let e = entries[i % entries.len()];
                Prompt {
                    text: words(&mut self.rng, e.input_length.max(1)),
                    input_tokens: Some(e.input_length.max(1)),
                    max_tokens: e.output_length.max(1),
                }
            }
            Workload::File(prompts) => {
                let p = &prompts[i % prompts.len()];
                Prompt {
                    text: p.prompt.clone(),
                    input_tokens: None,
                    max_tokens: p.max_tokens.unwrap_or(self.default_max_tokens),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_parse_and_draw_within_their_range() {
        assert_eq!("64".parse(), Ok(LengthDist::Fixed(64)));
        assert_eq!("fixed:8".parse(), Ok(LengthDist::Fixed(8)));
        assert_eq!(
            "uniform:4:9".parse(),
            Ok(LengthDist::Uniform { low: 4, high: 9 })
        );
        assert!("uniform:9:4".parse::<LengthDist>().is_err());
        for zero in ["0", "fixed:0", "uniform:0:4"] {
            assert_eq!(
                zero.parse::<LengthDist>(),
                Err(format!("`{zero}`: a length is at least 1 token"))
            );
        }
        assert!("poisson:3".parse::<LengthDist>().is_err());
        let mut rng = fastrand::Rng::with_seed(1);
        let uniform = LengthDist::Uniform { low: 4, high: 9 };
        assert!((0..1000).all(|_| (4..=9).contains(&uniform.draw(&mut rng))));
        let normal: LengthDist = "normal:100:10".parse().unwrap();
        let draws: Vec<f64> = (0..4000).map(|_| normal.draw(&mut rng) as f64).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / draws.len() as f64;
        assert!((mean - 100.0).abs() < 1.0, "{mean}");
        assert!((var.sqrt() - 10.0).abs() < 1.0, "{var}");
    }

    /// Input lengths of the first synthetic prompts of seed 42 (uniform 3 to 30), and the start
    /// of the first, as drawn all at once before prompts were streamed.
    const PINNED_LENGTHS: [u32; 5] = [15, 26, 28, 21, 9];
    const PINNED_START: &str = "for on the it ";

    #[test]
    fn synthetic_prompts_are_seeded_and_have_their_lengths() {
        let w = Workload::Synthetic {
            input: LengthDist::Uniform { low: 3, high: 30 },
            output: LengthDist::Fixed(7),
        };
        let a = w.prompts(20, 42, 16);
        assert_eq!(a, w.prompts(20, 42, 16));
        assert_ne!(a, w.prompts(20, 43, 16));
        for p in &a {
            assert_eq!(p.text.split(' ').count() as u32, p.input_tokens.unwrap());
            assert_eq!(p.max_tokens, 7);
        }
        // The sequence as drawn before prompts were made lazily (seed 42).
        let lengths: Vec<u32> = a.iter().take(5).map(|p| p.input_tokens.unwrap()).collect();
        assert_eq!(lengths, PINNED_LENGTHS);
        assert!(a[0].text.starts_with(PINNED_START), "{}", a[0].text);
        // Streamed, the same prompts one at a time.
        assert_eq!(w.stream(42, 16).take(20).collect::<Vec<_>>(), a);
    }

    #[test]
    fn prompts_file_is_read_in_turn_and_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        std::fs::write(
            &path,
            "{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\", \"max_tokens\": 3}\n",
        )
        .unwrap();
        let w = Workload::from_file(&path).unwrap();
        let p = w.prompts(3, 0, 9);
        assert_eq!(
            p.iter()
                .map(|p| (p.text.as_str(), p.max_tokens))
                .collect::<Vec<_>>(),
            [("a", 9), ("b", 3), ("a", 9)]
        );
        std::fs::write(&path, "{\"prompt\": \"a\"}\n{oops\n").unwrap();
        let err = Workload::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}
