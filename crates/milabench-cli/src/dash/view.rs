//! Drawing the model into a frame: which sections fit the terminal (pure, in [`layout`]), and
//! each section's widgets. A small terminal keeps the summary line first, then the processes,
//! then the stderr pane, then the benchmark list; without colours, states read from their
//! marks and words, the selection is drawn in reverse video.

use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline};

use super::model::{BenchState, GpuGauge, Model, Proc, RATE_WINDOW, buckets};

/// The key help of the bottom line.
const KEYS: &str = "Tab/←/→ process · ↑/↓ PgUp/PgDn scroll · q close this view (the run goes on) · Ctrl-C stop the run";

/// Where each section goes; `None`: it does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sections {
    /// The suite's one-line summary (always there).
    pub summary: Rect,
    /// The suite's progress bar.
    pub gauge: Option<Rect>,
    /// The list of benchmarks.
    pub benches: Option<Rect>,
    /// The running benchmark's processes.
    pub procs: Option<Rect>,
    /// The selected process's GPUs.
    pub gpus: Option<Rect>,
    /// The selected process's stderr.
    pub stderr: Option<Rect>,
    /// The key help.
    pub keys: Option<Rect>,
}

/// Splits `area` for `procs` processes, the selected one with `gpus` GPUs.
pub(crate) fn layout(area: Rect, procs: usize, gpus: usize) -> Sections {
    let row = |y: u16| Rect::new(area.x, y, area.width, 1);
    let mut sections = Sections {
        summary: row(area.y).intersection(area),
        gauge: None,
        benches: None,
        procs: None,
        gpus: None,
        stderr: None,
        keys: None,
    };
    if area.height < 4 || area.width < 24 {
        return sections;
    }
    let mut body = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
    if area.height >= 12 {
        sections.gauge = Some(row(body.y));
        body.y += 1;
        body.height -= 1;
    }
    if area.height >= 8 {
        sections.keys = Some(row(area.bottom() - 1));
        body.height -= 1;
    }
    if area.width >= 80 && body.height >= 6 {
        let list = (area.width / 4).clamp(24, 36);
        let [left, right] =
            Layout::horizontal([Constraint::Length(list), Constraint::Fill(1)]).areas(body);
        sections.benches = Some(left);
        body = right;
    }
    // Each process takes two lines (numbers, then its rate sparkline) inside a border.
    let wanted = 2 * procs.max(1) as u16 + 2;
    let gpu_rows = if gpus > 0 { gpus as u16 + 2 } else { 0 };
    let procs_height = wanted.min(body.height.saturating_sub(3).max(body.height / 2).max(3));
    sections.procs = Some(Rect {
        height: procs_height.min(body.height),
        ..body
    });
    let mut rest = Rect {
        y: body.y + procs_height.min(body.height),
        height: body.height.saturating_sub(procs_height),
        ..body
    };
    if gpu_rows > 0 && rest.height >= gpu_rows + 3 {
        sections.gpus = Some(Rect {
            height: gpu_rows,
            ..rest
        });
        rest.y += gpu_rows;
        rest.height -= gpu_rows;
    }
    if rest.height >= 3 {
        sections.stderr = Some(rest);
    }
    sections
}

/// Styles for a terminal with or without colours.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Palette {
    /// Colours may be used.
    pub color: bool,
}

