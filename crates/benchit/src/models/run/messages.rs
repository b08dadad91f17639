//! Sentences about a script's failure (its error, its last words) and about a device this
//! machine lacks.

use crate::models::options::{Device, Runtime};

/// How the worker's message for a script that failed to download something begins.
const DOWNLOAD_FAILURE: &str = "the script tried to download ";

/// One line for a `script_error`: `the script raised Kind: message` (the worker's message may
/// already start with the kind), or the message alone where the worker wrote a sentence about
/// the script (`SystemExit`'s status, a download it tried: [`DOWNLOAD_FAILURE`]).
pub(super) fn script_error_message(error: &crate::models::protocol::ScriptError) -> String {
    let message = error
        .message
        .strip_prefix(&format!("{}: ", error.kind))
        .unwrap_or(&error.message);
    if error.kind == "SystemExit" || message.starts_with(DOWNLOAD_FAILURE) {
        message.to_string()
    } else {
        format!("the script raised {}: {message}", error.kind)
    }
}

/// What a script that exited with an error status last printed (its output goes to `log`),
/// as `: <line>`, and for a command-line error (argparse's `error:` line, click's `Error:`)
/// how to give the script its arguments (`given`: whether some were); empty when it printed
/// nothing.
pub(super) fn exit_explained(log: &std::path::Path, given: bool) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let Some(last) = text.lines().map(str::trim).rfind(|l| !l.is_empty()) else {
        return String::new();
    };
    let usage = text.lines().any(|l| {
        let l = l.trim_start().to_ascii_lowercase();
        l.starts_with("usage:")
    });
    let command_line = usage && (last.contains(": error: ") || last.starts_with("Error: "));
    let mut out = format!(": {}", excerpt(last, 240));
    if command_line && given {
        out.push_str("; check the arguments given with --script-args");
    } else if command_line {
        out.push_str("; give the script its arguments with --script-args \"...\"");
    }
    out
}

/// `text` cut to at most `max` characters, with `…` where it was cut.
fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Why `device` cannot run here, if it cannot: `nvidia` needs an NVIDIA GPU.
pub(crate) fn device_problem(device: Device, runtimes: &[Runtime]) -> Option<String> {
    let wants_gpu = device == Device::Nvidia || runtimes.iter().any(|r| r.needs_gpu());
    if !wants_gpu {
        return None;
    }
    let (gpus, _) = milabench_system::discover(Some("cuda")).devices();
    gpus.is_empty().then(|| {
        "needs a GPU: --device nvidia (and trt) run on an NVIDIA GPU, and none was found on this machine; use --device x86".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::protocol::ScriptError;

    #[test]
    fn script_errors_read_as_one_line() {
        let error = |kind: &str, message: &str| ScriptError {
            kind: kind.into(),
            message: message.into(),
            traceback: None,
        };
        assert_eq!(
            script_error_message(&error(
                "SyntaxError",
                "SyntaxError: invalid syntax (a.py, line 4)"
            )),
            "the script raised SyntaxError: invalid syntax (a.py, line 4)"
        );
        assert_eq!(
            script_error_message(&error("ValueError", "bad")),
            "the script raised ValueError: bad"
        );
        assert_eq!(
            script_error_message(&error("SystemExit", "the script exited with status 3")),
            "the script exited with status 3"
        );
        let download = "the script tried to download with torch.hub, and this machine cannot reach it (gaierror: ...)";
        assert_eq!(script_error_message(&error("URLError", download)), download);
        // A script's own message that happens to read like the worker's is still its own.
        assert_eq!(
            script_error_message(&error("ValueError", "the script gave up")),
            "the script raised ValueError: the script gave up"
        );
    }

    #[test]
    fn an_exit_status_comes_with_the_scripts_last_words() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("script.log");
        assert_eq!(exit_explained(&log, false), "", "no log");
        std::fs::write(
            &log,
            "usage: train.py [-h] --width WIDTH\n\
             train.py: error: the following arguments are required: --width\n\n",
        )
        .unwrap();
        assert_eq!(
            exit_explained(&log, false),
            ": train.py: error: the following arguments are required: --width; give the script \
             its arguments with --script-args \"...\""
        );
        assert!(
            exit_explained(&log, true).ends_with("; check the arguments given with --script-args")
        );
        std::fs::write(&log, "loading\nout of data, giving up\n").unwrap();
        assert_eq!(exit_explained(&log, false), ": out of data, giving up");
        std::fs::write(&log, "x".repeat(300)).unwrap();
        assert_eq!(exit_explained(&log, false).chars().count(), 2 + 240 + 1);
    }
}
