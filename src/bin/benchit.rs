//! The `benchit` command: a thin wrapper over [`benchit::cli::main`].

fn main() -> std::process::ExitCode {
    benchit::cli::main()
}
