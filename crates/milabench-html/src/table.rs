//! Sortable tables whose numeric cells carry their exact value (`data-v`), so the page can be
//! sorted and checked against the machine-readable report.

use std::fmt::Write as _;

use crate::escape::escape;

/// One cell of a [`Table`].
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text.
    Text(String),
    /// A number: its exact value (NaN for none), shown as `shown`.
    Number {
        /// The value (sorting and checks read it).
        value: f64,
        /// How it is shown.
        shown: String,
    },
    /// A number with its 95% interval's half-width: `shown ± half` (the half-width in small
    /// type).
    Interval {
        /// The value.
        value: f64,
        /// How the value is shown.
        shown: String,
        /// How the half-width is shown (empty: no interval).
        half: String,
    },
    /// A share from 0 to 1 drawn as a bar, with its percentage.
    Bar(f64),
}

impl Cell {
    /// A number shown with `decimals` decimals (`nan` for NaN).
    pub fn number(value: f64, decimals: usize) -> Cell {
        Cell::Number {
            value,
            shown: fixed(value, decimals),
        }
    }

    /// A value and the half-width of its interval, both with `decimals` decimals.
    pub fn interval(value: f64, half_width: f64, decimals: usize) -> Cell {
        Cell::Interval {
            value,
            shown: fixed(value, decimals),
            half: if half_width.is_nan() {
                String::new()
            } else {
                fixed(half_width, decimals)
            },
        }
    }

    fn render(&self, column: &str) -> String {
        let col = escape(column);
        match self {
            Cell::Text(text) => format!("<td data-col=\"{col}\">{}</td>", escape(text)),
            Cell::Number { value, shown } => format!(
                "<td data-col=\"{col}\" data-v=\"{}\">{}</td>",
                exact(*value),
                escape(shown)
            ),
            Cell::Interval { value, shown, half } => {
                let half = if half.is_empty() {
                    String::new()
                } else {
                    format!(" <span class=\"pm\">± {}</span>", escape(half))
                };
                format!(
                    "<td data-col=\"{col}\" data-v=\"{}\">{}{half}</td>",
                    exact(*value),
                    escape(shown)
                )
            }
            Cell::Bar(share) => {
                let pct = if share.is_finite() {
                    share.clamp(0.0, 1.0) * 100.0
                } else {
                    0.0
                };
                format!(
                    "<td data-col=\"{col}\" data-v=\"{}\"><span class=\"bar\" style=\"width:{:.1}px\"></span>{pct:.1}%</td>",
                    exact(*share),
                    pct * 1.2
                )
            }
        }
    }
}

/// `value` with `decimals` decimals, `nan` for NaN, `inf` for infinities.
fn fixed(value: f64, decimals: usize) -> String {
    if value.is_nan() {
        "nan".to_owned()
    } else {
        format!("{value:.decimals$}")
    }
}

/// The exact value for `data-v`: Rust's shortest text that reads back as the same `f64`; empty
/// for NaN and infinities (JSON's `null`).
fn exact(value: f64) -> String {
    if value.is_finite() {
        format!("{value}")
    } else {
        String::new()
    }
}

/// A table with a header row; sortable by clicking a column's header.
#[derive(Debug, Clone, Default)]
pub struct Table {
    id: String,
    columns: Vec<(String, String)>,
    rows: Vec<(Vec<Cell>, Vec<&'static str>, String)>,
}

impl Table {
    /// A table with the id `id` and its columns: a key (the `data-col` of its cells) and a header
    /// (plain text).
    pub fn new(id: &str, columns: &[(&str, &str)]) -> Table {
        Table {
            id: crate::anchor(id),
            columns: columns
                .iter()
                .map(|(key, header)| ((*key).to_owned(), (*header).to_owned()))
                .collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row: one cell per column, the row's classes (`failed` marks a failure) and its
    /// key (`data-row`, e.g. the benchmark name).
    pub fn row(&mut self, key: &str, cells: Vec<Cell>, classes: Vec<&'static str>) {
        self.rows.push((cells, classes, key.to_owned()));
    }

    /// The table's HTML.
    pub fn render(&self) -> String {
        let mut out = format!(
            "<div class=\"scroll\"><table class=\"sortable\" id=\"{}\">\n<thead><tr>",
            self.id
        );
        for (_, header) in &self.columns {
            let _ = write!(out, "<th>{}</th>", escape(header));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for (cells, classes, key) in &self.rows {
            let class = if classes.is_empty() {
                String::new()
            } else {
                format!(" class=\"{}\"", classes.join(" "))
            };
            let _ = write!(out, "<tr data-row=\"{}\"{class}>", escape(key));
            for (cell, (column, _)) in cells.iter().zip(&self.columns) {
                out.push_str(&cell.render(column));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table></div>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_carry_exact_values_and_escaped_text() {
        let mut table = Table::new(
            "t",
            &[("name", "Name"), ("perf", "perf"), ("share", "share")],
        );
        table.row(
            "a<b",
            vec![
                Cell::Text("a<b".into()),
                Cell::interval(7878.451234567891, 12.345, 2),
                Cell::Bar(0.25),
            ],
            vec!["failed"],
        );
        table.row(
            "none",
            vec![
                Cell::Text("none".into()),
                Cell::interval(f64::NAN, f64::NAN, 2),
                Cell::Bar(f64::NAN),
            ],
            vec![],
        );
        let html = table.render();
        assert!(
            html.contains("<tr data-row=\"a&lt;b\" class=\"failed\">"),
            "{html}"
        );
        assert!(
            html.contains("data-v=\"7878.451234567891\">7878.45 <span class=\"pm\">± 12.35</span>"),
            "{html}"
        );
        assert!(
            html.contains(
                "data-v=\"0.25\"><span class=\"bar\" style=\"width:30.0px\"></span>25.0%"
            ),
            "{html}"
        );
        assert!(
            html.contains("<td data-col=\"perf\" data-v=\"\">nan</td>"),
            "{html}"
        );
    }
}
