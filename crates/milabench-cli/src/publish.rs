//! `--publish KEY`: run folders pushed to a milabench dashboard once a `run` or a `report` is
//! complete and written, with a progress line per event of the dashboard's answer.

use std::path::PathBuf;

use crate::errors::Context as _;
use milabench::ExitCode;
use milabench::publish::{
    ArchiveLimits, DEFAULT_DASHBOARD_URL, PublishEvent, PushKey, publish, zip_run_folders,
};

use crate::args::PublishArgs;
use crate::output::note;

/// What `--publish` asks for, checked before the command does its work (a run can take hours).
#[derive(Debug)]
pub struct PublishRequest {
    key: PushKey,
    url: String,
}

impl PublishRequest {
    /// The request of `args`: `None` without `--publish`; an error for an empty key or a
    /// dashboard URL that cannot be used.
    pub fn of(args: &PublishArgs) -> crate::errors::Result<Option<PublishRequest>> {
        let Some(key) = args.publish.as_deref() else {
            return Ok(None);
        };
        let key = PushKey::new(key).context(
            "--publish / MILABENCH_PUBLISH_KEY is empty; give the push key the dashboard issued, or leave --publish out",
        )?;
        let url = args
            .dashboard_url
            .as_deref()
            .map_or(DEFAULT_DASHBOARD_URL, str::trim)
            .trim_end_matches('/')
            .to_owned();
        milabench::publish::check_url(&url)?;
        Ok(Some(PublishRequest { key, url }))
    }

    /// Pushes `folders`; on failure the error is printed and its exit code returned, so that
    /// the caller's own (already complete) result stands beside it.
    pub fn publish(&self, folders: &[PathBuf]) -> ExitCode {
        match self.push(folders) {
            Ok(()) => ExitCode::Success,
            Err(err) => {
                let err = err.context("publishing to the dashboard failed");
                crate::errors::report(&err)
            }
        }
    }

    fn push(&self, folders: &[PathBuf]) -> crate::errors::Result<()> {
        note(&format!(
            "[publish] zipping {} run folder(s)",
            folders.len()
        ));
        let archive = zip_run_folders(folders, ArchiveLimits::DASHBOARD)?;
        note(&format!(
            "[publish] archive: {} files, {}; uploading to {}",
            archive.entries(),
            size(archive.len()),
            self.url
        ));
        let publication = publish(&archive, &self.key, &self.url, |event| {
            note(&progress_line(event));
        })?;
        note(&format!(
            "[publish] published {} run(s), {} benchmark(s) to {}",
            publication.runs.len(),
            publication.benchmarks,
            self.url
        ));
        Ok(())
    }
}

/// `bytes` in KiB, or in MiB from 1 MiB on.
fn size(bytes: usize) -> String {
    let kib = bytes as f64 / 1024.0;
    if kib < 1024.0 {
        format!("{kib:.1} KiB")
    } else {
        format!("{:.1} MiB", kib / 1024.0)
    }
}

/// The line printed for an event of the dashboard's answer.
fn progress_line(event: &PublishEvent) -> String {
    match event {
        PublishEvent::Info {
            message,
            contributor,
        } => format!("[publish] {message} (contributor: {contributor})"),
        PublishEvent::Run { name, benchmarks } => {
            format!("[publish] run {name} ({benchmarks} benchmarks)")
        }
        PublishEvent::Bench { name } => format!("[publish]   storing {name}"),
        PublishEvent::BenchDone { name, events } => {
            format!("[publish]   stored {name} ({events} events)")
        }
        PublishEvent::BenchError { name, error } => {
            format!("[publish]   could not store {name}: {error}")
        }
        PublishEvent::Done { message } => format!("[publish] {message}"),
    }
}

/// Publishes `folders` when asked (`publication`), once a command ended with `code` (not when
/// it was interrupted: a run stopped by Ctrl-C is not pushed); the worse of the two exit codes.
pub fn publish_after(
    code: ExitCode,
    publication: Option<&PublishRequest>,
    folders: &[PathBuf],
) -> ExitCode {
    match publication {
        Some(publication) if code != ExitCode::Interrupted => {
            code.worst(publication.publish(folders))
        }
        _ => code,
    }
}
