//! Tables of the results-database commands, rendered as aligned text, Markdown, CSV or JSON.

use serde::Serialize;

use crate::args::TableFormat;

/// A table: a header and rows of cells already written as text; `items` are the same rows as
/// values, for JSON.
pub struct Table<'a, T: Serialize> {
    /// Column names.
    pub columns: &'a [&'a str],
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
    /// The rows as values (JSON output).
    pub items: &'a [T],
}

impl<T: Serialize> Table<'_, T> {
    /// The table in `format`, ending with a newline.
    pub fn render(&self, format: TableFormat) -> crate::errors::Result<String> {
        Ok(match format {
            TableFormat::Json => serde_json::to_string_pretty(self.items)? + "\n",
            TableFormat::Csv => self.csv(),
            TableFormat::Md => self.markdown(),
            TableFormat::Text => self.text(),
        })
    }

    fn csv(&self) -> String {
        let header = self.columns.iter().map(|c| c.as_bytes());
        let rows = self
            .rows
            .iter()
            .map(|row| row.iter().map(String::as_bytes).collect::<Vec<_>>());
        milabench::results::csv_lines(std::iter::once(header.collect()).chain(rows))
    }

    fn markdown(&self) -> String {
        let line = |cells: &mut dyn Iterator<Item = String>| {
            format!("| {} |\n", cells.collect::<Vec<_>>().join(" | "))
        };
        let mut out = line(&mut self.columns.iter().map(|c| (*c).to_owned()));
        out += &line(&mut self.columns.iter().map(|_| "---".to_owned()));
        for row in &self.rows {
            out += &line(&mut row.iter().map(|c| milabench::results::markdown_text(c)));
        }
        out
    }

    fn text(&self) -> String {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &mut dyn Iterator<Item = &str>| {
            let padded: Vec<String> = cells
                .zip(&widths)
                .map(|(cell, &w)| {
                    if cell.parse::<f64>().is_ok() || cell.ends_with('%') {
                        format!("{cell:>w$}")
                    } else {
                        format!("{cell:<w$}")
                    }
                })
                .collect();
            padded.join("  ").trim_end().to_owned() + "\n"
        };
        let mut out = line(&mut self.columns.iter().copied());
        for row in &self.rows {
            out += &line(&mut row.iter().map(String::as_str));
        }
        out
    }
}

/// A number with `digits` decimals, empty when there is none.
pub fn number(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(String::new, |x| format!("{x:.digits$}"))
}

/// An RFC 3339 time as `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn short_time(time: Option<&str>) -> String {
    time.map_or_else(String::new, |t| {
        t.chars().take(19).collect::<String>().replace('T', " ")
    })
}

/// The machine of a run in a few words: `8 x NVIDIA H100`, else its CPU.
pub fn system(gpu_model: Option<&str>, gpu_count: i64, cpu: Option<&str>) -> String {
    match (gpu_model, cpu) {
        (Some(gpu), _) => format!("{gpu_count} x {gpu}"),
        (None, Some(cpu)) => cpu.to_owned(),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_keeps_every_cell() {
        let table = Table {
            columns: &["name", "value"],
            rows: vec![
                vec!["a,b".into(), "1.5".into()],
                vec!["c|d".into(), "".into()],
            ],
            items: &[serde_json::json!({"name": "a,b"})],
        };
        assert_eq!(
            table.render(TableFormat::Csv).unwrap(),
            "name,value\n\"a,b\",1.5\nc|d,\n"
        );
        assert_eq!(
            table.render(TableFormat::Md).unwrap(),
            "| name | value |\n| --- | --- |\n| a,b | 1.5 |\n| c\\|d |  |\n"
        );
        assert_eq!(
            table.render(TableFormat::Text).unwrap(),
            "name  value\na,b     1.5\nc|d\n"
        );
        assert!(table.render(TableFormat::Json).unwrap().contains("\"a,b\""));
    }
}
