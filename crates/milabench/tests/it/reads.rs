//! One resolution reads each input once: for the whole of `milabench run` (the preflight,
//! `--dry-run`'s plan, the run and its report), the arch is detected once, the system file read
//! once, the GPUs looked for once, each benchmark folder's `benchfile.yaml` read once, one
//! planning context made, and each `.data` file read once for the one report the results store,
//! the run folder's files and the sizer (`sizer.save`) share. The counts are this process's (nextest runs each test in
//! a process of its own).

use milabench::{RunRequest, Session, SessionRequest};
use milabench_config::benchfile::benchfile_reads;
use milabench_config::settings::env_vars::MILABENCH_SIZER_SAVE;
use milabench_config::settings::{EnvVars, Settings, SettingsFlags};
use milabench_config::system::system_file_reads;
use milabench_report::data_file_reads;
use milabench_system::discoveries;

/// The schedules a run told its observer.
#[derive(Default)]
struct Schedules(Vec<Vec<String>>);

impl milabench::observe::ExecObserver for Schedules {}

impl milabench::observe::RunObserver for Schedules {
    fn on_run_event(&mut self, event: milabench::observe::RunEvent<'_>) {
        if let milabench::observe::RunEvent::Schedule { benches } = event {
            self.0
                .push(benches.iter().map(|b| b.name.clone()).collect());
        }
    }
}

/// A benchmark writing a few rates on the data channel.
const MAIN: &str = "import json, os\nout = os.fdopen(int(os.environ['DATA_FD']), 'w', buffering=1)\nfor i in range(5):\n    out.write(json.dumps({'task': 'train', 'rate': 10.0 + i, 'units': 'items/s'}) + '\\n')\n";

/// A suite of two benchmarks of one install group (its environment made by hand) on a system
/// of one CUDA node, in `scratch`: its settings and environment (`sizer.save` set when
/// `save_sizes`).
fn two_benchmarks(scratch: &tempfile::TempDir, save_sizes: bool) -> (Settings, EnvVars) {
    let root = camino::Utf8Path::from_path(scratch.path()).expect("utf8");
    let mut suite = String::new();
    for name in ["one", "two"] {
        let folder = root.join("benchmarks").join(name);
        std::fs::create_dir_all(&folder).expect("mkdir");
        std::fs::write(folder.join("main.py"), MAIN).expect("write");
        std::fs::write(folder.join("benchfile.yaml"), "launcher: python\n").expect("write");
        suite.push_str(&format!(
            "{name}:\n  inherits: _defaults\n  install_group: tiny\n  weight: 1\n  max_duration: 60\n  definition: benchmarks/{name}\n"
        ));
    }
    std::fs::write(root.join("suite.yaml"), suite).expect("write");
    std::fs::write(
        root.join("system.yaml"),
        "system:\n  arch: cuda\n  nodes:\n    - name: local\n      ip: 127.0.0.1\n      main: true\n      user: root\n",
    )
    .expect("write");
    let venv_bin = root.join("base/venv/tiny/bin");
    std::fs::create_dir_all(&venv_bin).expect("mkdir");
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("python3");
    std::os::unix::fs::symlink(python, venv_bin.join("python")).expect("symlink");

    let env = EnvVars::from_pairs(
        save_sizes
            .then(|| {
                (
                    MILABENCH_SIZER_SAVE.to_string(),
                    root.join("scaling.yaml").to_string(),
                )
            })
            .into_iter()
            .collect::<Vec<_>>(),
    );
    let flags = SettingsFlags {
        config: Some(root.join("suite.yaml")),
        system: Some(root.join("system.yaml")),
        base: Some(root.join("base")),
        ..SettingsFlags::default()
    };
    let settings = Settings::load(&flags, &env).expect("settings");
    (settings, env)
}

#[test]
fn a_run_reads_each_input_once() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let (settings, env) = two_benchmarks(&scratch, true);
    let before = (
        benchfile_reads(),
        system_file_reads(),
        discoveries(),
        data_file_reads(),
    );
    let session = Session::new(settings, env, SessionRequest::default()).expect("session");
    // What `run --dry-run`, `check` and `run` ask of the session.
    session
        .plan(1, milabench::RepeatOrder::InARow)
        .expect("plan");
    // The preflight fails here (a GPU family without GPUs, environments made by hand): its
    // checks run all the same, as `run` runs them.
    session
        .check(&milabench::CheckOptions {
            need_disk_gib: None,
            package_index: false,
            program: std::env::current_exe().expect("exe"),
        })
        .expect("check");
    let request = RunRequest {
        preflight: false,
        setup: false,
        ..RunRequest::default()
    };
    let mut schedules = Schedules::default();
    let result = session.execute(&request, &mut schedules).expect("execute");
    assert_eq!(
        schedules.0,
        [vec!["one".to_string(), "two".to_string()]],
        "the run's schedule, told once"
    );
    let run = result.run.as_ref().expect("it ran");
    assert!(run.summary.success(), "{:?}", run.summary);
    assert!(result.report.is_some());
    assert!(run.sizer_saved.is_some(), "the sizer looked at the run");

    assert_eq!(milabench::arch_detections(), 1, "arch detections");
    assert_eq!(system_file_reads() - before.1, 1, "system file reads");
    assert_eq!(discoveries() - before.2, 1, "GPU discoveries");
    assert_eq!(
        benchfile_reads() - before.0,
        2,
        "benchfile reads (two folders)"
    );
    assert_eq!(
        data_file_reads() - before.3,
        2,
        "`.data` files read for reports (one process per benchmark)"
    );
    assert_eq!(milabench::plan_contexts_made(), 1, "planning contexts");
}

/// `report --config` reads the suite's weights without looking for GPUs, and gets those a
/// session would.
#[test]
fn the_report_entries_of_a_suite_need_no_gpu_discovery() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let (settings, env) = two_benchmarks(&scratch, false);
    let selection = milabench::Selection::default();
    let before = discoveries();
    let entries = milabench::report_entries(&settings, &selection, &env).expect("entries");
    assert_eq!(discoveries(), before, "GPU discoveries");
    let session = Session::new(settings, env, SessionRequest::default()).expect("session");
    assert_eq!(entries, session.resolved().report_entries());
}
