//! The nested text report shared by every validation layer.

/// A tree of titled sections and lines, rendered with the Python tool's exact layout: titles
/// underlined by `= - ^ * \``, two spaces of indent per level, an indented blank line after each
/// body, and sections without any entry left out.
#[derive(Debug, Clone)]
pub struct Summary {
    sections: Vec<Section>,
    stack: Vec<usize>,
    has_content: bool,
}

#[derive(Debug, Clone)]
struct Section {
    title: String,
    body: Vec<Item>,
}

#[derive(Debug, Clone)]
enum Item {
    Line(String),
    Section(usize),
}

const UNDERLINES: [char; 5] = ['=', '-', '^', '*', '`'];
const INDENT: &str = "  ";

impl Default for Summary {
    fn default() -> Self {
        Summary::new()
    }
}

impl Summary {
    /// An empty summary.
    pub fn new() -> Summary {
        Summary {
            sections: vec![Section {
                title: String::new(),
                body: Vec::new(),
            }],
            stack: vec![0],
            has_content: false,
        }
    }

    /// Opens a section inside the current one; lines added go into it until
    /// [`Summary::end_section`].
    pub fn begin_section(&mut self, title: impl Into<String>) {
        let id = self.sections.len();
        self.sections.push(Section {
            title: title.into(),
            body: Vec::new(),
        });
        let parent = *self.stack.last().unwrap_or(&0);
        self.sections[parent].body.push(Item::Section(id));
        self.stack.push(id);
    }

    /// Closes the current section.
    pub fn end_section(&mut self) {
        if self.stack.len() > 1 {
            self.stack.pop();
        }
    }

    /// Runs `body` inside a section titled `title`.
    pub fn section(&mut self, title: impl Into<String>, body: impl FnOnce(&mut Summary)) {
        self.begin_section(title);
        body(self);
        self.end_section();
    }

    /// Adds a line to the current section.
    pub fn add(&mut self, line: impl Into<String>) {
        self.has_content = true;
        let current = *self.stack.last().unwrap_or(&0);
        self.sections[current].body.push(Item::Line(line.into()));
    }

    /// Whether no line was ever added (then nothing is shown).
    pub fn is_empty(&self) -> bool {
        !self.has_content
    }

    /// The rendered text; empty when no line was added.
    pub fn render(&self) -> String {
        if !self.has_content {
            return String::new();
        }
        let mut out = Vec::new();
        self.render_body(0, 0, &mut out);
        out.push(String::new());
        let mut text = out.join("\n");
        text.push('\n');
        text
    }

    fn render_body(&self, id: usize, depth: usize, out: &mut Vec<String>) {
        let indent = INDENT.repeat(depth);
        for item in &self.sections[id].body {
            match item {
                Item::Line(line) => out.push(format!("{indent}{line}")),
                Item::Section(child) => {
                    let section = &self.sections[*child];
                    if section.body.is_empty() {
                        continue;
                    }
                    let rule = UNDERLINES[depth.min(UNDERLINES.len() - 1)];
                    out.push(format!("{indent}{}", section.title));
                    let underline: String =
                        std::iter::repeat_n(rule, section.title.chars().count()).collect();
                    out.push(format!("{indent}{underline}"));
                    self.render_body(*child, depth + 1, out);
                }
            }
        }
        out.push(indent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_python_summary() {
        let mut s = Summary::new();
        s.section("Errors", |s| {
            for bench in ["matmult", "matsub"] {
                s.section(bench, |s| {
                    for i in 1..=3 {
                        s.add(format!("{i}. Errors stuff happened"));
                    }
                });
            }
        });
        let expected = include_str!(
            "../../../tests/fixtures/milabench/expected/validation/summary-format.txt"
        );
        assert_eq!(s.render(), expected);
    }

    #[test]
    fn nothing_is_shown_without_lines() {
        let mut s = Summary::new();
        s.section("Empty", |s| s.section("inner", |_| {}));
        assert_eq!(s.render(), "");
    }
}
