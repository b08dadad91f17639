//! Line plots drawn by `plotters` into an SVG string: one series per device or process, each
//! with its own colour and marker, long series downsampled, and vertical marks (early stop).

use plotters::coord::Shift;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters_backend::DrawingErrorKind;

use crate::escape::escape;
use crate::palette::{Marker, SeriesStyle};

/// The most points a series keeps in a plot; longer ones are downsampled (see [`downsample`]).
pub const MAX_POINTS: usize = 120;

/// Markers drawn along each series (besides its line), so shapes tell series apart in grey.
const MARKERS_PER_SERIES: usize = 8;

const WIDTH: u32 = 640;
const HEIGHT: u32 = 280;

/// One line of a plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its name in the legend.
    pub label: String,
    /// `(x, y)` points in x order.
    pub points: Vec<(f64, f64)>,
}

/// A vertical line across the plot at `x`, named in the legend (an early stop).
#[derive(Debug, Clone, PartialEq)]
pub struct VerticalMark {
    /// Where.
    pub x: f64,
    /// Its name in the legend.
    pub label: String,
}

/// A plot of series against a common x axis.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LinePlot {
    /// The caption under the plot (plain text).
    pub title: String,
    /// The x axis' name.
    pub x_label: String,
    /// The y axis' name.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// Vertical marks.
    pub marks: Vec<VerticalMark>,
}

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("the plot `{title}` could not be drawn: {reason}")]
pub struct PlotError {
    /// The plot's title.
    pub title: String,
    /// What `plotters` said.
    pub reason: String,
}

/// Keeps at most [`MAX_POINTS`] of `points`: a longer series is cut into `MAX_POINTS / 2`
/// buckets of consecutive points (equal counts), and each bucket keeps its lowest and its
/// highest point, in x order, so dips and peaks stay visible.
pub fn downsample(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS {
        return points.to_vec();
    }
    let buckets = MAX_POINTS / 2;
    let mut out = Vec::with_capacity(MAX_POINTS);
    for b in 0..buckets {
        let bucket = &points[b * points.len() / buckets..(b + 1) * points.len() / buckets];
        let lowest = bucket
            .iter()
            .enumerate()
            .min_by(|x, y| x.1.1.total_cmp(&y.1.1));
        let highest = bucket
            .iter()
            .enumerate()
            .max_by(|x, y| x.1.1.total_cmp(&y.1.1));
        if let (Some((i, lo)), Some((j, hi))) = (lowest, highest) {
            match i.cmp(&j) {
                std::cmp::Ordering::Less => out.extend([*lo, *hi]),
                std::cmp::Ordering::Greater => out.extend([*hi, *lo]),
                std::cmp::Ordering::Equal => out.push(*lo),
            }
        }
    }
    out
}

/// The empirical distribution of `samples` as plot points `(value, share of the samples at or
/// below it)` in value order: every sample when there are at most [`MAX_POINTS`], else
/// [`MAX_POINTS`] order statistics evenly spaced in rank, the smallest and the largest among
/// them. NaN samples are left out.
pub fn cdf(samples: &[f64]) -> Vec<(f64, f64)> {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let points = n.min(MAX_POINTS);
    (0..points)
        .map(|i| {
            let rank = if points == n {
                i
            } else {
                i * (n - 1) / (points - 1)
            };
            (sorted[rank], (rank + 1) as f64 / n as f64)
        })
        .collect()
}

/// The range of `values` with a margin, never empty.
fn padded_range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    let span = hi - lo;
    let margin = if span > 0.0 {
        span * 0.05
    } else {
        hi.abs().max(1.0) * 0.05
    };
    if !(from_zero && lo == 0.0) {
        lo -= margin;
    }
    hi += margin;
    (lo, hi)
}

/// The format of the numbers of an axis from `lo` to `hi` with about `labels` ticks: four
/// significant figures, and more decimals where the ticks are closer than that tells apart
/// (rates seconds apart on a clock of thousands of seconds).
fn axis_format(lo: f64, hi: f64, labels: usize) -> impl Fn(&f64) -> String {
    let step = (hi - lo) / labels.max(1) as f64;
    let needed = if step > 0.0 && step.is_finite() {
        (1 - step.log10().floor() as i32).clamp(0, 9) as usize
    } else {
        0
    };
    move |v| tick(*v, needed)
}

