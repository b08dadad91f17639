//! [`ResolutionCache`]: the planning contexts of a resolved suite, kept with the resolution so
//! that planning it again (the preflight, the prepare steps, each repeat of the run,
//! `--dry-run`) makes each once per resolution; and whether the nodes were made ready for the
//! run's containers, done once per resolution too. (Each benchmark folder's `benchfile.yaml` is
//! read once by the resolution itself: see `ResolvedBench::benchfile`.)

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use milabench_plan::PlanContext;

use crate::error::Error;

/// The cache of one resolution, shared by its clones.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResolutionCache(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    contexts: Mutex<BTreeMap<Option<(usize, usize)>, PlanContext>>,
    /// Whether the nodes were made ready for the run's containers.
    nodes_ready: Mutex<bool>,
}

impl ResolutionCache {
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

impl ResolutionCache {
    /// Runs `ready` (the nodes made ready for the run's containers) until it succeeds once
    /// for this resolution; later calls do nothing.
    pub(crate) fn once_nodes_ready(
        &self,
        ready: impl FnOnce() -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut done = lock(&self.0.nodes_ready);
        if !*done {
            ready()?;
            *done = true;
        }
        Ok(())
    }
}

/// A lock whose holder panicked still holds valid data (a cache of planning contexts).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
