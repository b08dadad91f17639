//! The words every milabench crate shares and no crate owns: the names of the environment
//! variables ([`env_vars`]), the exit codes ([`ExitCode`]), the directories under a base
//! ([`BaseLayout`], [`Arch`], [`Installer`]), the files of a run folder ([`run_files`]), shell
//! quoting ([`shell_quote`]), the one way a failed command's error is shown
//! ([`error_report`]) and the one layout of the tools' own text tables ([`TextTable`]). It depends on nothing of the workspace, so any crate can use it without
//! pulling a layer in.

pub mod env_vars;
mod error_report;
mod exit_code;
pub mod layout;
pub mod run_files;
mod shell;
pub mod table;

pub use error_report::{InContext, error_line, error_report, is_broken_pipe};
pub use exit_code::ExitCode;
pub use layout::{Arch, ArchName, BaseLayout, DirOverrides, Installer};
pub use shell::shell_quote;
pub use table::{Align, TextTable};
