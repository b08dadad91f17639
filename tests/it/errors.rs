//! How a failed command is shown and which exit code it ends with, in `milabench` and
//! `benchit` alike: the error, then each of its causes once, and 2 for the user's input, 3 for
//! what the machine would not do.

use std::path::Path;
use std::process::Command;

use crate::common::{milabench, run};

/// `text` with the scratch folder `dir` written `[DIR]`.
fn in_dir(text: &str, dir: &Path) -> String {
    text.replace(&dir.display().to_string(), "[DIR]")
}

#[test]
fn a_suite_file_that_is_a_folder_is_bad_input_and_its_cause_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::create_dir(dir.path().join("suite.yaml")).unwrap();
    let out = run(milabench(dir.path()).args(["resolve", "--config", "suite.yaml"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    insta::assert_snapshot!(in_dir(&out.stderr, dir.path()), @r"
    error: cannot read suite file [DIR]/suite.yaml
      fix: check that the path is right and readable
      caused by: Is a directory (os error 21)
    ");
}

#[test]
fn a_run_folder_that_cannot_be_made_is_an_environment_failure() {
    let project = crate::run::Project::new(
        "good:\n  inherits: _defaults\n  tags: [monogpu]\n  install_group: tiny\n  definition: benchmarks/good\n",
    );
    project.bench("good", &crate::run::reporting(1, 0));
    // The runs folder is a file: the run folder under it cannot be made, as on a disk that
    // refuses to write.
    fs_err::write(project.path().join("base/runs"), "not a folder").unwrap();
    let out = run(&mut project.run_command(&[]));
    assert_eq!(out.code, 3, "{}", out.stderr);
    insta::assert_snapshot!(in_dir(&out.stderr, project.path()), @r"
    error: could not lock [DIR]/base/runs/golden/.milabench.lock; check that the folder is writable and the disk is not full
      caused by: Not a directory (os error 20)
    ");
}

/// `benchit ops` run from `cwd` with a worker that does not exist (none is needed).
fn benchit_ops(cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_benchit"));
    for (key, _) in std::env::vars() {
        if key.starts_with("BENCHIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.current_dir(cwd)
        .env("BENCHIT_WORKER", "/nonexistent/python")
        .env("BENCHIT_HOME", cwd.join("home"))
        .arg("ops")
        .args(args);
    cmd
}

#[test]
fn benchit_says_each_cause_once_with_the_exit_code_of_its_class() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::create_dir(dir.path().join("config.json")).unwrap();
    let out = run(&mut benchit_ops(dir.path(), &["-c", "config.json"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    insta::assert_snapshot!(out.stderr, @r"
    error: cannot read the ops config config.json; check the -c/--config path
      caused by: Is a directory (os error 21)
    ");

    // A dry run (no warm-up, no iteration) whose output folder is a file.
    fs_err::write(dir.path().join("results"), "not a folder").unwrap();
    let range = crate::common::fixtures().join("benchit/range.json");
    let args = ["-c", range.to_str().unwrap(), "-w", "0", "-i", "0"];
    let out = run(benchit_ops(dir.path(), &args).args(["-o", "results/add"]));
    assert_eq!(out.code, 3, "{}", out.stderr);
    insta::with_settings!({filters => vec![(r"add_\d+_\d+\.json", "add_[PID]_[TIME].json")]}, {
        insta::assert_snapshot!(out.stderr, @r"
        error: cannot write the output file results/add_[PID]_[TIME].json; check -o/--output-prefix
          caused by: failed to create directory `results`: File exists (os error 17)
        ");
    });
}