impl Palette {
    fn with(self, color: Color, otherwise: Modifier) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new().add_modifier(otherwise)
        }
    }

    fn state(self, state: BenchState) -> Style {
        match state {
            BenchState::Passed => self.with(Color::Green, Modifier::empty()),
            BenchState::Failed | BenchState::Interrupted => self
                .with(Color::Red, Modifier::BOLD)
                .add_modifier(Modifier::BOLD),
            BenchState::Running => self.with(Color::Cyan, Modifier::BOLD),
            BenchState::Waiting | BenchState::Skipped | BenchState::AlreadyDone => {
                self.with(Color::DarkGray, Modifier::empty())
            }
        }
    }

    fn selected(self) -> Style {
        if self.color {
            Style::new().bg(Color::Blue).fg(Color::White)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
}

/// The mark and word of a state.
fn mark(state: BenchState) -> (&'static str, &'static str) {
    match state {
        BenchState::Waiting => ("·", ""),
        BenchState::Running => ("▶", "running"),
        BenchState::Passed => ("✓", "ok"),
        BenchState::Failed => ("✗", "FAILED"),
        BenchState::Skipped => ("-", "skipped"),
        BenchState::AlreadyDone => ("=", "done before"),
        BenchState::Interrupted => ("!", "interrupted"),
    }
}

/// `1:02:03`, or `2:05` under an hour.
pub(crate) fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// A text bar `width` cells wide, filled to `share` (0 to 1).
pub(crate) fn bar(share: f64, width: usize) -> String {
    let filled = ((share.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!("{}{}", "█".repeat(filled), "░".repeat(width - filled))
}

/// A rate with three significant digits or so.
fn number(value: f64) -> String {
    match value.abs() {
        v if v >= 1000.0 => format!("{value:.0}"),
        v if v >= 10.0 => format!("{value:.1}"),
        _ => format!("{value:.3}"),
    }
}

/// The suite's summary line.
pub(crate) fn summary(model: &Model, now: Instant) -> String {
    let counts = model.counts();
    let total = model.benches.len();
    let eta = model
        .eta(now)
        .map_or_else(|| "unknown".to_owned(), |eta| format!("~{}", clock(eta)));
    format!(
        "milabench · {}/{total} done · {} running · {} left · {} failed · elapsed {} · ETA {eta}",
        counts.done,
        counts.running,
        counts.left,
        counts.failed,
        clock(now.saturating_duration_since(model.started)),
    )
}

/// Draws the whole view of `model` at `now`.
pub(crate) fn draw(frame: &mut Frame<'_>, model: &Model, now: Instant, palette: Palette) {
    let area = frame.area();
    let gpus = model.selected_proc().map_or(0, |p| p.gpus.len());
    let sections = layout(area, model.procs.len(), gpus);
    let counts = model.counts();
    let head = if counts.failed > 0 {
        palette.with(Color::Red, Modifier::BOLD)
    } else {
        Style::new().add_modifier(Modifier::BOLD)
    };
    frame.render_widget(
        Paragraph::new(Span::styled(summary(model, now), head)),
        sections.summary,
    );
    if let Some(rect) = sections.gauge {
        let share = counts.done as f64 / model.benches.len().max(1) as f64;
        let label = format!(" {:>3.0}%", share * 100.0);
        let width = (rect.width as usize).saturating_sub(label.len() + 1);
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(
                    bar(share, width),
                    palette.with(Color::Cyan, Modifier::empty()),
                ),
                Span::raw(label),
            ])),
            rect,
        );
    }
    if let Some(rect) = sections.benches {
        draw_benches(frame, model, rect, palette);
    }
    if let Some(rect) = sections.procs {
        draw_procs(frame, model, now, rect, palette);
    }
    if let (Some(rect), Some(proc)) = (sections.gpus, model.selected_proc()) {
        draw_gpus(frame, proc, rect);
    }
    if let Some(rect) = sections.stderr {
        draw_stderr(frame, model, rect);
    }
    if let Some(rect) = sections.keys {
        frame.render_widget(
            Paragraph::new(Span::styled(
                KEYS,
                palette.with(Color::DarkGray, Modifier::empty()),
            )),
            rect,
        );
    }
}

