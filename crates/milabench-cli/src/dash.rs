//! `milabench run --dash`: a full-screen view of the run, an observer of the Session's events.
//!
//! The run's thread only files each event into a shared `Model` (a lock held for a few field
//! updates), and rings the view's bell once it has delivered what came together (a round of
//! the reading thread), if the view sleeps; a thread of the view reads the keys and redraws
//! from a copy of the model at most four times a second, and only when something changed (or
//! once a second, for the clocks). Between frames it sleeps until the bell, a key or the clock:
//! no wake-up to look for changes.
//! Closing the view (`q`) leaves the run going with the plain lines; Ctrl-C, which the
//! terminal's raw mode turns into a key, is raised as the signal it would have been, so it
//! keeps its meaning. The terminal is restored when the view closes, when the run ends or
//! fails, and on a panic in any thread (a panic hook, before the message is printed); a frame
//! and the restoring take turns, so no frame is drawn over the message once the terminal is
//! given back.

mod model;
mod view;

use std::cell::Cell;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use milabench::observe::{ExecObserver, ProcessOutcome, ProcessSpec, Record};
use milabench::observe::{RunEvent, RunObserver};
use nix::sys::eventfd::{EfdFlags, EventFd};
use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::crossterm::{cursor, execute};
use ratatui::layout::Rect;
use ratatui::prelude::CrosstermBackend;
use ratatui::{Frame, Terminal, TerminalOptions, Viewport};

use crate::live::LiveDisplay;
pub use model::BenchBudget;
use model::{BenchState, Model, Throttle};
use view::Palette;

/// The least time between two redraws.
const REDRAW_EVERY: Duration = Duration::from_millis(250);

/// The most time between two redraws (the clocks move).
const CLOCK_EVERY: Duration = Duration::from_secs(1);

/// The smallest terminal the view opens in by default (columns, rows).
const MIN_SIZE: (u16, u16) = (80, 20);

/// What decides whether a run shows the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Console {
    /// stderr, where the view is drawn, is a terminal.
    pub stderr_terminal: bool,
    /// stdin is a terminal (a person may press keys).
    pub stdin_terminal: bool,
    /// `TERM`.
    pub term: Option<String>,
    /// `CI` is set (a CI service runs the command).
    pub ci: bool,
    /// `NO_COLOR` is set and not empty.
    pub no_color: bool,
    /// The terminal's size, when known.
    pub size: Option<(u16, u16)>,
}

impl Console {
    /// The facts of this process.
    pub fn current() -> Console {
        let stderr_terminal = std::io::stderr().is_terminal();
        Console {
            stderr_terminal,
            stdin_terminal: std::io::stdin().is_terminal(),
            term: std::env::var("TERM").ok(),
            ci: std::env::var_os("CI").is_some_and(|v| !v.is_empty()),
            no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
            size: stderr_terminal.then(|| terminal::size().ok()).flatten(),
        }
    }

    fn dumb(&self) -> bool {
        self.term
            .as_deref()
            .is_none_or(|t| t.is_empty() || t == "dumb")
    }

    /// Whether to show the view: `asked` is `--dash` (`Some(true)`), `--no-dash`
    /// (`Some(false)`) or neither. Asked for, it needs a terminal on stderr that can move its
    /// cursor (else `Err` says why); by default it also needs keys on stdin, no CI and
    /// [`MIN_SIZE`].
    pub fn show_view(&self, asked: Option<bool>) -> Result<bool, String> {
        match asked {
            Some(false) => Ok(false),
            Some(true) if !self.stderr_terminal => {
                Err("stderr is not a terminal: plain lines instead".into())
            }
            Some(true) if self.dumb() => Err("TERM is dumb or unset: plain lines instead".into()),
            Some(true) => Ok(true),
            None => Ok(self.stderr_terminal
                && self.stdin_terminal
                && !self.ci
                && !self.dumb()
                && self
                    .size
                    .is_some_and(|(w, h)| w >= MIN_SIZE.0 && h >= MIN_SIZE.1)),
        }
    }

    /// Whether the view may use colours.
    fn palette(&self) -> Palette {
        let mono = self.no_color
            || self
                .term
                .as_deref()
                .is_some_and(|t| t == "dumb" || t.starts_with("vt") || t == "ansi");
        Palette { color: !mono }
    }
}

