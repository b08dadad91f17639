//! The `.data` line format, defined once: the keys of a record line, the event names and what
//! each event's payload carries, the field names of those payloads, and the lenient rules by
//! which values are read. Every reader and writer of these lines spells a key or applies a rule
//! through this module only: the typed events ([`crate::Record`]), both paths of the decoder
//! (serde and the byte scanner) and the writer. A change of the format is one edit here, and the
//! parity tests of the decoder's paths enumerate these tables.
//!
//! A line is one JSON object, `{"event": <name>, "data": <payload>, "pipe": <pipe>}`
//! ([`RecordKey`]); [`EventName`] says which payload each event carries. Numbers follow
//! [`non_finite`] (Python's `NaN`/`Infinity`/`-Infinity`, bare in the file, quoted once the
//! reader repaired the line) and the pair rule (a pair is an array of exactly two numbers); a
//! value of another shape than its field expects is not an error, only not that field.

use serde_json::Value;

/// Defines an enum of the names one part of a line may hold, with their spellings: `as_str`
/// gives the spelling, `parse` the name a spelling stands for (the decoders' one lookup, as fast
/// as a `match` on the literals), and `ALL` lists every name, for tests that enumerate the table.
macro_rules! spellings {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $spelling:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$variant_meta])* $variant, )+
        }

        impl $name {
            /// Every name of the table, in the order the writer puts them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spelling in a line.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $spelling, )+
                }
            }

            /// The name spelled `text` (the bytes of a key or string as they appear in the line,
            /// without escapes); `None` for any other text.
            // The spellings become constants named as the names, so that one `match` on them
            // compiles as a `match` on byte-string literals would. Always inlined: the decoder's
            // fast path looks up every key of every line, and a call costs as much as the lookup.
            #[allow(non_upper_case_globals)]
            #[inline(always)]
            pub fn parse(text: &[u8]) -> Option<$name> {
                $( const $variant: &[u8] = $spelling.as_bytes(); )+
                match text {
                    $( $variant => Some($name::$variant), )+
                    _ => None,
                }
            }
        }
    };
}

spellings! {
    /// The keys of a record line; any other top-level key is kept as an extra key.
    pub enum RecordKey {
        /// The event name, a string (a line without one is not a record).
        Event = "event",
        /// The payload, whose shape [`EventName`] gives.
        Data = "data",
        /// The channel that carried the event ([`PipeName`]), or `null` for the orchestrator.
        Pipe = "pipe",
    }
}

spellings! {
    /// The keys of a control line on a benchmark's data channel (what voir writes, before the
    /// orchestrator records it as an event); any other line there is a `data` payload.
    pub enum ControlKey {
        /// The event name.
        Event = "$event",
        /// The payload.
        Data = "$data",
    }
}

spellings! {
    /// The events of the stream, each with the payload it carries. A known event whose payload
    /// has another shape is read as an unknown event (never an error).
    pub enum EventName {
        /// Any value: the resolved configuration of the benchmark.
        Config = "config",
        /// Any value: machine metadata.
        Meta = "meta",
        /// An object of [`StartKey`] fields; its `command`, when present, passes [`is_command`].
        Start = "start",
        /// An object of exactly one [`PhaseKey::Name`], a string.
        Phase = "phase",
        /// An object of [`DataKey`] fields (a measurement).
        Data = "data",
        /// A string: a line of stdout or stderr.
        Line = "line",
        /// An object of [`ErrorKey`] fields.
        Error = "error",
        /// An object of [`ErrorKey`] fields (an error inside a voir instrument).
        OverseerError = "overseer_error",
        /// An object of [`FormatErrorKey`] fields.
        FormatError = "format_error",
        /// `null` ([`is_stop`]): the benchmark asked to stop early.
        Stop = "stop",
        /// An object of [`EndKey`] fields; `return_code` read by [`exit_status`].
        End = "end",
        /// An object of exactly one [`MessageKey::Message`], a string.
        Message = "message",
    }
}

spellings! {
    /// The names of the `pipe` field.
    pub enum PipeName {
        /// The benchmark's data channel.
        Data = "data",
        /// The process's standard output.
        Stdout = "stdout",
        /// The process's standard error.
        Stderr = "stderr",
    }
}

spellings! {
    /// The fields of a `data` payload that readers know; any other key is kept as read.
    pub enum DataKey {
        /// A string: `train` ([`TRAIN_TASK`]), `early_stop`, `main` (monitors), ...
        Task = "task",
        /// A number: time stamp of the sample, seconds since the epoch.
        Time = "time",
        /// A number: throughput, in `units`.
        Rate = "rate",
        /// A string: the unit of `rate`.
        Units = "units",
        /// A number: the training loss.
        Loss = "loss",
        /// A pair of numbers: `[current, total]`.
        Progress = "progress",
        /// An object of samples ([`SampleKey`]) by GPU device id.
        Gpudata = "gpudata",
        /// A sample ([`SampleKey`]) of the machine's CPU and memory.
        Cpudata = "cpudata",
        /// A sample ([`SampleKey`]) of the benchmark's process tree.
        Process = "process",
        /// An object by GPU device id of `{"joules", "seconds"}`: the energy the device's own
        /// counter (NVML's) counted while the process ran, sent once when it ends.
        GpuEnergy = "gpu_energy",
    }
}

