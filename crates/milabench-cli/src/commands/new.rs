//! `milabench new NAME`: scaffold a benchmark folder and say what to do next.

use std::io::Write;

use milabench::ExitCode;

use crate::args::NewArgs;

/// Runs the command.
pub fn run(args: &NewArgs) -> crate::errors::Result<ExitCode> {
    let files = milabench::new_benchmark(&args.dest, &args.name)?;
    let folder = args.dest.join(&args.name);
    let mut out = std::io::stdout().lock();
    writeln!(out, "created {} ({} files)", folder.display(), files.len())?;
    writeln!(out, "next:")?;
    writeln!(
        out,
        "  1. edit {}/main.py (the work) and requirements.in (its packages)",
        folder.display()
    )?;
    writeln!(
        out,
        "  2. add it to a suite (snippet in {}/README.md)",
        folder.display()
    )?;
    writeln!(
        out,
        "  3. milabench run --config SUITE.yaml --select {} --dry-run",
        args.name
    )?;
    Ok(ExitCode::Success)
}
