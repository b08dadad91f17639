//! How many times a run runs its suite and in which order (`run --repeat N [--interleave]`):
//! plain values, depending on no other module of the facade, which the planner, the run and
//! the facade's errors all name.

pub use milabench_vocab::run_files::REPEAT_FILE;

/// In which order the repeats of a suite (`run --repeat N`) run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepeatOrder {
    /// Each benchmark N times in a row, then the next one (A1 A2 B1 B2).
    #[default]
    InARow,
    /// The whole suite N times over, benchmark by benchmark (A1 B1 A2 B2; the Python tool's
    /// order): a drift of the machine during the run lands on every benchmark alike.
    Interleaved,
}

impl RepeatOrder {
    /// The `(repeat index, benchmark index)` pairs of `benches` benchmarks repeated `repeat`
    /// times, in the order they run.
    pub fn schedule(self, repeat: usize, benches: usize) -> Vec<(usize, usize)> {
        match self {
            RepeatOrder::InARow => (0..benches)
                .flat_map(|bench| (0..repeat).map(move |index| (index, bench)))
                .collect(),
            RepeatOrder::Interleaved => (0..repeat)
                .flat_map(|index| (0..benches).map(move |bench| (index, bench)))
                .collect(),
        }
    }
}

/// How many times a run runs its suite, and in which order: what `run --repeat N
/// [--interleave]` asks, recorded in the run folder ([`REPEAT_FILE`]) for `--resume`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RepeatPlan {
    /// Times each benchmark runs.
    pub repeat: usize,
    /// In which order.
    pub order: RepeatOrder,
}

impl Default for RepeatPlan {
    fn default() -> RepeatPlan {
        RepeatPlan {
            repeat: 1,
            order: RepeatOrder::InARow,
        }
    }
}

impl std::fmt::Display for RepeatPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--repeat {}", self.repeat)?;
        if self.order == RepeatOrder::Interleaved {
            f.write_str(" --interleave")?;
        }
        Ok(())
    }
}

/// The most times a run repeats its suite (`run --repeat`). Every repeat of every benchmark
/// writes its own files and the whole schedule is planned before the first benchmark starts,
/// so a mistyped count (`--repeat 1000000`) would spend minutes and gigabytes planning before
/// anything ran or a signal could be answered.
pub const MAX_REPEAT: usize = 1000;

#[cfg(test)]
mod tests {
    use super::RepeatOrder;

    #[test]
    fn repeats_run_in_a_row_by_default_and_alternate_when_interleaved() {
        assert_eq!(
            RepeatOrder::default().schedule(2, 3),
            [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
        );
        assert_eq!(
            RepeatOrder::Interleaved.schedule(2, 3),
            [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
        );
        assert_eq!(RepeatOrder::Interleaved.schedule(1, 2), [(0, 0), (0, 1)]);
        assert!(RepeatOrder::InARow.schedule(3, 0).is_empty());
    }
}
