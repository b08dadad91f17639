//! The `benchit` command: a thin wrapper over [`benchit_cli::main`].

fn main() -> std::process::ExitCode {
    benchit_cli::main()
}