/// What the view and the run's thread share.
struct Shared {
    model: Mutex<Model>,
    /// The view is closed (by `q`, or its thread ended): events go to the plain lines.
    closed: AtomicBool,
    /// The run is over: the view's thread should end.
    stop: AtomicBool,
    /// The view's thread sleeps until the model changes (or a key, or its clock).
    sleeping: AtomicBool,
    /// Wakes the view's thread.
    bell: EventFd,
}

impl Shared {
    fn model(&self) -> MutexGuard<'_, Model> {
        // A panic while the lock was held left the model as it was: still worth drawing.
        self.model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wakes the view's thread if it sleeps until the model changes.
    fn wake_if_sleeping(&self) {
        if self.sleeping.swap(false, Ordering::SeqCst) {
            self.ring();
        }
    }

    /// Wakes the view's thread (a full counter means it is rung already).
    fn ring(&self) {
        let _ = self.bell.write(1);
    }
}

/// Where the view draws.
pub enum Screen {
    /// The terminal on stderr, full screen, with keys.
    Terminal,
    /// A writer of a fixed size, without keys (to measure what drawing costs).
    Writer {
        /// Where the escape sequences go.
        out: Box<dyn Write + Send>,
        /// Columns and rows.
        size: (u16, u16),
    },
}

/// The dashboard observer: files events for the view's thread, and keeps the plain lines, which
/// it prints once the view closes (and goes on printing if the run goes on).
pub struct Dashboard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    plain: LiveDisplay,
    /// The model changed since the view was last told.
    changed: bool,
}

impl Dashboard {
    /// Opens the view of a run of `benches` (in the order they may run) on `screen`; an error
    /// when the terminal cannot be set up (it is left as it was).
    pub fn start(
        benches: Vec<BenchBudget>,
        screen: Screen,
        color: bool,
    ) -> std::io::Result<Dashboard> {
        let shared = Arc::new(Shared {
            model: Mutex::new(Model::new(benches, Instant::now())),
            closed: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            bell: EventFd::from_flags(EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)?,
        });
        let (terminal, keys) = match screen {
            Screen::Terminal => (open_terminal()?, true),
            Screen::Writer { out, size } => {
                let options = TerminalOptions {
                    viewport: Viewport::Fixed(Rect::new(0, 0, size.0, size.1)),
                };
                (
                    Terminal::with_options(CrosstermBackend::new(out), options)?,
                    false,
                )
            }
        };
        let palette = Palette { color };
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("dashboard".into())
                .spawn(move || view_thread(&shared, terminal, keys, palette))?
        };
        Ok(Dashboard {
            shared,
            thread: Some(thread),
            plain: LiveDisplay::held(),
            changed: false,
        })
    }

    /// Whether the view is still up; when it is, the model will be changed (the caller's
    /// next step), and the view told once what came together is in.
    fn open(&mut self) -> bool {
        let open = !self.shared.closed.load(Ordering::Relaxed);
        if !open {
            self.plain.release();
        }
        self.changed |= open;
        open
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.ring();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.plain.release();
    }
}

impl ExecObserver for Dashboard {
    fn on_start(&mut self, tag: &str, spec: &ProcessSpec) {
        if self.open() {
            self.shared.model().proc_start(tag);
        }
        self.plain.on_start(tag, spec);
    }

    fn on_record(&mut self, tag: &str, record: &Record) {
        if self.open() {
            self.shared.model().proc_record(tag, record, Instant::now());
        }
        self.plain.on_record(tag, record);
    }

    fn on_end(&mut self, outcome: &ProcessOutcome) {
        if self.open() {
            let passed = self.plain.passed(outcome);
            self.shared.model().proc_end(&outcome.tag, passed);
        }
        self.plain.on_end(outcome);
    }

    fn on_caught_up(&mut self) {
        if std::mem::take(&mut self.changed) {
            self.shared.wake_if_sleeping();
        }
    }
}

