//! clap definitions of every `milabench` command and its flags.

use camino::Utf8PathBuf;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Run machine-learning benchmark suites and report their results.
///
/// A suite is a YAML file naming real PyTorch benchmarks. `resolve` shows what a suite means
/// after includes, inheritance, matrices and overrides are applied.
///
/// Exit codes: 0 success, 1 benchmark failures, 2 bad input, 3 internal error, 130 interrupted.
#[derive(Debug, Parser)]
#[command(name = "milabench", version, propagate_version = true)]
pub struct Cli {
    /// Options shared by every command.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Base folder for environments, data, caches and runs [env: MILABENCH_BASE] [default: ./workdir].
    #[arg(long, global = true, value_name = "DIR")]
    pub base: Option<Utf8PathBuf>,
    /// Settings file (YAML) layered between built-in defaults and MILABENCH_* variables
    /// [env: MILABENCH_SETTINGS].
    #[arg(long, global = true, value_name = "FILE")]
    pub settings: Option<Utf8PathBuf>,
}

/// Every `milabench` command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the resolved suite: every benchmark with its final settings.
    ///
    /// Applies the built-in defaults, the suite file and its includes, `--override`s, matrix
    /// expansion, `inherits` chains, the `*` entry and `${...}` interpolation, then selection.
    /// Benchmark folders need not exist.
    Resolve(ResolveArgs),
}

/// Which suite to load and which of its benchmarks to keep.
#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// Suite YAML file [env: MILABENCH_CONFIG].
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<Utf8PathBuf>,
    /// System YAML file describing the nodes, arch and options [env: MILABENCH_SYSTEM].
    #[arg(long, value_name = "FILE")]
    pub system: Option<Utf8PathBuf>,
    /// Keep only benchmarks matching one of these names, groups, install groups or tags
    /// (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub select: Vec<String>,
    /// Drop benchmarks matching one of these names, groups, install groups or tags.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub exclude: Vec<String>,
    /// Override a suite value, applied after the suite files: `bench.key.sub=value` (value parsed
    /// as YAML) or a whole YAML mapping such as `{resnet50: {argv: {--batch-size: 64}}}`.
    /// Repeatable.
    #[arg(long = "override", value_name = "OVERRIDE")]
    pub overrides: Vec<String>,
}

impl SuiteArgs {
    /// The selection and overrides these flags ask for.
    pub fn selection(&self) -> milabench::Selection {
        milabench::Selection {
            overrides: self.overrides.clone(),
            select: self.select.clone(),
            exclude: self.exclude.clone(),
        }
    }
}

/// Output formats of `resolve`.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub enum StructuredFormat {
    /// YAML, keys in suite order.
    #[default]
    Yaml,
    /// JSON, keys in suite order.
    Json,
}

/// Arguments of `milabench resolve`.
#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// Which suite and which benchmarks.
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = StructuredFormat::Yaml)]
    pub format: StructuredFormat,
    /// Hide disabled benchmarks (by default they are shown with `enabled: false`).
    #[arg(long)]
    pub enabled_only: bool,
    /// Include the resolved `system` block in every benchmark (hidden by default: it is the
    /// same for all of them).
    #[arg(long)]
    pub with_system: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
