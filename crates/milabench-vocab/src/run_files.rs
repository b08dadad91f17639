//! The names of the files milabench keeps in a run folder beside the `.data` files.

/// The validation layers' report in a run folder (written by `milabench run`).
pub const VALIDATION_FILE: &str = "validation.txt";

/// The page `milabench run` writes into the run folder.
pub const REPORT_PAGE: &str = "report.html";

/// The text report a run folder may hold (written by the report job of
/// `milabench slurm submit --per-bench`).
pub const REPORT_TEXT: &str = "report.txt";

/// The file of a run folder that says which run of a sweep it holds (a sweep run of `milabench-config` as JSON):
/// what `report --sweep` and the results store read.
pub const SWEEP_FILE: &str = "sweep.json";

/// The file of a run folder that records its repeat plan (how many times each benchmark runs).
pub const REPEAT_FILE: &str = "repeat.json";

/// The lock file of a run folder.
pub const RUN_LOCK_FILE: &str = ".milabench.lock";
