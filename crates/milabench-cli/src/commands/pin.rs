//! `milabench pin`: compile each install group's requirements into pinned files per variant.

use milabench::settings::Installer;
use milabench::{ExitCode, InstallOptions};

use crate::args::{GlobalArgs, PinArgs};
use crate::render::install::{Progress, say};
use crate::settings::install_session;

/// Pins the selected groups.
pub fn run(global: &GlobalArgs, args: &PinArgs) -> crate::errors::Result<ExitCode> {
    let mut progress = Progress::new();
    // Pinning always compiles with uv, whatever installer the environments use.
    let session = install_session(global, &args.suite, &args.env, Some(Installer::Uv))?;
    let options = InstallOptions {
        variant: args.variant.clone(),
        ..InstallOptions::default()
    };
    let setup = session.environments(&options, &mut progress)?;
    progress.done();
    let variant = args
        .variant
        .clone()
        .unwrap_or_else(|| session.resolved().arch.clone());
    for group in &setup.groups {
        progress.start(&group.name);
        let result = setup
            .envs
            .pin(group, &variant, &mut |event| progress.event(event));
        progress.done();
        let pinned = result?;
        if let Some(lock) = &pinned.group_lock {
            say(&format!("{}: group lock {lock}", group.name));
        }
        for file in &pinned.files {
            say(&format!("{}: wrote {file}", group.name));
        }
    }
    say(&format!(
        "pin: {} group(s) pinned for `{variant}`; `milabench install` uses these files",
        setup.groups.len()
    ));
    Ok(ExitCode::Success)
}