impl RunObserver for Dashboard {
    fn on_run_event(&mut self, event: RunEvent<'_>) {
        if self.open() {
            let mut model = self.shared.model();
            match &event {
                RunEvent::BenchStart { plan } => {
                    model.bench_start(&plan.bench, plan.max_duration, Instant::now());
                }
                RunEvent::Skipped { bench, .. } => {
                    model.bench_not_run(bench, BenchState::Skipped);
                }
                RunEvent::SetupFailed { failure } => {
                    model.bench_not_run(&failure.bench, BenchState::Failed);
                }
                RunEvent::AlreadyDone { bench } => {
                    model.bench_not_run(bench, BenchState::AlreadyDone);
                }
                RunEvent::BenchEnd { outcome } => {
                    let state = if outcome.interrupted {
                        BenchState::Interrupted
                    } else if outcome.processes.iter().all(|p| self.plain.passed(p)) {
                        BenchState::Passed
                    } else {
                        BenchState::Failed
                    };
                    let observations = outcome
                        .processes
                        .iter()
                        .map(|p| p.rate_count)
                        .max()
                        .unwrap_or(0);
                    model.bench_end(&outcome.bench, state, outcome.duration, observations);
                }
                // The machine's header, and the phases around the run, which the
                // pipeline's view shows.
                _ => {}
            }
            // Not from the exec's loop, which tells when it is caught up: shown at once.
            drop(model);
            self.on_caught_up();
        }
        self.plain.on_run_event(event);
    }
}

/// The view's thread: keys and redraws until the run ends or the view is closed; the terminal
/// is restored when it returns, however it returns.
fn view_thread<W: Write>(
    shared: &Shared,
    mut terminal: Terminal<CrosstermBackend<W>>,
    keys: bool,
    palette: Palette,
) {
    /// Marks the view closed when the thread ends, a panic included.
    struct Closing<'a>(&'a Shared, bool);
    impl Drop for Closing<'_> {
        fn drop(&mut self) {
            if self.1 {
                restore_terminal();
            }
            self.0.closed.store(true, Ordering::Relaxed);
        }
    }
    let _closing = Closing(shared, keys);
    let mut throttle = Throttle::new(REDRAW_EVERY);
    let mut drawn: Option<(u64, Instant)> = None;
    let mut wanted = true;
    while !shared.stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        let generation = shared.model().generation;
        wanted |= drawn.is_none_or(|(g, at)| g != generation || now >= at + CLOCK_EVERY);
        if wanted && throttle.pass(now) {
            // Drawn from a copy: a terminal slow to take the output never holds up the run's
            // thread, which only waits for the copy.
            let rows = terminal.get_frame().area().height;
            let model = shared.model().snapshot(rows);
            let frame = draw_frame(&mut terminal, keys, |frame| {
                view::draw(frame, &model, now, palette);
            });
            if !matches!(frame, Some(Ok(()))) {
                return;
            }
            drawn = Some((model.generation, now));
            wanted = false;
        }
        // Until a redraw may be due: a pending one when the throttle opens, else the clock's,
        // unless the model changes first (the bell) or a key comes.
        let nap = match drawn {
            _ if wanted => throttle.wait(Instant::now()).max(Duration::from_millis(10)),
            Some((g, at)) => {
                shared.sleeping.store(true, Ordering::SeqCst);
                // A change filed before the flag was up rang no bell: seen here instead.
                if shared.model().generation != g || shared.stop.load(Ordering::SeqCst) {
                    shared.sleeping.store(false, Ordering::SeqCst);
                    continue;
                }
                (at + CLOCK_EVERY).saturating_duration_since(Instant::now())
            }
            None => Duration::ZERO,
        };
        let woke = wait_for(&shared.bell, keys, nap);
        shared.sleeping.store(false, Ordering::SeqCst);
        match woke {
            Woke::Gone => {
                // Its window closed or its ssh connection dropped: nobody is watching, and the
                // run goes on (the hangup signal decides its fate, as Ctrl-C would).
                return;
            }
            Woke::Bell => {
                let _ = shared.bell.read();
            }
            Woke::Time | Woke::Keys => {}
        }
        if !keys {
            continue;
        }
        // What came: keys crossterm reads from the terminal (it may hold several), resizes
        // from its signal handler.
        for _ in 0..64 {
            match event::poll(Duration::ZERO) {
                Ok(true) => {}
                Ok(false) => break,
                Err(_) => return,
            }
            match event::read() {
                Ok(event) => {
                    if on_key(shared, &mut terminal, &event) == Key::Close {
                        return;
                    }
                    wanted = true;
                }
                Err(_) => return,
            }
        }
    }
}

