//! Bounds on what a suite may make the loader build, so that a mistaken or hostile suite (an
//! alias bomb, `/dev/zero` as the suite file, an endless include chain, a huge matrix) ends in
//! an error that says which bound it crossed, not in exhausted memory or a stack overflow.
//!
//! Each bound is far above what a real suite needs: the shipped standard suite is about 30 KB,
//! a few thousand values, includes two levels deep and a few dozen benchmarks.

/// The most bytes one YAML file may hold.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The most values (scalars, lists and mappings) one YAML document may hold once its aliases
/// are expanded: an alias counts as many values as the anchored value holds.
pub const MAX_DOCUMENT_VALUES: usize = 500_000;

/// The deepest nesting of lists and mappings in one YAML document.
pub const MAX_NESTING: usize = 128;

/// The longest chain of files including each other.
pub const MAX_INCLUDE_DEPTH: usize = 32;

/// The most files one suite may load, counting a file included twice twice.
pub const MAX_INCLUDED_FILES: usize = 512;

/// The most benchmarks one `matrix` entry may produce.
pub const MAX_MATRIX_BENCHMARKS: usize = 10_000;

/// The most values all entries of a suite may hold together after matrix expansion and
/// inheritance (each benchmark holds its own copy of what it inherits).
pub const MAX_SUITE_VALUES: usize = 2_000_000;

/// The most runs one sweep (`--sweep` axes, or a system file's `multirun` block) may have:
/// each is a whole suite run, so even this many would take weeks.
pub const MAX_SWEEP_RUNS: usize = 10_000;