/// An axis number: at most four significant figures, or `min_decimals` decimals when that is
/// more, no trailing zeros.
fn tick(v: f64, min_decimals: usize) -> String {
    if v == 0.0 {
        return "0".to_owned();
    }
    let magnitude = v.abs().log10().floor() as i32;
    if !(-3..6).contains(&magnitude) {
        return format!("{v:.2e}");
    }
    let decimals = ((3 - magnitude).max(0) as usize).max(min_decimals);
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

fn colour(style: SeriesStyle) -> RGBColor {
    let (r, g, b) = style.colour;
    RGBColor(r, g, b)
}

impl LinePlot {
    /// The plot as an `<svg>` element (series downsampled to [`MAX_POINTS`]).
    pub fn to_svg(&self) -> Result<String, PlotError> {
        let mut svg = String::new();
        let fail = |reason: String| PlotError {
            title: self.title.clone(),
            reason,
        };
        {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
            self.draw(&root).map_err(|e| fail(e.to_string()))?;
            root.present().map_err(|e| fail(e.to_string()))?;
        }
        // plotters spells out the default opacity on every element: a tenth of a large page.
        Ok(svg.replace(" opacity=\"1\"", ""))
    }

    fn draw<'a>(
        &self,
        root: &DrawingArea<SVGBackend<'a>, Shift>,
    ) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
        root.fill(&WHITE)?;
        let series: Vec<Vec<(f64, f64)>> =
            self.series.iter().map(|s| downsample(&s.points)).collect();
        let xs = series
            .iter()
            .flatten()
            .map(|p| p.0)
            .chain(self.marks.iter().map(|m| m.x));
        let (x0, x1) = padded_range(xs, false);
        let (y0, y1) = padded_range(series.iter().flatten().map(|p| p.1), true);
        let mut chart = ChartBuilder::on(root)
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 13))
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_label_formatter(&axis_format(x0, x1, 8))
            .y_label_formatter(&axis_format(y0, y1, 6))
            .x_labels(8)
            .y_labels(6)
            .draw()?;
        for (i, (points, s)) in series.iter().zip(&self.series).enumerate() {
            let style = SeriesStyle::nth(i);
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    ShapeStyle::from(colour(style)).stroke_width(2),
                ))?
                .label(s.label.as_str())
                .legend(move |at| MarkerAt {
                    at,
                    style,
                    with_line: true,
                });
            let step = (points.len() / MARKERS_PER_SERIES).max(1);
            chart.draw_series(points.iter().step_by(step).map(|&at| MarkerAt {
                at,
                style,
                with_line: false,
            }))?;
        }
        // Marks closer than a pixel or two are drawn once (every process stopping together).
        let mut drawn_at: Vec<f64> = Vec::new();
        for (i, mark) in self.marks.iter().enumerate() {
            if drawn_at
                .iter()
                .any(|x| (x - mark.x).abs() < (x1 - x0) / 300.0)
            {
                continue;
            }
            drawn_at.push(mark.x);
            let line = [(mark.x, y0), (mark.x, y1)];
            let grey = ShapeStyle::from(RGBColor(0x33, 0x33, 0x33)).stroke_width(1);
            let drawn = chart.draw_series(DashedLineSeries::new(line, 6, 4, grey))?;
            // One legend entry for all the marks of a kind.
            if self.marks[..i].iter().all(|m| m.label != mark.label) {
                drawn
                    .label(mark.label.as_str())
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], grey));
            }
        }
        if !self.series.is_empty() {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(0xBB, 0xBB, 0xBB))
                .label_font(("sans-serif", 12))
                .position(SeriesLabelPosition::LowerRight)
                .draw()?;
        }
        Ok(())
    }

    /// The plot in a `<figure>` with its caption; a plot that cannot be drawn says so in its
    /// place (the rest of the page stands).
    pub fn figure(&self) -> String {
        let body = match self.to_svg() {
            Ok(svg) => svg,
            Err(e) => format!("<p class=\"fail\">{}</p>", escape(&e.to_string())),
        };
        format!(
            "<figure>\n{body}\n<figcaption>{}</figcaption>\n</figure>\n",
            escape(&self.title)
        )
    }
}

/// A series' marker at one point; in the legend (`with_line`), on a stretch of its line.
struct MarkerAt<C> {
    at: C,
    style: SeriesStyle,
    with_line: bool,
}

impl<'p, C: 'p> PointCollection<'p, C> for &'p MarkerAt<C> {
    type Point = &'p C;
    type IntoIter = std::iter::Once<&'p C>;

