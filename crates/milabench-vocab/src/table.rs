//! The one text-table layout of the tools' own tables (every table that need not follow the
//! Python tool's layout: `compare`, sweeps, `check`, the results database, `load`, benchit):
//! a header line, then one line per row; each column as wide as its widest cell, left- or
//! right-aligned, columns two spaces apart, no space at the end of a line.

/// How the cells of a column line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Against the column's left edge (text).
    Left,
    /// Against the column's right edge (numbers).
    Right,
}

/// One row: its cells, and whether its last cell runs over the columns after it.
#[derive(Debug, Clone)]
struct Row {
    cells: Vec<String>,
    spanning: bool,
}

/// A text table built row by row, then [`render`](TextTable::render)ed.
#[derive(Debug, Clone)]
pub struct TextTable {
    align: Vec<Align>,
    rows: Vec<Row>,
    header: bool,
    indent: usize,
}

impl TextTable {
    /// A table whose header is `header`, every column left-aligned.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> TextTable {
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        TextTable {
            align: vec![Align::Left; header.len()],
            rows: vec![Row {
                cells: header,
                spanning: false,
            }],
            header: true,
            indent: 0,
        }
    }

    /// A table of `columns` columns without a header line, every column left-aligned.
    pub fn without_header(columns: usize) -> TextTable {
        TextTable {
            align: vec![Align::Left; columns],
            rows: Vec::new(),
            header: false,
            indent: 0,
        }
    }

    /// The same table with the columns at `columns` (from 0) right-aligned.
    pub fn right_aligned(mut self, columns: impl IntoIterator<Item = usize>) -> TextTable {
        for column in columns {
            if let Some(align) = self.align.get_mut(column) {
                *align = Align::Right;
            }
        }
        self
    }

    /// The same table with every line indented by `spaces`.
    pub fn indented(mut self, spaces: usize) -> TextTable {
        self.indent = spaces;
        self
    }

    /// Adds a row; a missing cell is empty, one past the header's columns is dropped.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.push(cells, false);
    }

    /// Adds a row whose last cell (a note, an error) is written as it is over the columns
    /// after it and does not widen its own column.
    pub fn spanning_row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.push(cells, true);
    }

    fn push<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>, spanning: bool) {
        let cells = cells
            .into_iter()
            .map(Into::into)
            .take(self.align.len())
            .collect();
        self.rows.push(Row { cells, spanning });
    }

    /// Whether the table has no row (the header aside).
    pub fn is_empty(&self) -> bool {
        self.rows.len() == usize::from(self.header)
    }

    /// The lines of the table, each ending with a newline.
    pub fn render(&self) -> String {
        let mut widths = vec![0; self.align.len()];
        for row in &self.rows {
            let counted = row.cells.len().saturating_sub(usize::from(row.spanning));
            for (width, cell) in widths.iter_mut().zip(&row.cells[..counted]) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in &self.rows {
            let mut line = " ".repeat(self.indent);
            for (column, &width) in widths.iter().enumerate() {
                let cell = row.cells.get(column).map_or("", String::as_str);
                if row.spanning && column + 1 == row.cells.len() {
                    line.push_str(cell);
                    break;
                }
                let pad = " ".repeat(width.saturating_sub(cell.chars().count()));
                match self.align[column] {
                    Align::Left => line.extend([cell, &pad]),
                    Align::Right => line.extend([&pad, cell]),
                }
                line.push_str("  ");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_two_spaces_apart() {
        let mut table = TextTable::new(["name", "rate", "note"]).right_aligned([1]);
        table.row(["a", "1.5", "x"]);
        table.row(["longer", "123.25", ""]);
        assert_eq!(
            table.render(),
            "name      rate  note\n\
             a          1.5  x\n\
             longer  123.25\n"
        );
    }

    #[test]
    fn a_spanning_cell_does_not_widen_its_column() {
        let mut table = TextTable::new(["op", "pass", "n"])
            .right_aligned([2])
            .indented(2);
        table.row(["mm", "forward", "10"]);
        table.spanning_row(["mm", "FAILED: out of memory"]);
        assert_eq!(
            table.render(),
            "  op  pass      n\n  mm  forward  10\n  mm  FAILED: out of memory\n"
        );
        assert!(!table.is_empty());
        assert!(TextTable::new(["a"]).is_empty());
    }

    #[test]
    fn a_table_without_header_has_only_its_rows() {
        let mut table = TextTable::without_header(2);
        assert!(table.is_empty());
        table.row(["ok", "disk"]);
        table.row(["FAIL", "gpu"]);
        assert_eq!(table.render(), "ok    disk\nFAIL  gpu\n");
    }

    #[test]
    fn widths_count_characters_not_bytes() {
        let mut table = TextTable::new(["x", "y"]);
        table.row(["±1", "z"]);
        assert_eq!(table.render(), "x   y\n±1  z\n");
    }
}
