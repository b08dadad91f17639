//! `milabench run` as a person sees it: the view of [`milabench::Session::execute`]'s phases
//! (install progress, the prepare steps' live lines, then the dashboard or the run's live
//! lines) and, once it returns, the report, the validation and where everything went.

use milabench::observe::{ExecObserver, Interrupt, ProcessOutcome, ProcessSpec, Record};
use milabench::observe::{RunEvent, RunObserver};
use milabench::{ExitCode, InstallObserver, Phase, RunReport, RunRequest, RunResult, Session};

use super::install::InstallView;
use crate::dash::BenchBudget;
use crate::live::LiveDisplay;
use crate::output::{note, warn, write_output};

/// Runs `request` on `session` with Ctrl-C stopping it, shows it as it goes (the dashboard as
/// `dash` asks: `Some(true)` for `--dash`, `Some(false)` for `--no-dash`), then prints its
/// results; returns the exit code they deserve.
pub(crate) fn execute(
    session: &Session,
    request: RunRequest,
    dash: Option<bool>,
) -> crate::errors::Result<ExitCode> {
    let interrupt = Interrupt::new();
    let ctrl_c = milabench::observe::install_ctrl_c(interrupt.clone())?;
    let request = RunRequest {
        interrupt,
        ..request
    };
    let arch = session.resolved().arch.clone();
    let mut view = PipelineView::new(arch, dash);
    let result = session.execute(&request, &mut view);
    // Gives the terminal back before anything else is printed.
    drop(view);
    ctrl_c.uninstall();
    Ok(show_result(&result?))
}

/// The view of each phase: the install's, the prepare steps' live lines, then the run's view
/// (made when the run starts, so that the dashboard takes the terminal only then).
struct PipelineView {
    phase: Option<Phase>,
    /// The arch the environments are built for, as the install's closing line says it.
    arch: String,
    install: InstallView,
    prepare: LiveDisplay,
    run: Option<Box<dyn RunObserver>>,
    /// `--dash` / `--no-dash`, and the benchmarks the dashboard shows (told by
    /// [`RunEvent::Schedule`]).
    dash: Option<bool>,
    budgets: Vec<BenchBudget>,
}

impl PipelineView {
    fn new(arch: String, dash: Option<bool>) -> Self {
        PipelineView {
            phase: None,
            arch,
            install: InstallView::new(),
            prepare: LiveDisplay::for_prepare(),
            run: None,
            dash,
            budgets: Vec::new(),
        }
    }

    /// The observer of the processes of the current phase.
    fn current(&mut self) -> &mut dyn RunObserver {
        match (self.phase, &mut self.run) {
            (Some(Phase::Run), Some(run)) => run.as_mut(),
            _ => &mut self.prepare,
        }
    }
}

impl ExecObserver for PipelineView {
    fn on_start(&mut self, tag: &str, spec: &ProcessSpec) {
        self.current().on_start(tag, spec);
    }

    fn on_record(&mut self, tag: &str, record: &Record) {
        self.current().on_record(tag, record);
    }

    fn on_end(&mut self, outcome: &ProcessOutcome) {
        self.current().on_end(outcome);
    }

    fn on_caught_up(&mut self) {
        self.current().on_caught_up();
    }
}

impl RunObserver for PipelineView {
    fn on_run_event(&mut self, event: RunEvent<'_>) {
        match event {
            RunEvent::Phase(phase) => {
                self.phase = Some(phase);
                match phase {
                    Phase::Run => {
                        let budgets = std::mem::take(&mut self.budgets);
                        self.run = Some(crate::dash::run_observer(self.dash, || budgets));
                    }
                    // The run's view gives the terminal back before the report is printed.
                    Phase::Report => self.run = None,
                    _ => {}
                }
            }
            RunEvent::Schedule { benches } => {
                self.budgets = benches.iter().map(|b| BenchBudget::of(b)).collect();
            }
            RunEvent::PreflightFailed { checks } => warn(&format!(
                "the preflight failed, nothing was run:\n{}fix the problems above, or pass --no-check to run anyway",
                super::check_table(checks)
            )),
            RunEvent::Installed { summary } => {
                super::install::summarize(summary, &self.arch);
                if !summary.success() {
                    warn("install failed: nothing was run (see above)");
                }
            }
            RunEvent::Prepared { summary, failures } => {
                super::prepare_lines(summary);
                if !summary.interrupted {
                    super::setup_failure_line(failures);
                }
            }
            other => self.current().on_run_event(other),
        }
    }

    fn install_observer(&mut self) -> Option<&mut dyn InstallObserver> {
        Some(&mut self.install)
    }
}

/// Prints what `execute` did after its live view: the report, the validation and where the
/// run folder, its page and its record are; returns its exit code. A run stopped in its
/// set-up said why as it stopped.
fn show_result(result: &RunResult) -> ExitCode {
    let code = result.exit_code();
    let Some(run) = &result.run else {
        return code;
    };
    let Some(report) = &result.report else {
        warn("no benchmark ran (all skipped or none selected)");
        return code;
    };
    let run_dir = run.summary.run_dir.display().to_string();
    for warning in &report.warnings {
        warn(warning);
    }
    let text = milabench::results::render(&report.report, milabench::results::Format::Text);
    let validation = &run.validation;
    let validation_text = (!validation.text.is_empty()).then(|| format!("\n{}", validation.text));
    for text in std::iter::once(text).chain(validation_text) {
        if let Err(e) = write_output(None, &text) {
            warn(&format!("{e:#}"));
        }
    }
    for verdict in validation.verdicts.iter().filter(|v| v.code != 0) {
        warn(&format!(
            "validation layer `{}` failed ({} problem{}); see above and {run_dir}/{}",
            verdict.layer,
            verdict.code,
            if verdict.code == 1 { "" } else { "s" },
            milabench::VALIDATION_FILE
        ));
    }
    for problem in &run.store_problems {
        warn(problem);
    }
    note(&format!("run folder: {run_dir}"));
    if let Some(Ok(page)) = &report.page {
        note(&format!("HTML report: {}", page.display()));
    }
    warn_unwritten(report, &run_dir);
    if let Some((file, benches)) = &run.sizer_saved {
        note(&super::sizer_saved_line(file, benches));
    }
    if let Some(database) = &run.recorded_in {
        note(&format!(
            "recorded in {database} (`milabench db list`, `milabench history`)"
        ));
    }
    code
}

/// Warns about each report file of `report` that could not be written into the run folder
/// `run_dir`, with how to make it later.
pub(crate) fn warn_unwritten(report: &RunReport, run_dir: &str) {
    use milabench_vocab::run_files::{REPORT_PAGE, REPORT_TEXT};
    let files = [
        ("HTML report", "html", REPORT_PAGE, &report.page),
        ("text report", "text", REPORT_TEXT, &report.text),
    ];
    for (what, format, file, written) in files {
        if let Some(Err(e)) = written {
            warn(&format!(
                "the {what} was not written to {run_dir}/{file}: {e}; make it later with `milabench report --runs {run_dir} --format {format} -o {file}`"
            ));
        }
    }
}
