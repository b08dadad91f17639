//! `milabench db import|list|export`: the results database.

use milabench::ExitCode;
use milabench::store::{ImportOptions, ImportOutcome};
use serde::Serialize;

use crate::args::{DbCommand, DbExportArgs, DbImportArgs, DbListArgs, GlobalArgs};
use crate::output::{note, write_output};
use crate::table::Table;

/// Runs a `db` command.
pub fn run(global: &GlobalArgs, command: &DbCommand) -> crate::errors::Result<ExitCode> {
    match command {
        DbCommand::Import(args) => import(global, args),
        DbCommand::List(args) => list(global, args),
        DbCommand::Export(args) => export(global, args),
    }
}

/// One imported folder, as printed.
#[derive(Serialize)]
struct Imported {
    folder: String,
    run: String,
    outcome: &'static str,
    processes: Option<usize>,
}

fn import(global: &GlobalArgs, args: &DbImportArgs) -> crate::errors::Result<ExitCode> {
    let mut store = crate::database::open(global)?;
    let options = ImportOptions {
        namespace: args.namespace.clone(),
        ..ImportOptions::default()
    };
    let mut done = Vec::new();
    // A folder of runs (`<base>/runs`) is each of its runs, as `report` reads one.
    let mut folders = Vec::new();
    for folder in &args.folders {
        let runs = milabench::store::run_folders(folder.as_std_path());
        if runs.len() > 1 {
            note(&format!(
                "{folder} is a folder of {} runs: each is imported as its own run",
                runs.len()
            ));
        }
        folders.extend(runs.into_iter().map(|run| run.display().to_string()));
    }
    // A folder that cannot be imported is said and the others are imported all the same; a
    // line per folder when there are several: one alone is the whole command.
    let mut failed = 0;
    let mut steps =
        (folders.len() > 1).then(|| crate::steps::Steps::new("importing", folders.len()));
    for folder in &folders {
        if let Some(steps) = &mut steps {
            steps.start(folder);
        }
        let outcome = match store.import_folder(std::path::Path::new(folder), &options) {
            Ok(outcome) => outcome,
            Err(e) => {
                failed += 1;
                let err =
                    crate::errors::CliError::from(e).context(format!("could not import {folder}"));
                crate::errors::show(&err);
                continue;
            }
        };
        let (run, outcome, processes) = match outcome {
            ImportOutcome::Added { name, packs } => (name, "added", Some(packs)),
            ImportOutcome::Replaced { name, packs } => (name, "replaced", Some(packs)),
            ImportOutcome::Unchanged { name } => (name, "unchanged", None),
        };
        if let Some(steps) = &mut steps {
            steps.done();
        }
        done.push(Imported {
            folder: folder.clone(),
            run,
            outcome,
            processes,
        });
    }
    drop(steps);
    let table = Table {
        columns: &["run", "outcome", "processes", "folder"],
        rows: done
            .iter()
            .map(|d| {
                vec![
                    d.run.clone(),
                    d.outcome.to_owned(),
                    d.processes.map_or_else(String::new, |n| n.to_string()),
                    d.folder.clone(),
                ]
            })
            .collect(),
        items: &done,
    };
    write_output(None, &table.render(args.format)?)?;
    Ok(if failed == 0 {
        ExitCode::Success
    } else {
        ExitCode::BadInput
    })
}

fn list(global: &GlobalArgs, args: &DbListArgs) -> crate::errors::Result<ExitCode> {
    let mut store = crate::database::open_existing(global)?;
    let runs = store.runs()?;
    let table = Table {
        columns: &crate::database::RUN_COLUMNS,
        rows: runs.iter().map(crate::database::run_cells).collect(),
        items: &runs,
    };
    write_output(None, &table.render(args.format)?)?;
    Ok(ExitCode::Success)
}

fn export(global: &GlobalArgs, args: &DbExportArgs) -> crate::errors::Result<ExitCode> {
    let mut store = crate::database::open_existing(global)?;
    let mut text = String::new();
    for row in store.export_run(&args.run)? {
        text += &serde_json::to_string(&row)?;
        text.push('\n');
    }
    write_output(args.output.as_deref(), &text)?;
    Ok(ExitCode::Success)
}
