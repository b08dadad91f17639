//! Whether a benchmark process succeeded: the one rule ([`ProcessVerdict`]), applied to its
//! records as they are written (the executor), and to its `.data` file read back (`--resume`, the
//! results store, the report).

use std::fmt;

use serde_json::Value;

use crate::event::{Event, Record, ReturnCode};
use crate::fields::Fields;
use crate::format::{DataKey, EventName, INTERRUPT_ERROR, NOLOG_TAG, TRAIN_TASK};
use crate::rate::RateFault;

/// Why a finished process failed (see the rule of [`ProcessVerdict`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// It recorded `error` events: the last one, as `type: message`.
    Error(String),
    /// It exited with a status other than 0, was killed by a signal (a negative status), or
    /// ended with a return code that is not a status (`"ERROR"`).
    ExitStatus(ReturnCode),
    /// It reported a NaN loss.
    NanLoss,
    /// Training rates it reported are not measurements (a rate must be a number from 0 to
    /// [`crate::MAX_RATE`] items/s): how many, and the first one's fault.
    BadRates {
        /// How many.
        count: usize,
        /// What is wrong with the first one.
        first: RateFault,
    },
    /// It reported no training rate.
    NoRate,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Error(message) => f.write_str(message),
            Failure::ExitStatus(ReturnCode::Code(code)) if *code < 0 => {
                write!(f, "killed by signal {}", -code)
            }
            Failure::ExitStatus(ReturnCode::Code(code)) => write!(f, "exited with status {code}"),
            Failure::ExitStatus(ReturnCode::Other(value)) => write!(f, "ended with {value}"),
            Failure::NanLoss => f.write_str("reported a NaN loss"),
            Failure::BadRates { count, first } => write!(
                f,
                "{count} training rate{} not a measurement (first: {first})",
                if *count == 1 { " is" } else { "s are" }
            ),
            Failure::NoRate => f.write_str("reported no training rate"),
        }
    }
}

/// What became of a process: whether it succeeded, by the one rule applied to its records as they
/// are written (the executor) and to its `.data` file read back (`--resume`, the results store, the
/// report).
///
/// The rule is the executor's live rule (the Python tool's live display and report agree with it),
/// with the checks the report added to it. In this order:
///
/// 1. A process without a `start` or without an `end` event did not finish
///    ([`ProcessVerdict::Unfinished`]): it was killed with the orchestrator, or is still running.
/// 2. A process that reported training rates (`task: train`) that are not measurements
///    ([`RateFault`]: NaN, negative, infinite, absurdly large) failed, however it ended: its
///    figures cannot be trusted ([`Failure::BadRates`]).
/// 3. Else a process that sent `stop` (an early stop, asked by the benchmark or by `--precision`)
///    succeeded whatever its return code: milabench stopped it ([`ProcessVerdict::EarlyStopped`]).
/// 4. Else a process kept out of reports (`nolog` in its `config.tag`: the remote ranks of a
///    multi-node job) succeeded ([`ProcessVerdict::KeptOut`]).
/// 5. Else a process that recorded an interruption (an `error` event of type [`INTERRUPT_ERROR`],
///    Ctrl-C) did not fail on its own: [`ProcessVerdict::Interrupted`].
/// 6. Else it succeeded when it exited with status 0, recorded no `error` event (from the
///    benchmark or from the orchestrator: a time limit, a failed rank, a pipe that broke), reported
///    no NaN loss and reported at least one training rate; else it failed, with every reason that
///    applies ([`Failure`]).
///
/// An infinite loss is not a failure (neither tool ever made it one). [`ProcessJudge`] applies the
/// rule one record at a time, so that the executor and the readers of files share it;
/// [`ProcessVerdict::judge`] applies it to a whole stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ProcessVerdict {
    /// It exited with 0, reported training rates, and nothing went wrong.
    Succeeded,
    /// It asked to stop early and was stopped: a success whatever its return code.
    EarlyStopped,
    /// It is kept out of reports (`nolog`): a success once it finished.
    KeptOut,
    /// The run was interrupted while it ran: neither a success nor its own failure.
    Interrupted,
    /// It finished and failed, for these reasons (never empty, in the order of [`Failure`]).
    Failed(Vec<Failure>),
    /// It did not finish: the event it lacks ([`EventName::Start`] or [`EventName::End`]).
    Unfinished(EventName),
}

