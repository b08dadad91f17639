//! `error`: which processes failed, and their tracebacks grouped by the exception raised.

use indexmap::IndexMap;
use milabench_metrics::{Event, Pipe, ReturnCode};

use crate::Entry;
use crate::summary::Summary;

#[derive(Debug, Default)]
struct ProcessErrors {
    stderr: Vec<String>,
    /// 1 per `error` event, then the return code (non-integer codes count as 1).
    codes: Vec<i64>,
    early_stop: bool,
    trace: Option<String>,
}

/// Per process: stderr lines, error events, return codes and whether it was stopped early.
#[derive(Debug, Default)]
pub struct ErrorLayer {
    processes: IndexMap<String, ProcessErrors>,
    is_install: bool,
}

impl ErrorLayer {
    pub(super) fn observe(&mut self, entry: Entry<'_>) {
        let tag = entry.tag.as_str();
        let record = entry.record;
        match &record.event {
            Event::Config(_) => self.is_install = false,
            Event::Start(start) => {
                self.is_install = start.command.first().is_some_and(|c| c == "pip");
            }
            Event::Stop => self.process(tag).early_stop = true,
            Event::Line(line) => {
                let process = self.process(tag);
                if record.pipe == Some(Pipe::Stderr) {
                    process.stderr.push(line.clone());
                }
            }
            Event::Error(info) => {
                let process = self.process(tag);
                process.codes.push(1);
                process.trace = info.trace.clone();
            }
            Event::End(end) => {
                let code = match end.return_code {
                    ReturnCode::Code(c) => c,
                    ReturnCode::Other(_) => 1,
                };
                self.process(tag).codes.push(code);
            }
            _ => {}
        }
    }

    fn process(&mut self, tag: &str) -> &mut ProcessErrors {
        self.processes.entry(tag.to_owned()).or_default()
    }

    pub(super) fn report(&self, summary: &mut Summary) -> u64 {
        let groups = self.group();
        summary.section("Early Stopped", |summary| {
            for (bench, group) in &groups {
                if group.early_stopped > 0 {
                    summary.add(format!(
                        "*{:2} x {bench:<30} ({}/{})",
                        group.early_stopped, group.early_stopped, group.total
                    ));
                }
            }
        });
        let mut failures = 0;
        summary.section("Errors", |summary| {
            for (bench, group) in &groups {
                failures += group.failures;
                summary.section(*bench, |summary| {
                    if group.failures == 0 {
                        return;
                    }
                    if group.exceptions.is_empty() {
                        summary.add("* No exception were found");
                        return;
                    }
                    for (raised, by_tag) in &group.exceptions {
                        summary.section(raised.as_str(), |summary| {
                            let tags: Vec<String> = by_tag
                                .iter()
                                .map(|(tag, tbs)| format!("{} x {tag}", tbs.len()))
                                .collect();
                            summary.add(format!("* {}", tags.join(", ")));
                            if let Some(first) = by_tag.values().next().and_then(|t| t.first()) {
                                for line in &first.lines {
                                    summary.add(format!("      | {line}"));
                                }
                            }
                        });
                    }
                });
            }
        });
        failures
    }

    fn group(&self) -> IndexMap<&str, Group<'_>> {
        let mut groups: IndexMap<&str, Group<'_>> = IndexMap::new();
        for (tag, process) in &self.processes {
            let bench = match tag.rsplit_once('.') {
                Some((b, _)) if !b.is_empty() => b,
                _ => tag.as_str(),
            };
            let group = groups.entry(bench).or_default();
            group.total += 1;
            if process.codes.iter().sum::<i64>() == 0 {
                continue;
            }
            if process.early_stop {
                group.early_stopped += 1;
            } else {
                group.failures += 1;
            }
            let tracebacks = match &process.trace {
                Some(trace) => vec![Traceback {
                    lines: trace.lines().map(str::to_owned).collect(),
                }],
                None => extract_tracebacks(&process.stderr, self.is_install),
            };
            for tb in tracebacks {
                group
                    .exceptions
                    .entry(tb.raised_exception())
                    .or_default()
                    .entry(tag.as_str())
                    .or_default()
                    .push(tb);
            }
        }
        groups
    }
}