spellings! {
    /// The fields of a monitor sample (`gpudata` per device, `cpudata`, `process`).
    pub enum SampleKey {
        /// A pair of numbers: `[used, total]` (MiB for a GPU, bytes otherwise).
        Memory = "memory",
        /// A number: utilisation (0 to 1 for a GPU, percent for a CPU).
        Load = "load",
        /// A number: degrees Celsius (GPU).
        Temperature = "temperature",
        /// A number: watts (GPU).
        Power = "power",
    }
}

spellings! {
    /// The fields of a `start` payload.
    pub enum StartKey {
        /// The command line, a list of strings.
        Command = "command",
        /// A number: seconds since the epoch.
        Time = "time",
    }
}

spellings! {
    /// The fields of an `end` payload.
    pub enum EndKey {
        /// The command line, any value.
        Command = "command",
        /// A number: seconds since the epoch.
        Time = "time",
        /// The exit status ([`exit_status`]), or `"ERROR"` when the orchestrator's loop crashed.
        ReturnCode = "return_code",
    }
}

spellings! {
    /// The fields of an `error` or `overseer_error` payload.
    pub enum ErrorKey {
        /// A string: the exception class.
        Type = "type",
        /// A string: the exception message.
        Message = "message",
        /// A string: the formatted traceback.
        Trace = "trace",
    }
}

spellings! {
    /// The fields of a `format_error` payload.
    pub enum FormatErrorKey {
        /// A string: the raw line, newline included.
        Line = "line",
        /// A string: the decoding error class.
        Type = "type",
        /// A string: the decoder's message.
        Message = "message",
    }
}

spellings! {
    /// The one field of a `phase` payload.
    pub enum PhaseKey {
        /// A string: the phase name.
        Name = "name",
    }
}

spellings! {
    /// The one field of a `message` payload.
    pub enum MessageKey {
        /// A string: the message.
        Message = "message",
    }
}

/// The task of training samples, whose `rate` and `loss` are the benchmark's figures.
pub const TRAIN_TASK: &str = "train";

/// The task of a serving benchmark's step summaries (`milabench-load`): one per step, with the
/// step's latency percentiles, throughputs, goodput and verdict.
pub const LOAD_TASK: &str = "load";

/// The task of a serving benchmark's requests (`milabench-load`): one per request, with its
/// latencies, tokens and error.
pub const REQUEST_TASK: &str = "request";

/// The part of a process tag (`config.tag`) that keeps the process out of reports: the remote
/// ranks of a multi-node job.
pub const NOLOG_TAG: &str = "nolog";

/// The `type` of the `error` event that records an interruption of the run (Ctrl-C), Python's
/// name for it.
pub const INTERRUPT_ERROR: &str = "KeyboardInterrupt";

/// Python's spellings of the non-finite floats, bare tokens in the lines it writes (`json.dumps`)
/// and strings once the reader has quoted them for a strict JSON parser.
pub const NON_FINITE: [(&str, f64); 3] = [
    ("NaN", f64::NAN),
    ("Infinity", f64::INFINITY),
    ("-Infinity", f64::NEG_INFINITY),
];

/// The number a non-finite spelling of [`NON_FINITE`] stands for; `None` for any other text (a
/// string is a number only when it is one of these).
pub fn non_finite(text: &str) -> Option<f64> {
    NON_FINITE
        .iter()
        .find(|(spelling, _)| *spelling == text)
        .map(|&(_, x)| x)
}

/// Python's spelling of the non-finite `x`; `None` when `x` is finite.
pub fn non_finite_spelling(x: f64) -> Option<&'static str> {
    NON_FINITE
        .iter()
        .find(|&&(_, y)| y.to_bits() == x.to_bits() || (x.is_nan() && y.is_nan()))
        .map(|&(spelling, _)| spelling)
}

/// The exit status an `end` event's `return_code` gives: an integer; `None` for any other value.
pub fn exit_status(return_code: &Value) -> Option<i64> {
    return_code.as_i64()
}

/// Whether a `start` event's `command` has its shape, a list of strings (a `start` whose command
/// has another shape is not read as a start).
pub fn is_command(command: &Value) -> bool {
    command
        .as_array()
        .is_some_and(|words| words.iter().all(Value::is_string))
}