/// What a terminal event asks of the view.
#[derive(PartialEq, Eq)]
enum Key {
    /// Close the view (the run goes on).
    Close,
    /// Keep it open.
    Stay,
}

/// Acts on one terminal event: a key (switch process, scroll, Ctrl-C, quit) or a resize.
fn on_key<W: Write>(
    shared: &Shared,
    terminal: &mut Terminal<CrosstermBackend<W>>,
    event: &TermEvent,
) -> Key {
    match event {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
            let mut model = shared.model();
            match key.code {
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                    drop(model);
                    raise_interrupt();
                }
                KeyCode::Char('q') | KeyCode::Esc => return Key::Close,
                KeyCode::Tab | KeyCode::Right | KeyCode::Char('l') => model.select(true),
                KeyCode::BackTab | KeyCode::Left | KeyCode::Char('h') => model.select(false),
                KeyCode::Up | KeyCode::Char('k') => model.scroll_by(1),
                KeyCode::Down | KeyCode::Char('j') => model.scroll_by(-1),
                KeyCode::PageUp => model.scroll_by(10),
                KeyCode::PageDown => model.scroll_by(-10),
                KeyCode::End => model.scroll = 0,
                _ => {}
            }
        }
        TermEvent::Resize(columns, rows) => {
            let _ = terminal.resize(Rect::new(0, 0, *columns, *rows));
        }
        _ => {}
    }
    Key::Stay
}

/// What ended a wait of the view's thread.
enum Woke {
    /// The model changed.
    Bell,
    /// Keys (or some other input) on the terminal.
    Keys,
    /// The terminal hung up (or cannot be read).
    Gone,
    /// The time was up (or a signal came).
    Time,
}

/// Waits up to `nap` for the bell and, with `keys`, input on the keys' terminal (stdin).
/// Waited here rather than in crossterm: a hung-up terminal reads as always ready with nothing
/// in it, and crossterm's own wait then reads it again and again, a core spinning in a process
/// nobody watches.
fn wait_for(bell: &EventFd, keys: bool, nap: Duration) -> Woke {
    use nix::errno::Errno;
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd as _;
    let stdin = std::io::stdin();
    let mut fds = [
        PollFd::new(bell.as_fd(), PollFlags::POLLIN),
        PollFd::new(stdin.as_fd(), PollFlags::POLLIN),
    ];
    let watched = if keys { &mut fds[..] } else { &mut fds[..1] };
    let timeout = PollTimeout::try_from(nap).unwrap_or(PollTimeout::MAX);
    let gone = PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL;
    match poll(watched, timeout) {
        Ok(0) | Err(Errno::EINTR) => Woke::Time,
        Ok(_) if keys && fds[1].revents().is_some_and(|r| r.intersects(gone)) => Woke::Gone,
        Ok(_) if fds[0].revents().is_some_and(|r| !r.is_empty()) => Woke::Bell,
        Ok(_) => Woke::Keys,
        Err(_) => Woke::Gone,
    }
}

/// Ctrl-C as the terminal would have sent it outside raw mode: SIGINT to this process, which
/// the run's handler turns into its interruption (a second one kills the benchmarks at once).
fn raise_interrupt() {
    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT);
}

/// The terminal is in the view's mode (raw, alternate screen, cursor hidden).
static TERMINAL_TAKEN: AtomicBool = AtomicBool::new(false);

/// Drawing a frame on the terminal and giving the terminal back take turns.
static TERMINAL_TURN: Mutex<()> = Mutex::new(());

thread_local! {
    /// This thread draws a frame on the terminal (it holds [`TERMINAL_TURN`]).
    static DRAWING: Cell<bool> = const { Cell::new(false) };
}

