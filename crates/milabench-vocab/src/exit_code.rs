//! Process exit codes, named in one place so every front end (`milabench`, `benchit`) and
//! script agrees on them; the facade re-exports them as `milabench::ExitCode`.

/// Why a milabench or benchit command ended. The numeric values are stable and documented in
/// `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExitCode {
    /// Everything asked for was done.
    Success,
    /// The command ran, but at least one benchmark (a model, an input, an operator run) or
    /// install failed, or a validation layer objected.
    BenchmarkFailures,
    /// The input was wrong: a bad suite file, flag, override or system file.
    BadInput,
    /// The machine failed the command (a file or folder that cannot be written, as on a full
    /// disk; a results database or server that cannot be reached), or a bug.
    Internal,
    /// The user interrupted the command (Ctrl-C).
    Interrupted,
}

impl ExitCode {
    /// The numeric process exit status.
    pub fn code(self) -> u8 {
        match self {
            ExitCode::Success => 0,
            ExitCode::BenchmarkFailures => 1,
            ExitCode::BadInput => 2,
            ExitCode::Internal => 3,
            ExitCode::Interrupted => 130,
        }
    }

    /// The exit code a milabench or benchit process ended with, from its numeric status (a
    /// child's, a Slurm job's): the documented ones by name, any other non-zero status as
    /// benchmark failures.
    pub fn from_code(code: i32) -> ExitCode {
        match code {
            0 => ExitCode::Success,
            2 => ExitCode::BadInput,
            3 => ExitCode::Internal,
            130 => ExitCode::Interrupted,
            _ => ExitCode::BenchmarkFailures,
        }
    }

    /// The exit code of an error that is either the user's input ([`ExitCode::BadInput`]) or
    /// the machine's or milabench's failure ([`ExitCode::Internal`]), for the errors of crates
    /// that say only which (`is_bad_input`).
    pub fn bad_input_or_internal(is_bad_input: bool) -> ExitCode {
        if is_bad_input {
            ExitCode::BadInput
        } else {
            ExitCode::Internal
        }
    }

    /// The worse of two outcomes, for a command that combines several (a sweep, a Slurm job
    /// array): an internal error, then bad input, then an interruption, then benchmark
    /// failures, then success.
    pub fn worst(self, other: ExitCode) -> ExitCode {
        let rank = |code: ExitCode| match code {
            ExitCode::Success => 0,
            ExitCode::BenchmarkFailures => 1,
            ExitCode::Interrupted => 2,
            ExitCode::BadInput => 3,
            ExitCode::Internal => 4,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        std::process::ExitCode::from(code.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct() {
        let all = [
            ExitCode::Success,
            ExitCode::BenchmarkFailures,
            ExitCode::BadInput,
            ExitCode::Internal,
            ExitCode::Interrupted,
        ];
        let mut codes: Vec<u8> = all.iter().map(|c| c.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        for code in all {
            assert_eq!(ExitCode::from_code(i32::from(code.code())), code);
        }
        assert_eq!(ExitCode::from_code(7), ExitCode::BenchmarkFailures);
    }

    #[test]
    fn worst_is_symmetric_and_ordered() {
        let order = [
            ExitCode::Success,
            ExitCode::BenchmarkFailures,
            ExitCode::Interrupted,
            ExitCode::BadInput,
            ExitCode::Internal,
        ];
        for (i, a) in order.iter().enumerate() {
            for (j, b) in order.iter().enumerate() {
                assert_eq!(a.worst(*b), order[i.max(j)], "{a:?} {b:?}");
            }
        }
    }
}
