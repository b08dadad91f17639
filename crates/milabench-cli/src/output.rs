//! What the command line prints besides command results: warnings and errors on stderr.

/// Prints a warning on stderr.
#[allow(clippy::print_stderr)]
pub fn warn(message: &str) {
    eprintln!("warning: {message}");
}

/// Writes a command's result to `path`, or to stdout when there is none.
#[allow(clippy::print_stdout)]
pub fn write_output(path: Option<&camino::Utf8Path>, text: &str) -> crate::errors::Result<()> {
    use crate::errors::Context as _;
    use std::io::Write as _;
    match path {
        Some(path) => std::fs::write(path, text).with_context(|| {
            format!("could not write {path}; check the folder exists and is writable")
        }),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .context("could not write to stdout")
        }
    }
}

/// Prints an informational line on stderr.
#[allow(clippy::print_stderr)]
pub fn note(message: &str) {
    eprintln!("{message}");
}

/// Writes a result computed from `runs` (the run folders or `.data` files read) as
/// [`write_output`] does, refusing an output file that would overwrite what it was computed from.
pub fn write_report_output(
    path: Option<&camino::Utf8Path>,
    text: &str,
    runs: &[String],
) -> crate::errors::Result<()> {
    if let Some(path) = path {
        check_output_outside_runs(path, runs)?;
    }
    write_output(path, text)
}

/// Refuses an output file that is a `.data` file of `runs` (by any path: links, hard links),
/// or any file of a run folder (a folder holding `.data` files) but the reports a run writes
/// there (`report.html`, `report.txt`): its other files are `milabench run`'s.
fn check_output_outside_runs(
    output: &camino::Utf8Path,
    runs: &[String],
) -> crate::errors::Result<()> {
    use milabench_vocab::run_files::{REPORT_PAGE, REPORT_TEXT};
    use std::ffi::OsStr;
    use std::os::unix::fs::MetadataExt as _;
    let fix = format!(
        "write the output elsewhere (into a run folder, only its {REPORT_PAGE} or {REPORT_TEXT}: its other files are `milabench run`'s)"
    );
    if let Ok(meta) = std::fs::metadata(output) {
        let discovery = milabench::results::discover_data_files(runs)?;
        if let Some(read) = discovery.files.iter().find(|file| {
            std::fs::metadata(&file.path)
                .is_ok_and(|m| (m.dev(), m.ino()) == (meta.dev(), meta.ino()))
        }) {
            crate::errors::bail!(
                "refusing to write {output}: it is {}, one of the event files being read; {fix}",
                read.path.display()
            );
        }
    }
    // The folder the file lands in, links resolved (a missing folder fails when writing).
    let target = std::fs::canonicalize(output).ok().or_else(|| {
        let parent = output.parent().filter(|p| !p.as_str().is_empty());
        std::fs::canonicalize(parent.map_or(".".as_ref(), |p| p.as_std_path()))
            .ok()
            .map(|p| p.join(output.file_name().unwrap_or_default()))
    });
    let Some(folder) = target.as_deref().and_then(std::path::Path::parent) else {
        return Ok(());
    };
    let holds_data = std::fs::read_dir(folder).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "data"))
    });
    let run_report = target
        .as_deref()
        .and_then(std::path::Path::file_name)
        .is_some_and(|name| [REPORT_PAGE, REPORT_TEXT].map(OsStr::new).contains(&name));
    if holds_data && !run_report {
        crate::errors::bail!(
            "refusing to write {output}: {} is a run folder (it holds `.data` files); {fix}",
            folder.display()
        );
    }
    Ok(())
}