    fn point_iter(self) -> std::iter::Once<&'p C> {
        std::iter::once(&self.at)
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for MarkerAt<C> {
    fn draw<I: Iterator<Item = (i32, i32)>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((mut x, y)) = pos.next() else {
            return Ok(());
        };
        let paint = ShapeStyle::from(colour(self.style)).stroke_width(1);
        if self.with_line {
            backend.draw_line((x, y), (x + 18, y), &paint.stroke_width(2))?;
            x += 9;
        }
        let r = 3;
        match self.style.marker {
            Marker::Circle => backend.draw_circle((x, y), r as u32, &paint, false),
            Marker::Dot => backend.draw_circle((x, y), r as u32, &paint, true),
            Marker::Square => backend.draw_rect((x - r, y - r), (x + r, y + r), &paint, false),
            Marker::Block => backend.draw_rect((x - r, y - r), (x + r, y + r), &paint, true),
            Marker::Cross => {
                backend.draw_line((x - r, y - r), (x + r, y + r), &paint)?;
                backend.draw_line((x - r, y + r), (x + r, y - r), &paint)
            }
            Marker::Triangle => backend.draw_path(
                [
                    (x, y - r - 1),
                    (x + r + 1, y + r),
                    (x - r - 1, y + r),
                    (x, y - r - 1),
                ],
                &paint,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_series_keep_their_extremes_within_the_limit() {
        let points: Vec<(f64, f64)> = (0..10_000)
            .map(|i| {
                (
                    i as f64,
                    if i == 4321 {
                        1e6
                    } else if i == 777 {
                        -5.0
                    } else {
                        1.0
                    },
                )
            })
            .collect();
        let kept = downsample(&points);
        assert!(kept.len() <= MAX_POINTS, "{}", kept.len());
        assert!(kept.contains(&(4321.0, 1e6)));
        assert!(kept.contains(&(777.0, -5.0)));
        assert!(kept.windows(2).all(|w| w[0].0 < w[1].0), "x order kept");
        let short = &points[..100];
        assert_eq!(downsample(short), short);
    }

    #[test]
    fn a_plot_is_an_svg_with_its_series_and_legend() {
        let plot = LinePlot {
            title: "rate <items/s>".into(),
            x_label: "seconds".into(),
            y_label: "items/s".into(),
            series: (0..3)
                .map(|d| Series {
                    label: format!("cuda:{d}"),
                    points: (0..500)
                        .map(|i| (i as f64 * 0.1, 100.0 + d as f64 + (i % 7) as f64))
                        .collect(),
                })
                .collect(),
            marks: vec![VerticalMark {
                x: 40.0,
                label: "early stop".into(),
            }],
        };
        let figure = plot.figure();
        assert!(figure.contains("<svg"), "{figure}");
        assert!(figure.contains("cuda:2"));
        assert!(figure.contains("early stop"));
        assert!(figure.contains("<figcaption>rate &lt;items/s&gt;</figcaption>"));
        // Three series, each a polyline in its own Okabe–Ito colour.
        for colour in ["#0072B2", "#E69F00", "#009E73"] {
            assert!(figure.contains(colour), "{colour}");
        }
    }

    #[test]
    fn a_distribution_keeps_its_ends_within_the_limit() {
        assert_eq!(
            cdf(&[3.0, f64::NAN, 1.0, 2.0, 2.0]),
            [(1.0, 0.25), (2.0, 0.5), (2.0, 0.75), (3.0, 1.0)]
        );
        assert!(cdf(&[]).is_empty());
        let many: Vec<f64> = (0..10_000).rev().map(f64::from).collect();
        let points = cdf(&many);
        assert_eq!(points.len(), MAX_POINTS);
        assert_eq!(points[0], (0.0, 1e-4));
        assert_eq!(points[MAX_POINTS - 1], (9999.0, 1.0));
        assert!(
            points
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1)
        );
    }

    #[test]
    fn axis_numbers_are_short() {
        assert_eq!(tick(1234.5678, 0), "1235");
        assert_eq!(tick(0.123456, 0), "0.1235");
        assert_eq!(tick(2.5, 0), "2.5");
        assert_eq!(tick(0.0, 0), "0");
        assert_eq!(tick(12345678.0, 0), "1.23e7");
        // Ticks a tenth of a millisecond apart on a clock of a thousand seconds.
        let format = axis_format(1000.0, 1000.001, 8);
        let labels: Vec<String> = (0..8)
            .map(|i| format(&(1000.0 + f64::from(i) * 0.000125)))
            .collect();
        let mut distinct = labels.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), 8, "{labels:?}");
        assert_eq!(axis_format(0.0, 600.0, 8)(&75.0), "75");
    }
}
