//! `benchit benchmark`: discover, build and time the models of scripts. (Being built: issue 8.)

use std::process::ExitCode;

use clap::Args;

/// Arguments of `benchit benchmark`.
#[derive(Debug, Args)]
pub(crate) struct BenchmarkArgs {
    /// Python scripts (`script.py`, `script.py::HASH,HASH`) or ONNX files.
    #[arg(required = true)]
    inputs: Vec<String>,
}

/// Runs `benchit benchmark`.
pub(crate) fn run(args: BenchmarkArgs) -> ExitCode {
    crate::cli::not_yet("model benchmarking", &args.inputs)
}
