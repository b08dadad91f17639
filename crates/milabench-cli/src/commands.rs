//! Command handlers: one module per command, each turning parsed arguments into a call to the
//! facade and a rendering of its result.

mod bundle;
mod check;
mod compare;
mod db;
mod dev;
mod history;
mod install;
mod load;
mod new;
mod pin;
mod prepare;
mod python;
mod replay;
mod report;
mod resolve;
mod run;
mod sizer;
mod slurm;
mod summary;
mod sysinfo;

use crate::errors::Context as _;
use milabench::ExitCode;
use milabench::observe::WatchdogCommand;

use crate::args::{Cli, Command};

/// Runs the parsed command.
pub fn dispatch(cli: Cli) -> crate::errors::Result<ExitCode> {
    match cli.command {
        Command::Resolve(args) => resolve::run(&cli.global, &args),
        Command::Check(args) => check::run(&cli.global, &args),
        Command::Report(args) => report::run(&cli.global, &args),
        Command::Summary(args) => summary::run(&args),
        Command::Compare(args) => compare::run(&cli.global, &args),
        Command::Replay(args) => replay::run(&args),
        Command::Run(args) => run::run(&cli.global, &args),
        Command::Sysinfo(args) => sysinfo::run(&cli.global, &args),
        Command::New(args) => new::run(&args),
        Command::Prepare(args) => prepare::run(&cli.global, &args),
        Command::Install(args) => install::run(&cli.global, &args),
        Command::Pin(args) => pin::run(&cli.global, &args),
        Command::Bundle(args) => bundle::run(&cli.global, &args),
        Command::Dev(args) => dev::run(&cli.global, &args),
        Command::Db(command) => db::run(&cli.global, &command),
        Command::History(args) => history::run(&cli.global, &args),
        Command::Slurm(command) => slurm::run(&cli.global, &command),
        Command::Load(args) => load::run(&args),
        Command::Sizer(command) => sizer::run(&command),
        Command::Analysis(command) => python::analysis(&cli.global, command),
        Command::Tools(command) => python::tools(&cli.global, command),
        Command::Data(command) => python::data(&cli.global, command),
        Command::Watchdog => {
            milabench::observe::serve_watchdog(std::io::stdin().lock());
            Ok(ExitCode::Success)
        }
    }
}

pub(crate) use python::refuse_github_issues;

/// The watchdog of `run` and `prepare`: this program's hidden `__watchdog` command.
pub(crate) fn watchdog() -> crate::errors::Result<WatchdogCommand> {
    WatchdogCommand::this_program(vec!["__watchdog".into()])
        .context("cannot find the milabench program to start its watchdog")
}