/// Whether a `stop` event's payload has its shape: `null` (absent reads as `null`).
pub fn is_stop(payload: &Value) -> bool {
    payload.is_null()
}

/// The string of a payload made of one field, `key` (`phase` and `message` events): `None` for
/// any other shape, extra fields included.
pub fn only_string<'a>(payload: &'a Value, key: &str) -> Option<&'a str> {
    match payload {
        Value::Object(map) if map.len() == 1 => map.get(key)?.as_str(),
        _ => None,
    }
}

/// The words between a benchmark's name and the condition in the `message` a run records, as
/// `<name>.data`, for a benchmark it skipped because the system does not meet a condition of its
/// `requires_capabilities` (the Python tool's wording, so that each tool reads the other's).
const SKIP_WORDS: &str = " because the following capability is not satisfied: ";

/// The `message` that records the skip of benchmark `name` for its unmet `condition`.
pub fn skip_message(name: &str, condition: &str) -> String {
    format!("Skip {name}{SKIP_WORDS}{condition}")
}

/// The benchmark whose skip `message` records ([`skip_message`]), if it is one.
pub fn skipped_bench(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("Skip ")?;
    let (name, _) = rest.split_once(SKIP_WORDS)?;
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_message_names_its_benchmark() {
        let text = skip_message("llm-nodes", "len(nodes) >= 2");
        assert_eq!(
            text,
            "Skip llm-nodes because the following capability is not satisfied: len(nodes) >= 2"
        );
        assert_eq!(skipped_bench(&text), Some("llm-nodes"));
        assert_eq!(skipped_bench("Skip this step"), None);
        assert_eq!(skipped_bench("early stop at 60 steps"), None);
    }

    /// Checks that every name of a table is read back from its spelling, and that no two names
    /// share one.
    fn check_table<T: Copy + PartialEq + std::fmt::Debug>(
        all: &[T],
        as_str: fn(T) -> &'static str,
        parse: fn(&[u8]) -> Option<T>,
    ) {
        for &name in all {
            assert_eq!(parse(as_str(name).as_bytes()), Some(name), "{name:?}");
            let same: Vec<T> = all
                .iter()
                .copied()
                .filter(|&other| as_str(other) == as_str(name))
                .collect();
            assert_eq!(same, [name], "one spelling, one name");
        }
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"no such name"), None);
    }

    #[test]
    fn every_spelling_reads_back_as_its_name() {
        check_table(RecordKey::ALL, RecordKey::as_str, RecordKey::parse);
        check_table(ControlKey::ALL, ControlKey::as_str, ControlKey::parse);
        check_table(EventName::ALL, EventName::as_str, EventName::parse);
        check_table(PipeName::ALL, PipeName::as_str, PipeName::parse);
        check_table(DataKey::ALL, DataKey::as_str, DataKey::parse);
        check_table(SampleKey::ALL, SampleKey::as_str, SampleKey::parse);
        check_table(StartKey::ALL, StartKey::as_str, StartKey::parse);
        check_table(EndKey::ALL, EndKey::as_str, EndKey::parse);
        check_table(ErrorKey::ALL, ErrorKey::as_str, ErrorKey::parse);
        check_table(
            FormatErrorKey::ALL,
            FormatErrorKey::as_str,
            FormatErrorKey::parse,
        );
        check_table(PhaseKey::ALL, PhaseKey::as_str, PhaseKey::parse);
        check_table(MessageKey::ALL, MessageKey::as_str, MessageKey::parse);
        // Spellings are compared as written: no case folding, no prefixes.
        assert_eq!(DataKey::parse(b"Rate"), None);
        assert_eq!(DataKey::parse(b"rat"), None);
    }

    #[test]
    fn non_finite_spellings_and_numbers_go_both_ways() {
        for (spelling, x) in NON_FINITE {
            let read = non_finite(spelling).unwrap();
            assert!(read.to_bits() == x.to_bits() || (read.is_nan() && x.is_nan()));
            assert_eq!(non_finite_spelling(x), Some(spelling));
        }
        assert_eq!(non_finite_spelling(-f64::NAN), Some("NaN"));
        assert_eq!(non_finite_spelling(1.5), None);
        for text in ["nan", "inf", "+Infinity", "1", ""] {
            assert_eq!(non_finite(text), None, "{text}");
        }
    }

    #[test]
    fn value_rules() {
        use serde_json::json;
        assert_eq!(exit_status(&json!(-15)), Some(-15));
        assert_eq!(exit_status(&json!(0.0)), None);
        assert_eq!(exit_status(&json!("ERROR")), None);
        assert!(is_command(&json!(["voir", "main.py"])));
        assert!(is_command(&json!([])));
        assert!(!is_command(&json!(["voir", 3])));
        assert!(!is_command(&json!("voir main.py")));
        assert!(is_stop(&Value::Null));
        assert!(!is_stop(&json!({})));
    }
}
