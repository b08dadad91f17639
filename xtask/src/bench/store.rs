//! Results-store figures of `milabench-store`: the measurement program
//! `crates/milabench-store/examples/bench_store.rs`, built in release, times the import of the
//! largest fixture run folder and of a generated 1,000-run history, and `history` over it, each
//! against the report of the same folders in the same run.

/// Measures and prints the store figures.
pub fn run() -> anyhow::Result<()> {
    let fixture = largest_fixture_folder()?;
    let text = super::release_example_output(
        "milabench-store",
        "bench_store",
        &[fixture.display().to_string(), "1000".into()],
        "store",
    )?;
    print!("{text}");
    Ok(())
}

/// The run folder of `tests/fixtures/milabench/runs` holding the most `.data` bytes.
fn largest_fixture_folder() -> anyhow::Result<std::path::PathBuf> {
    let root = crate::e2e::repo_root().join("tests/fixtures/milabench/runs/tests-runs");
    let mut best = None;
    for entry in fs_err::read_dir(&root)? {
        let folder = entry?.path();
        let mut bytes = 0;
        for file in fs_err::read_dir(&folder)? {
            bytes += file?.metadata()?.len();
        }
        if best.as_ref().is_none_or(|(b, _)| bytes > *b) {
            best = Some((bytes, folder));
        }
    }
    best.map(|(_, f)| f)
        .ok_or_else(|| anyhow::anyhow!("no run folder under {}", root.display()))
}
