//! `milabench bundle`: download what the selected install groups need into a wheelhouse, for
//! offline installs.

use milabench::install::{BundleTarget, Sources};
use milabench::settings::Installer;
use milabench::{BundleOptions, ExitCode, InstallOptions};

use crate::args::{BundleArgs, GlobalArgs};
use crate::render::install::{Progress, say};
use crate::settings::{install_session, installer};

/// Fills the wheelhouse; one line per group, then how to use it.
pub fn run(global: &GlobalArgs, args: &BundleArgs) -> crate::errors::Result<ExitCode> {
    let session = install_session(global, &args.suite, &args.env, installer(args.installer))?;
    let cwd = camino::Utf8PathBuf::try_from(std::env::current_dir()?)
        .map_err(|e| crate::errors::usage!("the current folder is not valid UTF-8: {e}"))?;
    let dest = cwd.join(&args.output);
    let options = BundleOptions {
        install: InstallOptions {
            variant: args.variant.clone(),
            sources: Sources {
                find_links: args.find_links.iter().map(|d| cwd.join(d)).collect(),
                offline: false,
            },
            ..InstallOptions::default()
        },
        dest: dest.clone(),
        target: BundleTarget {
            python_version: args.python_version.clone(),
            platforms: args.platform.clone(),
        },
        with_uv: session.settings().installer == Installer::Uv,
    };
    let mut progress = Progress::new();
    let summary = session.bundle(&options, &mut progress)?;
    progress.done();
    let mut exit = ExitCode::Success;
    for (group, result) in &summary.results {
        match result {
            Ok(bundled) => say(&format!("{group}: downloaded into {}", bundled.dest)),
            Err(e) => {
                say(&format!("{group}: FAILED"));
                crate::errors::show(e);
                if exit == ExitCode::Success {
                    exit = e.exit_code();
                }
            }
        }
    }
    if summary.success() {
        say(&format!(
            "bundle: {} download(s) into {dest}; on the offline machine: milabench install --offline --find-links {dest}",
            summary.results.len()
        ));
    }
    Ok(exit)
}
