//! [`ResolutionCache`]: what planning a resolved suite reads, kept with the resolution so that
//! planning it again (the preflight, the prepare steps, each repeat of the run, `--dry-run`)
//! reads nothing twice: each benchmark folder's `benchfile.yaml` is parsed, and each planning
//! context made, once per resolution.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use milabench_config::benchfile::BenchFile;
use milabench_plan::PlanContext;

use crate::error::Error;

/// The cache of one resolution, shared by its clones.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResolutionCache(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    benchfiles: Mutex<BTreeMap<PathBuf, Arc<BenchFile>>>,
    contexts: Mutex<BTreeMap<Option<(usize, usize)>, PlanContext>>,
}

impl ResolutionCache {
    /// The `benchfile.yaml` of `folder`, parsed on its first use.
    pub(crate) fn benchfile(&self, folder: &Path) -> Result<Arc<BenchFile>, Error> {
        let mut files = lock(&self.0.benchfiles);
        if let Some(file) = files.get(folder) {
            return Ok(Arc::clone(file));
        }
        let file = Arc::new(BenchFile::load(folder)?);
        files.insert(folder.to_owned(), Arc::clone(&file));
        Ok(file)
    }

    /// The planning context of repeat `repeat`, made by `make` on its first use.
    pub(crate) fn plan_context(
        &self,
        repeat: Option<(usize, usize)>,
        make: impl FnOnce() -> Result<PlanContext, Error>,
    ) -> Result<PlanContext, Error> {
        let mut contexts = lock(&self.0.contexts);
        if let Some(ctx) = contexts.get(&repeat) {
            return Ok(ctx.clone());
        }
        let ctx = make()?;
        contexts.insert(repeat, ctx.clone());
        Ok(ctx)
    }
}

/// A lock whose holder panicked still holds valid data (a cache of parsed files).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