/// Draws one frame with `render` on `terminal`; on the view's terminal (`taken`), in its turn,
/// and not at all (`None`) once the terminal was given back (by a panic in another thread).
fn draw_frame<W: Write>(
    terminal: &mut Terminal<CrosstermBackend<W>>,
    taken: bool,
    render: impl FnOnce(&mut Frame<'_>),
) -> Option<std::io::Result<()>> {
    if !taken {
        return Some(terminal.draw(render).map(drop));
    }
    let _turn = TERMINAL_TURN.lock().unwrap_or_else(PoisonError::into_inner);
    if !TERMINAL_TAKEN.load(Ordering::SeqCst) {
        return None;
    }
    DRAWING.set(true);
    let drawn = terminal.draw(render).map(drop);
    DRAWING.set(false);
    Some(drawn)
}

/// Puts the terminal on stderr in the view's mode, after making sure a panic gives it back.
fn open_terminal() -> std::io::Result<Terminal<CrosstermBackend<Box<dyn Write + Send>>>> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
    });
    terminal::enable_raw_mode()?;
    TERMINAL_TAKEN.store(true, Ordering::SeqCst);
    // Buffered: a frame is many small writes, flushed once at its end.
    let mut out: Box<dyn Write + Send> = Box::new(std::io::BufWriter::new(std::io::stderr()));
    // A fixed viewport, resized on the terminal's resize events: an automatic one asks the
    // terminal for its size at every frame.
    let entered = execute!(out, EnterAlternateScreen, cursor::Hide)
        .and_then(|()| terminal::size())
        .and_then(|(columns, rows)| {
            let options = TerminalOptions {
                viewport: Viewport::Fixed(Rect::new(0, 0, columns, rows)),
            };
            Terminal::with_options(CrosstermBackend::new(out), options)
        });
    if entered.is_err() {
        restore_terminal();
    }
    entered
}

/// Gives the terminal back as it was (once; later calls do nothing), after the frame being
/// drawn, if any: from the panic hook of the view's own thread panicking in a frame, at once
/// (that thread holds the turn).
fn restore_terminal() {
    let _turn =
        (!DRAWING.get()).then(|| TERMINAL_TURN.lock().unwrap_or_else(PoisonError::into_inner));
    if TERMINAL_TAKEN.swap(false, Ordering::SeqCst) {
        let mut err = std::io::stderr();
        let _ = execute!(err, LeaveAlternateScreen, cursor::Show);
        let _ = terminal::disable_raw_mode();
    }
}