#[derive(Debug, Default)]
struct Group<'a> {
    total: u64,
    early_stopped: u64,
    failures: u64,
    exceptions: IndexMap<String, IndexMap<&'a str, Vec<Traceback>>>,
}

#[derive(Debug, Clone)]
struct Traceback {
    lines: Vec<String>,
}

fn only_carets(s: &str) -> bool {
    s.chars().all(|c| c == '^' || c == ' ')
}

impl Traceback {
    fn push(&mut self, line: &str) {
        if let Some(last) = self.lines.last_mut()
            && only_carets(line)
            && only_carets(last)
        {
            last.push_str(line);
            return;
        }
        self.lines.push(line.replace('\n', ""));
    }

    /// The line after the first `raise X(` line, else the last line.
    fn raised_exception(&self) -> String {
        let raise = self.lines.iter().position(|l| {
            l.find("raise ")
                .is_some_and(|at| l[at + "raise ".len()..].contains('('))
        });
        let line = match raise {
            Some(i) => self.lines.get(i + 1).or(self.lines.last()),
            None => self.lines.last(),
        };
        line.cloned().unwrap_or_default()
    }
}

/// Cuts stderr lines into tracebacks: each starts at a line containing `Traceback` (or, during
/// installs, a pip `ERROR` line); parsing stops at chained or thread exceptions.
fn extract_tracebacks(lines: &[String], is_install: bool) -> Vec<Traceback> {
    let mut out = Vec::new();
    let mut current: Option<Traceback> = None;
    let mut parsing_pip = false;
    let push =
        |current: &mut Option<Traceback>, parsing_pip: &mut bool, out: &mut Vec<Traceback>| {
            if let Some(mut tb) = current.take() {
                if *parsing_pip {
                    tb.push("PipInstallError");
                    *parsing_pip = false;
                }
                out.push(tb);
            }
        };
    let mut line = String::new();
    for piece in lines {
        line.push_str(if piece.is_empty() { "\n" } else { piece });
        if !line.contains('\n') {
            continue;
        }
        if line.contains("During handling of the above exception")
            || line.contains("Exception in thread Thread")
        {
            break;
        }
        let pip_error = |parsing: bool| is_install && !parsing && line.contains("ERROR");
        if line.contains("Traceback") || pip_error(parsing_pip) {
            push(&mut current, &mut parsing_pip, &mut out);
            if pip_error(parsing_pip) {
                parsing_pip = true;
            }
            current = Some(Traceback { lines: Vec::new() });
        }
        if let Some(tb) = current.as_mut() {
            tb.push(&line);
        }
        line.clear();
    }
    push(&mut current, &mut parsing_pip, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.split_inclusive('\n').map(str::to_owned).collect()
    }

    #[test]
    fn tracebacks_are_cut_and_named() {
        let stderr = lines(
            "warming up\nTraceback (most recent call last):\n  File \"a.py\", line 1\n    raise ValueError(\"x\")\nValueError: x\nTraceback (most recent call last):\nKeyError: 'k'\n",
        );
        let tbs = extract_tracebacks(&stderr, false);
        assert_eq!(tbs.len(), 2);
        assert_eq!(tbs[0].raised_exception(), "ValueError: x");
        assert_eq!(tbs[1].raised_exception(), "KeyError: 'k'");
    }

    #[test]
    fn chained_exceptions_stop_parsing() {
        let stderr = lines(
            "Traceback (most recent call last):\nA: 1\nDuring handling of the above exception, another exception occurred:\nTraceback (most recent call last):\nB: 2\n",
        );
        let tbs = extract_tracebacks(&stderr, false);
        assert_eq!(tbs.len(), 1);
        assert_eq!(tbs[0].lines, ["Traceback (most recent call last):", "A: 1"]);
    }

    #[test]
    fn pip_errors_count_during_installs_only() {
        let stderr = lines("ERROR: no matching distribution\nmore\n");
        assert!(extract_tracebacks(&stderr, false).is_empty());
        let tbs = extract_tracebacks(&stderr, true);
        assert_eq!(tbs.len(), 1);
        assert_eq!(
            tbs[0].lines.last().map(String::as_str),
            Some("PipInstallError")
        );
    }
}
