//! The `milabench` command: a thin wrapper over [`milabench_cli::main`].

fn main() -> std::process::ExitCode {
    milabench_cli::main()
}
