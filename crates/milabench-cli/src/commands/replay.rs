//! `milabench replay`: the validation report of a recorded event stream.

use milabench::ExitCode;
use milabench::observe::LayerName;
use milabench::replay::{Validation, ValidationContext, replay_entries};

use crate::args::ReplayArgs;
use crate::output::{warn, write_output};

/// Replays the stream through the layers and prints their report.
pub fn run(args: &ReplayArgs) -> crate::errors::Result<ExitCode> {
    let names = LayerName::selection(&args.validations)?;
    let path = args.path.as_ref().or(args.folder.as_ref()).ok_or_else(|| {
        crate::errors::usage!("replay needs the event file or run folder to read")
    })?;
    let replay = replay_entries(path.as_std_path())?;
    for warning in replay.problems.warnings() {
        warn(&warning);
    }
    let mut validation = Validation::new(
        &names,
        &ValidationContext {
            gpu_count: args.gpus,
        },
    );
    validation.observe_replay(&replay.entries);
    let report = validation.finish();
    write_output(None, &format!("{path}\n{}", report.text))?;
    Ok(if report.passed() {
        ExitCode::Success
    } else {
        ExitCode::BenchmarkFailures
    })
}