impl ProcessVerdict {
    /// The verdict on the records of one process, in the order they were written.
    pub fn judge<'a>(records: impl IntoIterator<Item = &'a Record>) -> ProcessVerdict {
        let mut judge = ProcessJudge::default();
        for record in records {
            judge.observe(record);
        }
        judge.verdict()
    }

    /// Whether the process counts as a success: it succeeded, stopped early or is kept out.
    pub fn is_success(&self) -> bool {
        matches!(
            self,
            ProcessVerdict::Succeeded | ProcessVerdict::EarlyStopped | ProcessVerdict::KeptOut
        )
    }

    /// Why it failed; empty unless [`ProcessVerdict::Failed`].
    pub fn failures(&self) -> &[Failure] {
        match self {
            ProcessVerdict::Failed(failures) => failures,
            _ => &[],
        }
    }
}

/// Applies the rule one record at a time: [`ProcessJudge::observe`] each record of a process as it
/// is written or read, then ask for [`ProcessJudge::verdict`]. It reads only the parts of records
/// in [`ProcessJudge::FIELDS`].
#[derive(Debug, Clone, Default)]
pub struct ProcessJudge {
    kept_out: bool,
    started: bool,
    return_code: Option<ReturnCode>,
    stop_seen: bool,
    interrupted: bool,
    errors: Vec<String>,
    rate_count: usize,
    bad_rates: Option<(usize, RateFault)>,
    nan_loss: bool,
}

impl ProcessJudge {
    /// The parts of a record the rule reads: a reader that only judges asks for these.
    pub const FIELDS: Fields = Fields::event(EventName::Config)
        .with(Fields::event(EventName::Start))
        .with(Fields::event(EventName::End))
        .with(Fields::event(EventName::Stop))
        .with(Fields::event(EventName::Error))
        .with(Fields::data(DataKey::Task))
        .with(Fields::data(DataKey::Rate))
        .with(Fields::data(DataKey::Loss));

    /// Takes in the next record of the process.
    #[inline]
    pub fn observe(&mut self, record: &Record) {
        match &record.event {
            Event::Config(config) => self.kept_out = is_kept_out(config),
            Event::Start(_) => self.started = true,
            Event::End(end) => self.return_code = Some(end.return_code.clone()),
            Event::Stop => self.stop_seen = true,
            Event::Error(error) => {
                self.interrupted |= error.kind.as_deref() == Some(INTERRUPT_ERROR);
                self.errors.push(match (&error.kind, &error.message) {
                    (Some(kind), Some(message)) => format!("{kind}: {message}"),
                    (Some(kind), None) => kind.clone(),
                    (None, Some(message)) => message.clone(),
                    (None, None) => EventName::Error.as_str().to_owned(),
                });
            }
            Event::Data(data) => {
                if data.task.as_deref() == Some(TRAIN_TASK)
                    && let Some(rate) = data.rate
                {
                    self.rate_count += 1;
                    if let Some(fault) = RateFault::of(rate) {
                        self.bad_rates.get_or_insert((0, fault)).0 += 1;
                    }
                }
                self.nan_loss |= data.loss.is_some_and(f64::is_nan);
            }
            _ => {}
        }
    }

    /// The verdict on the records taken in so far.
    pub fn verdict(&self) -> ProcessVerdict {
        if !self.started {
            return ProcessVerdict::Unfinished(EventName::Start);
        }
        let Some(return_code) = &self.return_code else {
            return ProcessVerdict::Unfinished(EventName::End);
        };
        let mut failures = Vec::new();
        let judged = !(self.stop_seen || self.kept_out || self.interrupted);
        if judged && let Some(last) = self.errors.last() {
            failures.push(Failure::Error(last.clone()));
        }
        if judged && !return_code.is_zero() {
            failures.push(Failure::ExitStatus(return_code.clone()));
        }
        if judged && self.nan_loss {
            failures.push(Failure::NanLoss);
        }
        if let Some((count, first)) = self.bad_rates {
            failures.push(Failure::BadRates { count, first });
        }
        if judged && self.rate_count == 0 {
            failures.push(Failure::NoRate);
        }
        match failures.is_empty() {
            false => ProcessVerdict::Failed(failures),
            true if self.stop_seen => ProcessVerdict::EarlyStopped,
            true if self.kept_out => ProcessVerdict::KeptOut,
            true if self.interrupted => ProcessVerdict::Interrupted,
            true => ProcessVerdict::Succeeded,
        }
    }