fn draw_benches(frame: &mut Frame<'_>, model: &Model, rect: Rect, palette: Palette) {
    let block = Block::new().borders(Borders::ALL).title(" benchmarks ");
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let rows = inner.height as usize;
    // Keep the running benchmark (or the last one over) in sight.
    let focus = model.running.unwrap_or_else(|| {
        model
            .benches
            .iter()
            .rposition(|r| r.state.is_over())
            .unwrap_or(0)
    });
    let first = focus
        .saturating_sub(rows / 2)
        .min(model.benches.len().saturating_sub(rows));
    let lines: Vec<Line<'_>> = model
        .benches
        .iter()
        .skip(first)
        .take(rows)
        .map(|row| {
            let (mark, word) = mark(row.state);
            let time = row.duration.map(clock).unwrap_or_default();
            Line::from(vec![
                Span::styled(format!("{mark} "), palette.state(row.state)),
                Span::raw(row.budget.name.clone()),
                Span::styled(format!(" {word} {time}"), palette.state(row.state)),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn draw_procs(frame: &mut Frame<'_>, model: &Model, now: Instant, rect: Rect, palette: Palette) {
    let bench = model
        .running
        .map_or("(waiting for the next benchmark)", |i| {
            model.benches[i].budget.name.as_str()
        });
    let block = Block::new().borders(Borders::ALL).title(format!(
        " {bench} · {} · rates of the last minute ",
        clock(now.saturating_duration_since(model.bench_started))
    ));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let selected = model.selected.min(model.procs.len().saturating_sub(1));
    // Keep the selected process in sight when they do not all fit.
    let fit = (inner.height / 2).max(1) as usize;
    let first = selected.saturating_sub(fit - 1);
    for (i, proc) in model.procs.iter().enumerate().skip(first).take(fit) {
        let y = inner.y + 2 * (i - first) as u16;
        if y >= inner.bottom() {
            break;
        }
        let numbers = Rect::new(inner.x, y, inner.width, 1);
        let style = if i == selected {
            palette.selected()
        } else {
            Style::new()
        };
        frame.render_widget(
            Paragraph::new(Span::styled(proc_line(proc, inner.width as usize), style)),
            numbers,
        );
        if y + 1 < inner.bottom() {
            let spark = Rect::new(inner.x, y + 1, inner.width, 1);
            let values = buckets(&proc.rates, now, RATE_WINDOW, spark.width as usize);
            let peak = values.iter().flatten().copied().fold(0.0, f64::max);
            // A slice without a rate holds the one before: rates may come slower than slices.
            let mut held = None;
            let bars: Vec<Option<u64>> = values
                .iter()
                .map(|v| {
                    held = v.or(held);
                    held.map(|v| (v / peak.max(f64::MIN_POSITIVE) * 100.0) as u64)
                })
                .collect();
            frame.render_widget(
                Sparkline::default()
                    .data(bars)
                    .max(100)
                    .style(palette.with(Color::Yellow, Modifier::empty())),
                spark,
            );
        }
    }
}

/// The numbers of one process on one line of `width` cells: tag, rate, loss, progress to the
/// early stop, its state once ended (the last fields go first when it is narrow).
pub(crate) fn proc_line(proc: &Proc, width: usize) -> String {
    let mut fields = vec![proc.tag.clone()];
    fields.push(match proc.rate {
        Some(rate) => format!("rate {} {}", number(rate), proc.units),
        None => "no rate yet".to_owned(),
    });
    if let Some(loss) = proc.loss {
        fields.push(format!("loss {}", number(loss)));
    }
    if let (Some(share), Some((done, total))) = (proc.progress_share(), proc.progress) {
        fields.push(format!("stop {} {done:.0}/{total:.0}", bar(share, 10)));
    }
    match proc.passed {
        Some(true) => fields.push("ended ok".to_owned()),
        Some(false) => fields.push("FAILED".to_owned()),
        None => {}
    }
    // Drop middle fields until it fits, keeping the tag and the state.
    let mut line = fields.join("  ");
    while line.chars().count() > width && fields.len() > 2 {
        let at = fields.len() - if proc.passed.is_some() { 2 } else { 1 };
        fields.remove(at);
        line = fields.join("  ");
    }
    line
}

fn draw_gpus(frame: &mut Frame<'_>, proc: &Proc, rect: Rect) {
    let block = Block::new()
        .borders(Borders::ALL)
        .title(format!(" GPUs of {} ", proc.tag));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let lines: Vec<Line<'_>> = proc
        .gpus
        .iter()
        .map(|gpu| Line::raw(gpu_line(gpu, proc.peak_power, inner.width as usize)))
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// One GPU's load, memory and power on a line of `width` cells: bars as wide as fit (none when
/// they would be too thin to read), the numbers always. Power bars are on the scale of `peak`.
pub(crate) fn gpu_line(gpu: &GpuGauge, peak: f64, width: usize) -> String {
    let mut parts: Vec<(&str, f64, String)> = Vec::new();
    if let Some(load) = gpu.load {
        parts.push(("load", load, format!("{:>3.0}%", load * 100.0)));
    }
    if let Some([used, total]) = gpu.memory.filter(|[_, t]| *t > 0.0) {
        let gib = |mib: f64| mib / 1024.0;
        parts.push((
            "mem",
            used / total,
            format!("{:.1}/{:.1} GiB", gib(used), gib(total)),
        ));
    }
    if let Some(power) = gpu.power {
        let share = if peak > 0.0 { power / peak } else { 0.0 };
        parts.push(("power", share, format!("{power:.0} W")));
    }
    let head = format!("gpu {:<3}", gpu.device);
    // Each part: two spaces, its label, a space, the bar, a space, its number.
    let fixed: usize = head.chars().count()
        + parts
            .iter()
            .map(|(label, _, number)| label.len() + number.chars().count() + 4)
            .sum::<usize>();
    let bar_width = (width.saturating_sub(fixed) / parts.len().max(1)).min(20);
    let mut text = head;
    for (label, share, number) in parts {
        if bar_width >= 3 {
            text += &format!("  {label} {} {number}", bar(share, bar_width));
        } else {
            text += &format!("  {label} {number}");
        }
    }
    text
}

fn draw_stderr(frame: &mut Frame<'_>, model: &Model, rect: Rect) {
    let proc = model.selected_proc();
    let title = match (proc, model.scroll) {
        (Some(p), 0) => format!(" stderr of {} ", p.tag),
        (Some(p), up) => format!(" stderr of {} ({up} lines up) ", p.tag),
        (None, _) => " stderr ".to_owned(),
    };
    let block = Block::new().borders(Borders::ALL).title(title);
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let Some(proc) = proc else { return };
    let rows = inner.height as usize;
    let end = proc.stderr.len().saturating_sub(model.scroll);
    let lines: Vec<Line<'_>> = proc
        .stderr
        .iter()
        .take(end)
        .skip(end.saturating_sub(rows))
        .map(|l| Line::raw(l.as_str()))
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dash::model::BenchBudget;
    use milabench::observe::{DataPayload, Event, GpuSample, Pipe, Record};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn model(now: Instant) -> Model {
        let budget = |name: &str| BenchBudget {
            name: name.into(),
            max_duration: Some(Duration::from_secs(60)),
            stop: Some(30),
        };
        let mut model = Model::new(vec![budget("resnet"), budget("bert"), budget("llm")], now);
        model.bench_start("resnet", None, now);
        model.bench_end("resnet", BenchState::Failed, Duration::from_secs(3), 0);
        model.bench_start("bert", None, now);
        model.proc_start("bert.D0");
        let payload = DataPayload {
            rate: Some(123.4),
            units: Some("items/s".into()),
            loss: Some(0.25),
            progress: Some([10.0, 30.0]),
            gpudata: Some(vec![(
                "0".into(),
                GpuSample {
                    load: Some(0.75),
                    memory: Some([4096.0, 16384.0]),
                    power: Some(300.0),
                    ..GpuSample::default()
                },
            )]),
            ..DataPayload::default()
        };
        model.proc_record(
            "bert.D0",
            &Record::new(Event::Data(Box::new(payload)), Some(Pipe::Data)),
            now,
        );
        model.proc_record(
            "bert.D0",
            &Record::new(Event::Line("warming up\n".into()), Some(Pipe::Stderr)),
            now,
        );
        model
    }

    fn screen(width: u16, height: u16) -> String {
        let now = Instant::now();
        screen_of(&model(now), now, width, height)
    }

    fn screen_of(model: &Model, now: Instant, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
        terminal
            .draw(|frame| draw(frame, model, now, Palette { color: false }))
            .expect("draw");
        let buffer = terminal.backend().buffer();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_wide_terminal_shows_every_section() {
        let sections = layout(Rect::new(0, 0, 120, 40), 2, 1);
        assert!(sections.gauge.is_some());
        assert!(sections.benches.is_some());
        assert!(sections.gpus.is_some());
        assert!(sections.stderr.is_some());
        assert!(sections.keys.is_some());
        let procs = sections.procs.expect("processes");
        assert_eq!(procs.height, 6, "two lines per process and the border");
    }

    #[test]
    fn smaller_terminals_drop_sections_in_order() {
        let narrow = layout(Rect::new(0, 0, 60, 30), 1, 0);
        assert_eq!(narrow.benches, None, "no list beside the processes");
        assert!(narrow.stderr.is_some());
        let short = layout(Rect::new(0, 0, 100, 7), 1, 0);
        assert_eq!((short.gauge, short.keys), (None, None));
        assert!(short.procs.is_some());
        let tiny = layout(Rect::new(0, 0, 20, 3), 4, 2);
        assert_eq!(tiny.summary, Rect::new(0, 0, 20, 1));
        assert_eq!(
            (tiny.procs, tiny.gpus, tiny.stderr, tiny.benches),
            (None, None, None, None)
        );
    }

    #[test]
    fn the_screen_shows_names_rates_and_failures() {
        let text = screen(100, 24);
        assert!(
            text.contains("1/3 done · 1 running · 1 left · 1 failed"),
            "{text}"
        );
        assert!(text.contains("✗ resnet FAILED"), "{text}");
        assert!(text.contains("▶ bert running"), "{text}");
        assert!(text.contains("rate 123.4 items/s"), "{text}");
        assert!(text.contains("loss 0.250"), "{text}");
        assert!(text.contains("10/30"), "{text}");
        assert!(text.contains("warming up"), "{text}");
        assert!(text.contains("GPUs of bert.D0"), "{text}");
        assert!(text.contains(" 75%  mem "), "{text}");
        assert!(text.contains("4.0/16.0 GiB  power "), "{text}");
        assert!(text.contains("300 W"), "{text}");
        assert!(text.contains("q close this view"), "{text}");
    }

    #[test]
    fn every_size_draws_without_panicking() {
        for (w, h) in [
            (1, 1),
            (10, 2),
            (23, 4),
            (24, 4),
            (40, 8),
            (79, 12),
            (80, 12),
            (200, 60),
        ] {
            let text = screen(w, h);
            assert!(
                text.starts_with("milabench"[..(w as usize).min(9)].trim()),
                "{w}x{h}: {text}"
            );
        }
    }

    /// A frame drawn from a snapshot (rates of the processes in sight, the selected one's stderr)
    /// is the frame of the whole model, wherever the selection is.
    #[test]
    fn a_snapshot_draws_what_the_whole_model_does() {
        let now = Instant::now();
        let mut model = model(now);
        for p in 0..60 {
            let tag = format!("bert.D{}", p + 1);
            for i in 0..20u32 {
                let payload = DataPayload {
                    rate: Some(f64::from(p * 7 + i)),
                    units: Some("items/s".into()),
                    ..DataPayload::default()
                };
                let at = now - Duration::from_secs(u64::from(20 - i));
                let rate = Record::new(Event::Data(Box::new(payload)), Some(Pipe::Data));
                model.proc_record(&tag, &rate, at);
                let line =
                    Record::new(Event::Line(format!("{tag} line {i}\n")), Some(Pipe::Stderr));
                model.proc_record(&tag, &line, at);
            }
        }
        for selected in [0, 1, 17, 30, 59, 60] {
            model.selected = selected;
            for (width, height) in [(120, 40), (100, 24), (200, 90)] {
                let whole = screen_of(&model, now, width, height);
                let snapshot = screen_of(&model.snapshot(height), now, width, height);
                assert_eq!(whole, snapshot, "selected {selected}, {width}x{height}");
            }
        }
        let copy = model.snapshot(40);
        assert!(copy.procs[0].rates.is_empty() && copy.procs[55].rates.len() == 20);
        assert!(copy.procs[59].stderr.is_empty() && copy.procs[60].stderr.len() == 20);
    }

    #[test]
    fn process_lines_shrink_to_fit() {
        let now = Instant::now();
        let model = model(now);
        let proc = &model.procs[0];
        assert_eq!(
            proc_line(proc, 200),
            "bert.D0  rate 123.4 items/s  loss 0.250  stop ███░░░░░░░ 10/30"
        );
        assert_eq!(proc_line(proc, 30), "bert.D0  rate 123.4 items/s");
    }

    #[test]
    fn gpu_lines_give_bars_the_room_left() {
        let gpu = GpuGauge {
            device: "1".into(),
            load: Some(0.5),
            memory: Some([2048.0, 8192.0]),
            power: Some(100.0),
        };
        let wide = gpu_line(&gpu, 200.0, 200);
        assert_eq!(
            wide,
            format!(
                "gpu 1    load {}  50%  mem {} 2.0/8.0 GiB  power {} 100 W",
                bar(0.5, 20),
                bar(0.25, 20),
                bar(0.5, 20)
            )
        );
        let fits = gpu_line(&gpu, 200.0, 73);
        assert_eq!(fits.chars().count(), 72, "{fits}");
        assert_eq!(
            gpu_line(&gpu, 200.0, 40),
            "gpu 1    load  50%  mem 2.0/8.0 GiB  power 100 W"
        );
    }

    #[test]
    fn clocks_and_bars() {
        assert_eq!(clock(Duration::from_secs(125)), "2:05");
        assert_eq!(clock(Duration::from_secs(3723)), "1:02:03");
        assert_eq!(bar(0.5, 4), "██░░");
        assert_eq!(bar(2.0, 2), "██");
    }
}