/// The observer of `run`: the dashboard when `asked` (or by default, see
/// [`Console::show_view`]), else the plain lines. `benches` are the benchmarks the run may run,
/// in order. Says why the view was asked for and not shown.
pub(crate) fn run_observer(
    asked: Option<bool>,
    benches: impl FnOnce() -> Vec<BenchBudget>,
) -> Box<dyn RunObserver> {
    let console = Console::current();
    match console.show_view(asked) {
        Ok(false) => Box::new(LiveDisplay::new()),
        Err(why) => {
            crate::output::warn(&format!("--dash: {why}"));
            Box::new(LiveDisplay::new())
        }
        Ok(true) => match Dashboard::start(benches(), Screen::Terminal, console.palette().color) {
            Ok(dash) => Box::new(dash),
            Err(e) => {
                crate::output::warn(&format!(
                    "the dashboard could not take the terminal ({e}): plain lines instead"
                ));
                Box::new(LiveDisplay::new())
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn console() -> Console {
        Console {
            stderr_terminal: true,
            stdin_terminal: true,
            term: Some("xterm-256color".into()),
            ci: false,
            no_color: false,
            size: Some((120, 40)),
        }
    }

    #[test]
    fn the_view_is_the_default_only_on_an_interactive_terminal_wide_enough() {
        assert_eq!(console().show_view(None), Ok(true));
        for other in [
            Console {
                stderr_terminal: false,
                ..console()
            },
            Console {
                stdin_terminal: false,
                ..console()
            },
            Console {
                ci: true,
                ..console()
            },
            Console {
                term: Some("dumb".into()),
                ..console()
            },
            Console {
                size: Some((79, 40)),
                ..console()
            },
            Console {
                size: Some((120, 19)),
                ..console()
            },
            Console {
                size: None,
                ..console()
            },
        ] {
            assert_eq!(other.show_view(None), Ok(false), "{other:?}");
        }
        assert_eq!(console().show_view(Some(false)), Ok(false));
    }

    #[test]
    fn asked_for_it_shows_on_any_terminal_and_says_why_not() {
        let small = Console {
            size: Some((30, 8)),
            ci: true,
            stdin_terminal: false,
            ..console()
        };
        assert_eq!(small.show_view(Some(true)), Ok(true));
        let piped = Console {
            stderr_terminal: false,
            ..console()
        };
        assert!(piped.show_view(Some(true)).is_err());
    }

    #[test]
    fn no_color_and_old_terminals_get_no_colours() {
        assert!(console().palette().color);
        assert!(
            !Console {
                no_color: true,
                ..console()
            }
            .palette()
            .color
        );
        assert!(
            !Console {
                term: Some("vt100".into()),
                ..console()
            }
            .palette()
            .color
        );
    }

    /// A panic in another thread gives the terminal back between two frames, and none is drawn
    /// after; the view's own thread, panicking in a frame, gives it back at once (it holds the
    /// turn). (One test: the terminal is the process's.)
    #[test]
    fn frames_and_giving_the_terminal_back_take_turns() {
        let mut terminal = Terminal::with_options(
            CrosstermBackend::new(Vec::new()),
            TerminalOptions {
                viewport: Viewport::Fixed(Rect::new(0, 0, 10, 2)),
            },
        )
        .expect("terminal");
        let mut drawn = 0;
        // A writer of the view (no terminal taken) always draws.
        assert!(draw_frame(&mut terminal, false, |_| drawn += 1).is_some_and(|f| f.is_ok()));
        // The terminal taken, frames are drawn in their turn...
        TERMINAL_TAKEN.store(true, Ordering::SeqCst);
        assert!(draw_frame(&mut terminal, true, |_| drawn += 1).is_some());
        // ... and the frame's own thread gives it back without waiting for itself.
        let given_back = draw_frame(&mut terminal, true, |_| {
            drawn += 1;
            restore_terminal();
        });
        assert!(given_back.is_some() && !TERMINAL_TAKEN.load(Ordering::SeqCst));
        // Given back, no frame is drawn on it.
        assert!(draw_frame(&mut terminal, true, |_| drawn += 1).is_none());
        assert_eq!(drawn, 3);
    }

    /// What a headless view wrote.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Capture {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
        }
    }

    /// A headless view of a run of one benchmark, `tiny`, drawing into `out`.
    fn headless(out: &Capture) -> Dashboard {
        let budget = BenchBudget {
            name: "tiny".into(),
            max_duration: None,
            stop: None,
        };
        let screen = Screen::Writer {
            out: Box::new(out.clone()),
            size: (100, 30),
        };
        Dashboard::start(vec![budget], screen, false).expect("view")
    }

    #[test]
    fn a_headless_view_draws_and_stops_with_the_run() {
        let out = Capture::default();
        let dash = headless(&out);
        std::thread::sleep(Duration::from_millis(100));
        let stopping = Instant::now();
        drop(dash);
        // The bell wakes it: it does not sleep out its clock's second.
        assert!(stopping.elapsed() < Duration::from_millis(500));
        assert!(out.text().contains("tiny"), "{}", out.text());
    }

    /// Between frames the view sleeps until the run has delivered what came together: a change
    /// is drawn then, not at the next tick of its once-a-second clock.
    #[test]
    fn the_view_wakes_when_the_run_is_caught_up() {
        use milabench::observe::{Event, Pipe};
        let out = Capture::default();
        let mut dash = headless(&out);
        // The first frame is drawn and the throttle is open again: the view sleeps.
        std::thread::sleep(Duration::from_millis(400));
        let line = Record::new(Event::Line("rung\n".into()), Some(Pipe::Stderr));
        dash.on_record("tiny.0", &line);
        std::thread::sleep(Duration::from_millis(150));
        assert!(!out.text().contains("rung"), "drawn before being told");
        let told = Instant::now();
        dash.on_caught_up();
        while !out.text().contains("rung") && told.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(5));
        }
        // The clock's frame would come about 450 ms after being told.
        assert!(
            told.elapsed() < Duration::from_millis(300),
            "{:?}",
            told.elapsed()
        );
    }
}
