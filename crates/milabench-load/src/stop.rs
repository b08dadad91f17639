//! Ending a run early: Ctrl-C, SIGTERM from the orchestrator, or the server started for the run
//! going away. Nothing already measured is lost: the run stops releasing requests, gives those
//! in flight [`IN_FLIGHT_GRACE`] to finish, and returns what it measured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

/// How long requests in flight may go on once a run is stopped; those still running then are
/// dropped (they measured nothing complete).
pub const IN_FLIGHT_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
struct Inner {
    set: AtomicBool,
    reason: Mutex<Option<String>>,
    wake: Notify,
}

/// A request to end a run early, with its reason. Cheap to clone; clones share the request.
/// Once made it stays made, and the first reason given is kept.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    inner: Arc<Inner>,
}

impl Stop {
    /// A stop not yet asked for.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Asks the run to end, saying why. Safe from any thread (not from inside a signal handler).
    pub fn trigger(&self, reason: impl Into<String>) {
        {
            let mut slot = self
                .inner
                .reason
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if slot.is_none() {
                *slot = Some(reason.into());
            }
        }
        self.inner.set.store(true, Ordering::SeqCst);
        self.inner.wake.notify_waiters();
    }

    /// Whether the run was asked to end.
    pub fn is_set(&self) -> bool {
        self.inner.set.load(Ordering::SeqCst)
    }

    /// Why the run was asked to end, if it was.
    pub fn reason(&self) -> Option<String> {
        self.inner
            .reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Resolves once the run is asked to end.
    pub(crate) async fn stopped(&self) {
        loop {
            let notified = self.inner.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }

    /// Sleeps until `deadline` with the operating system's timer, waking early when the run is
    /// asked to end; `false` when it was.
    pub(crate) fn sleep_until(&self, deadline: std::time::Instant) -> bool {
        const SLICE: Duration = Duration::from_millis(50);
        loop {
            if self.is_set() {
                return false;
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return true;
            }
            std::thread::sleep((deadline - now).min(SLICE));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_is_kept_and_clones_share_the_request() {
        let stop = Stop::new();
        let clone = stop.clone();
        assert!(!clone.is_set());
        stop.trigger("interrupted");
        stop.trigger("later");
        assert!(clone.is_set());
        assert_eq!(clone.reason().as_deref(), Some("interrupted"));
    }

    #[test]
    fn a_sleep_ends_early_when_stopped() {
        let stop = Stop::new();
        let other = stop.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            other.trigger("go");
        });
        let begin = std::time::Instant::now();
        let completed = stop.sleep_until(begin + Duration::from_secs(10));
        t.join().expect("thread");
        assert!(!completed);
        assert!(begin.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn stopped_resolves_after_a_trigger_from_another_thread() {
        let stop = Stop::new();
        let other = stop.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            other.trigger("go");
        });
        runtime.block_on(stop.stopped());
        t.join().expect("thread");
        assert!(stop.is_set());
    }
}
