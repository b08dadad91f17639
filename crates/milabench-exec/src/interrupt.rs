//! Interruption: a flag the caller's Ctrl-C handler sets, which wakes the running plan.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

type Waker = Box<dyn Fn() + Send>;

#[derive(Default)]
struct Inner {
    set: AtomicBool,
    next_id: AtomicU64,
    /// Wakes each plan running with this interrupt, by registration id.
    wakers: Mutex<Vec<(u64, Waker)>>,
    /// Process groups alive now, for [`Interrupt::kill_now`].
    groups: Mutex<Vec<i32>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Asks running plans to stop: every process group is stopped (SIGTERM, SIGKILL after the
/// grace period), `end` events with `return_code: "ERROR"` are written, and
/// [`crate::run_plan`] returns an outcome marked interrupted. Cheap to clone; clones share the
/// flag. Once set it stays set: the caller should not start more benchmarks.
#[derive(Clone, Default)]
pub struct Interrupt {
    inner: Arc<Inner>,
}

impl fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interrupt")
            .field("set", &self.is_set())
            .finish()
    }
}

impl Interrupt {
    /// A flag not yet set.
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Sets the flag and wakes the running plans. Safe to call from any thread (not from inside
    /// a signal handler: use [`crate::install_ctrl_c`], which calls it from a plain thread).
    pub fn trigger(&self) {
        self.inner.set.store(true, Ordering::SeqCst);
        for (_, wake) in lock(&self.inner.wakers).iter() {
            wake();
        }
    }

    /// Whether [`Interrupt::trigger`] was called.
    pub fn is_set(&self) -> bool {
        self.inner.set.load(Ordering::SeqCst)
    }

    /// SIGKILLs every benchmark process group alive now, without waiting: for a second Ctrl-C,
    /// just before the orchestrator exits.
    pub fn kill_now(&self) {
        for &pgid in lock(&self.inner.groups).iter() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }

    /// Calls `wake` when [`Interrupt::trigger`] is called, until the returned hook is dropped:
    /// for a caller blocked on something else (a channel) that must hear of Ctrl-C without
    /// polling the flag. `wake` runs on the triggering thread and should only send a message.
    pub fn on_trigger(&self, wake: impl Fn() + Send + 'static) -> TriggerHook {
        let id = self.inner.next_id.fetch_add(1, Ordering::SeqCst);
        lock(&self.inner.wakers).push((id, Box::new(wake)));
        TriggerHook {
            interrupt: self.clone(),
            id,
        }
    }

    /// Registers process group `pgid` (started by another library) so that
    /// [`Interrupt::kill_now`] reaches it too, until the returned guard is dropped.
    pub fn watch_group(&self, pgid: i32) -> WatchedGroup {
        self.add_group(pgid);
        WatchedGroup {
            interrupt: self.clone(),
            pgid,
        }
    }

    pub(crate) fn add_group(&self, pgid: i32) {
        lock(&self.inner.groups).push(pgid);
    }

    pub(crate) fn remove_group(&self, pgid: i32) {
        lock(&self.inner.groups).retain(|g| *g != pgid);
    }
}

/// A process group registered with [`Interrupt::watch_group`]; dropping it unregisters the group.
#[derive(Debug)]
pub struct WatchedGroup {
    interrupt: Interrupt,
    pgid: i32,
}

impl Drop for WatchedGroup {
    fn drop(&mut self) {
        self.interrupt.remove_group(self.pgid);
    }
}

/// A waker registered with [`Interrupt::on_trigger`]; dropping it unregisters the waker.
pub struct TriggerHook {
    interrupt: Interrupt,
    id: u64,
}

impl fmt::Debug for TriggerHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TriggerHook").field("id", &self.id).finish()
    }
}

impl Drop for TriggerHook {
    fn drop(&mut self) {
        lock(&self.interrupt.inner.wakers).retain(|(i, _)| *i != self.id);
    }
}

/// Handle of the signal thread started by [`install_ctrl_c`]; dropping it keeps the handler,
/// [`CtrlC::uninstall`] removes it.
#[derive(Debug)]
pub struct CtrlC {
    handle: signal_hook::iterator::Handle,
}

impl CtrlC {
    /// Stops listening for the signals (the default behaviour does not come back).
    pub fn uninstall(self) {
        self.handle.close();
    }
}

/// Listens for SIGINT, SIGTERM and SIGHUP (a closed terminal, a lost ssh session) on a thread:
/// the first one triggers `interrupt` (the running plan stops its processes and returns; the
/// caller exits with code 130); a second one SIGKILLs every benchmark process group at once and
/// ends the orchestrator with the signal's default action.
pub fn install_ctrl_c(interrupt: Interrupt) -> std::io::Result<CtrlC> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let handle = signals.handle();
    std::thread::Builder::new()
        .name("milabench-ctrl-c".into())
        .spawn(move || {
            let mut seen = 0;
            for signal in signals.forever() {
                seen += 1;
                if seen == 1 {
                    interrupt.trigger();
                } else {
                    interrupt.kill_now();
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                }
            }
        })?;
    Ok(CtrlC { handle })
}
