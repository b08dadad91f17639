//! Tables of the results-database commands, rendered as aligned text, Markdown, CSV or JSON.

use milabench_vocab::TextTable;
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

    /// Aligned text ([`TextTable`]): a column of numbers (or percentages) right-aligned.
    fn text(&self) -> String {
        let is_number = |cell: &str| cell.parse::<f64>().is_ok() || cell.ends_with('%');
        let numeric = (0..self.columns.len()).filter(|&c| {
            let mut filled = (self.rows.iter())
                .filter_map(|row| row.get(c))
                .filter(|cell| !cell.is_empty())
                .peekable();
            filled.peek().is_some() && filled.all(|cell| is_number(cell))
        });
        let mut table = TextTable::new(self.columns.iter().copied()).right_aligned(numeric);
        for row in &self.rows {
            table.row(row.iter().map(String::as_str));
        }
        table.render()
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

    /// A column of numbers is right-aligned, its header with it (the header stood at the left
    /// of the numbers when each cell chose its own side).
    #[test]
    fn a_column_of_numbers_is_right_aligned_header_included() {
        let table = Table {
            columns: &["bench", "perf", "status"],
            rows: vec![
                vec!["a".into(), "12345.50".into(), "done".into()],
                vec!["b".into(), "".into(), "1".into()],
            ],
            items: &[serde_json::json!({})],
        };
        assert_eq!(
            table.render(TableFormat::Text).unwrap(),
            "bench      perf  status\na      12345.50  done\nb                1\n"
        );
    }
}