    /// Every `error` event so far, as `type: message`.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// How many training rates it reported (those that are not measurements included).
    pub fn rate_count(&self) -> usize {
        self.rate_count
    }

    /// Whether it sent `stop` (an early stop).
    pub fn stop_seen(&self) -> bool {
        self.stop_seen
    }
}

/// Whether a `config` payload's `tag` list holds [`NOLOG_TAG`].
fn is_kept_out(config: &Value) -> bool {
    config
        .get("tag")
        .and_then(Value::as_array)
        .is_some_and(|tag| tag.iter().any(|part| part == NOLOG_TAG))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::event::{DataPayload, EndInfo, ErrorInfo};

    fn config(tag: &[&str]) -> Record {
        Record::new(Event::Config(json!({"name": "b", "tag": tag})), None)
    }

    fn start() -> Record {
        Record::new(Event::Start(Box::default()), None)
    }

    fn end(code: ReturnCode) -> Record {
        Record::new(
            Event::End(Box::new(EndInfo {
                command: None,
                time: Some(1.0),
                return_code: code,
                extra: serde_json::Map::new(),
            })),
            None,
        )
    }

    fn exit(code: i64) -> Record {
        end(ReturnCode::Code(code))
    }

    fn data(task: &str, rate: Option<f64>, loss: Option<f64>) -> Record {
        Record::new(
            Event::Data(Box::new(DataPayload {
                task: Some(task.into()),
                rate,
                loss,
                ..DataPayload::default()
            })),
            None,
        )
    }

    fn rate(x: f64) -> Record {
        data(TRAIN_TASK, Some(x), None)
    }

    fn error(kind: &str, message: &str) -> Record {
        Record::new(
            Event::Error(Box::new(ErrorInfo {
                kind: Some(kind.into()),
                message: Some(message.into()),
                ..ErrorInfo::default()
            })),
            None,
        )
    }

    fn stop() -> Record {
        Record::new(Event::Stop, None)
    }

    fn judge(records: &[Record]) -> ProcessVerdict {
        ProcessVerdict::judge(records)
    }

    #[test]
    fn a_clean_exit_with_rates_succeeds() {
        let run = [
            config(&["b", "D0"]),
            start(),
            rate(10.0),
            rate(11.0),
            exit(0),
        ];
        assert_eq!(judge(&run), ProcessVerdict::Succeeded);
        assert!(judge(&run).is_success());
        assert!(judge(&run).failures().is_empty());
    }

    #[test]
    fn a_process_without_start_or_end_did_not_finish() {
        assert_eq!(
            judge(&[config(&["b"]), start(), rate(1.0), stop()]),
            ProcessVerdict::Unfinished(EventName::End)
        );
        assert_eq!(
            judge(&[config(&["b"]), rate(1.0), exit(0)]),
            ProcessVerdict::Unfinished(EventName::Start)
        );
        // Even a process kept out of reports must finish.
        assert_eq!(
            judge(&[config(&["b", "nolog"]), start()]),
            ProcessVerdict::Unfinished(EventName::End)
        );
        assert!(!judge(&[]).is_success());
    }

    #[test]
    fn an_early_stop_succeeds_whatever_else_happened() {
        let run = [
            config(&["b"]),
            start(),
            error("ValueError", "late"),
            data(TRAIN_TASK, Some(2.0), Some(f64::NAN)),
            stop(),
            exit(-15),
        ];
        assert_eq!(judge(&run), ProcessVerdict::EarlyStopped);
    }

    #[test]
    fn rates_that_are_not_measurements_fail_even_an_early_stop() {
        let bad = Failure::BadRates {
            count: 1,
            first: RateFault::TooLarge(f64::INFINITY),
        };
        let run = [
            config(&["b"]),
            start(),
            rate(f64::INFINITY),
            stop(),
            exit(-15),
        ];
        assert_eq!(judge(&run), ProcessVerdict::Failed(vec![bad.clone()]));
        let run = [
            config(&["b", "nolog"]),
            start(),
            rate(f64::INFINITY),
            exit(0),
        ];
        assert_eq!(judge(&run), ProcessVerdict::Failed(vec![bad]));
    }

    #[test]
    fn a_process_kept_out_of_reports_succeeds_once_finished() {
        let run = [config(&["b", "0", "node2", "nolog"]), start(), exit(3)];
        assert_eq!(judge(&run), ProcessVerdict::KeptOut);
        // `nolog` must be a whole part of the tag.
        let run = [config(&["nologger"]), start(), exit(0)];
        assert_eq!(judge(&run), ProcessVerdict::Failed(vec![Failure::NoRate]));
    }

    #[test]
    fn an_interruption_is_not_the_process_failing() {
        let run = [
            config(&["b"]),
            start(),
            rate(1.0),
            error(INTERRUPT_ERROR, "milabench was interrupted"),
            end(ReturnCode::Other(json!("ERROR"))),
        ];
        assert_eq!(judge(&run), ProcessVerdict::Interrupted);
        assert!(!judge(&run).is_success());
    }

    /// The live rule that resume used to miss: an `error` event or a NaN loss fails a process
    /// that exited with 0.
    #[test]
    fn errors_and_nan_losses_fail_a_clean_exit() {
        let run = [
            config(&["b"]),
            start(),
            rate(1.0),
            error("RuntimeError", "boom"),
            exit(0),
        ];
        assert_eq!(
            judge(&run),
            ProcessVerdict::Failed(vec![Failure::Error("RuntimeError: boom".into())])
        );
        let run = [
            config(&["b"]),
            start(),
            rate(1.0),
            data(TRAIN_TASK, None, Some(f64::NAN)),
            exit(0),
        ];
        assert_eq!(judge(&run), ProcessVerdict::Failed(vec![Failure::NanLoss]));
        // An infinite loss is not a failure.
        let run = [
            config(&["b"]),
            start(),
            rate(1.0),
            data("eval", None, Some(f64::INFINITY)),
            exit(0),
        ];
        assert_eq!(judge(&run), ProcessVerdict::Succeeded);
    }

    #[test]
    fn every_reason_is_given_in_order() {
        let run = [
            config(&["b"]),
            start(),
            error("A", "first"),
            Record::new(Event::Error(Box::default()), None),
            rate(-1.0),
            rate(f64::INFINITY),
            data(TRAIN_TASK, None, Some(f64::NAN)),
            exit(1),
        ];
        let verdict = judge(&run);
        assert_eq!(
            verdict,
            ProcessVerdict::Failed(vec![
                Failure::Error("error".into()),
                Failure::ExitStatus(ReturnCode::Code(1)),
                Failure::NanLoss,
                Failure::BadRates {
                    count: 2,
                    first: RateFault::Negative(-1.0)
                },
            ])
        );
        let words: Vec<String> = verdict.failures().iter().map(ToString::to_string).collect();
        assert_eq!(words[1], "exited with status 1");
        assert!(
            words[3].starts_with("2 training rates are not a measurement (first: -1 (negative))")
        );
    }

    #[test]
    fn rates_must_be_training_rates_and_measurements() {
        let run = [
            config(&["b"]),
            start(),
            data("eval", Some(5.0), None),
            exit(0),
        ];
        assert_eq!(judge(&run), ProcessVerdict::Failed(vec![Failure::NoRate]));
        let run = [config(&["b"]), start(), rate(f64::NAN), exit(0)];
        assert_eq!(
            judge(&run),
            ProcessVerdict::Failed(vec![Failure::BadRates {
                count: 1,
                first: RateFault::NotANumber
            }])
        );
    }

    #[test]
    fn exit_statuses_read_as_the_live_display_words_them() {
        let words = |code| Failure::ExitStatus(code).to_string();
        assert_eq!(words(ReturnCode::Code(-9)), "killed by signal 9");
        assert_eq!(words(ReturnCode::Code(2)), "exited with status 2");
        assert_eq!(
            words(ReturnCode::Other(json!("ERROR"))),
            "ended with \"ERROR\""
        );
    }

    #[test]
    fn the_judge_follows_the_records_one_at_a_time() {
        let mut judge = ProcessJudge::default();
        judge.observe(&config(&["b"]));
        judge.observe(&start());
        assert_eq!(judge.verdict(), ProcessVerdict::Unfinished(EventName::End));
        judge.observe(&rate(3.0));
        judge.observe(&stop());
        judge.observe(&error("X", "y"));
        judge.observe(&exit(-15));
        assert_eq!(judge.verdict(), ProcessVerdict::EarlyStopped);
        assert_eq!(judge.errors(), ["X: y"]);
        assert_eq!(judge.rate_count(), 1);
        assert!(judge.stop_seen());
    }
}
