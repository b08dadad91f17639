//! `milabench check`: the preflight, in seconds, before hours of work (see
//! [`milabench::CheckOptions`]); this handler prints the table or its JSON.

use milabench::CheckOptions;
use milabench::ExitCode;
use milabench::observe::{Check, Status};
use milabench::settings::{EnvVars, SettingsFlags};

use crate::args::{CheckArgs, CheckFormat};
use crate::output::write_output;
use crate::render::check_table;
use crate::settings::suite_session;

/// Runs the checks and prints the table (or JSON); exit status 1 when one fails.
pub fn run(global: &crate::args::GlobalArgs, args: &CheckArgs) -> crate::errors::Result<ExitCode> {
    let session = match suite_session(
        global,
        &args.suite,
        SettingsFlags::default(),
        None,
        EnvVars::from_process(),
    ) {
        Ok(session) => session,
        // A reader of the JSON gets JSON still: the one failed check, the error as its detail.
        Err(e) if matches!(args.format, CheckFormat::Json) => {
            let failed = Check::problem(Status::Fail, "suite and system", format!("{e:#}"), "");
            write_output(None, &(serde_json::to_string_pretty(&[failed])? + "\n"))?;
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    let checks = session.check(&CheckOptions {
        need_disk_gib: args.need_disk,
        package_index: true,
        program: std::env::current_exe()?,
    })?;
    let text = match args.format {
        CheckFormat::Text => check_table(&checks),
        CheckFormat::Json => serde_json::to_string_pretty(&checks)? + "\n",
    };
    write_output(None, &text)?;
    Ok(if checks.iter().any(|c| c.status == Status::Fail) {
        ExitCode::BenchmarkFailures
    } else {
        ExitCode::Success
    })
}
