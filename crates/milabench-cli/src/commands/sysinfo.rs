//! `milabench sysinfo`: what this machine is, as text or JSON.

use milabench::ExitCode;
use milabench::settings::EnvVars;
use milabench::system::{SystemFacts, discover};

use crate::args::{GlobalArgs, SysinfoArgs, SysinfoFormat};
use crate::output::{warn, write_output};
use crate::settings::load_settings;

/// Collects the facts (GPU backend per `MILABENCH_GPU_ARCH`, else detected) and prints them.
pub fn run(global: &GlobalArgs, args: &SysinfoArgs) -> crate::errors::Result<ExitCode> {
    let env = EnvVars::from_process();
    let settings = load_settings(global, None, &env)?;
    let gpus = discover(settings.arch.as_ref().map(|a| a.as_str()));
    let facts = SystemFacts::collect(&gpus, true)?;
    for problem in &facts.problems {
        warn(problem);
    }
    let text = match args.format {
        SysinfoFormat::Text => facts.text(),
        SysinfoFormat::Json => {
            let mut t = serde_json::to_string_pretty(&facts.to_json())?;
            t.push('\n');
            t
        }
    };
    write_output(None, &text)?;
    Ok(ExitCode::Success)
}
