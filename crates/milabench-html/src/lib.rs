//! Pieces of the self-contained HTML reports that `milabench report`, `milabench compare` and
//! `benchit cache report` write: the page shell (inline CSS and a few lines of inline script,
//! nothing fetched), escaped text, sortable tables with interval and bar cells, the headline
//! block and SVG line plots drawn with `plotters`' SVG backend (time series, and distributions as
//! their [`cdf`]).
//!
//! Every piece returns a string of HTML; nothing here reads files or prints. A page opens from an
//! e-mail attachment: no network fetch, no external script, no external style sheet.

mod escape;
mod page;
mod palette;
mod plot;
mod table;

pub use escape::escape;
pub use page::{MAX_DETAILS_CHARS, MAX_LINE_CHARS, Page, anchor, details, headline, section};
pub use palette::{MARKERS, Marker, OKABE_ITO, SeriesStyle};
pub use plot::{LinePlot, MAX_POINTS, PlotError, Series, VerticalMark, cdf, downsample};
pub use table::{Cell, Table};
