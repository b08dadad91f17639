//! The page shell and its blocks: a whole document with its style and its sorting script inline.

use std::fmt::Write as _;

use crate::escape::escape;

/// The page's style: readable at a laptop's width, plots scale down with the window, and print
/// without the sorting hints.
const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:1rem 1.5rem;color:#1a1a1a;line-height:1.4}
h1{font-size:1.5rem;margin:.2rem 0 .8rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccc}h3{font-size:1rem;margin:1.2rem 0 .4rem}
.headline{display:flex;flex-wrap:wrap;gap:1.5rem;align-items:flex-start;background:#f4f6f8;border:1px solid #d8dde3;border-radius:6px;padding:1rem}
.headline .big{font-size:2rem;font-weight:600}.headline .big small{font-size:1rem;font-weight:400;color:#444}
.headline dl{display:grid;grid-template-columns:max-content auto;gap:.15rem 1rem;margin:0}.headline dt{color:#555}.headline dd{margin:0}
.pass{color:#006b3c;font-weight:600}.fail{color:#b00020;font-weight:600}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:.5rem 0;font-size:.9rem}
th,td{padding:.25rem .5rem;border-bottom:1px solid #e2e2e2;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
table.sortable th{cursor:pointer;user-select:none;background:#f4f6f8}
table.sortable th[data-dir=asc]::after{content:' \\25B2'}table.sortable th[data-dir=desc]::after{content:' \\25BC'}
tr.failed td:first-child::before{content:'\\2716 ';color:#b00020}tr.failed{background:#fdecee}
.pm{color:#555}.bar{display:inline-block;height:.7rem;background:#0072B2;vertical-align:middle;margin-right:.3rem}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:.5rem}
figure{margin:0}figure svg{max-width:100%;height:auto}figcaption{font-size:.8rem;color:#555}
pre{background:#f7f7f7;border:1px solid #e2e2e2;padding:.5rem;overflow-x:auto;font-size:.8rem;max-height:24rem}
.scroll{overflow-x:auto}.note{font-size:.85rem;color:#444}
@media print{table.sortable th::after{content:''!important}.plots{display:block}}
";

/// Sorts a `table.sortable` by the clicked column: numbers by their `data-v` (missing ones
/// first), text otherwise; a second click reverses.
const SORT_SCRIPT: &str = "
function sortKey(c){var v=c.getAttribute('data-v');if(v!==null){var n=parseFloat(v);return isNaN(n)?-Infinity:n}return c.textContent.trim().toLowerCase()}
document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){
var t=th.closest('table'),b=t.tBodies[0],i=th.cellIndex,asc=th.getAttribute('data-dir')!=='asc';
t.querySelectorAll('th').forEach(function(h){h.removeAttribute('data-dir')});th.setAttribute('data-dir',asc?'asc':'desc');
Array.from(b.rows).sort(function(x,y){var p=sortKey(x.cells[i]),q=sortKey(y.cells[i]);return (p<q?-1:p>q?1:0)*(asc?1:-1)}).forEach(function(r){b.appendChild(r)})})});
";

/// A whole HTML document: a title and the blocks pushed in order.
#[derive(Debug, Clone)]
pub struct Page {
    title: String,
    body: String,
}

impl Page {
    /// An empty page titled `title` (plain text).
    pub fn new(title: &str) -> Page {
        Page {
            title: title.to_owned(),
            body: String::new(),
        }
    }

    /// Appends a block of HTML (made by this crate's pieces, or escaped by the caller).
    pub fn push(&mut self, html: &str) {
        self.body.push_str(html);
        if !html.ends_with('\n') {
            self.body.push('\n');
        }
    }

    /// The document: `<!DOCTYPE html>`, the inline style, the title as the first heading, the
    /// blocks, and the sorting script.
    pub fn finish(self) -> String {
        let title = escape(&self.title);
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n{}<script>{SORT_SCRIPT}</script>\n</body>\n</html>\n",
            self.body
        )
    }
}

/// The headline block: a large figure (`big`, plain text, with `detail` in small type beside
/// it) and a list of facts (plain text names and values).
pub fn headline(big: &str, detail: &str, facts: &[(String, String)]) -> String {
    let mut out = format!(
        "<div class=\"headline\" id=\"headline\">\n<div class=\"big\">{} <small>{}</small></div>\n<dl>\n",
        escape(big),
        escape(detail)
    );
    for (name, value) in facts {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(name), escape(value));
    }
    out.push_str("</dl>\n</div>\n");
    out
}

/// A section: an `h2` heading (plain text) with `id` (made a safe element id by [`anchor`])
/// and its content (HTML).
pub fn section(id: &str, heading: &str, content: &str) -> String {
    format!(
        "<section id=\"{}\">\n<h2>{}</h2>\n{content}</section>\n",
        anchor(id),
        escape(heading)
    )
}

/// The most characters of one line that [`details`] shows.
pub const MAX_LINE_CHARS: usize = 2_000;

/// The most characters of text that one [`details`] block shows (whole lines).
pub const MAX_DETAILS_CHARS: usize = 100_000;

/// A block of text shown as written (escaped), under a small heading (plain text). A line
/// longer than [`MAX_LINE_CHARS`] is cut, and the lines past [`MAX_DETAILS_CHARS`] are left
/// out, each cut said where it is: a 10 MB exception text would otherwise make a page of
/// tens of megabytes that a browser struggles to open.
pub fn details(heading: &str, text: &str) -> String {
    let mut shown = String::new();
    let mut lines = text.split_inclusive('\n');
    for line in lines.by_ref() {
        let body = line.trim_end_matches('\n');
        match body.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                let left_out = body[cut..].chars().count();
                let _ = writeln!(
                    shown,
                    "{} [… {left_out} more characters of this line left out]",
                    &body[..cut]
                );
            }
            None => shown.push_str(line),
        }
        if shown.len() >= MAX_DETAILS_CHARS {
            break;
        }
    }
    let rest = lines.count();
    if rest > 0 {
        let _ = writeln!(shown, "[… {rest} more lines left out]");
    }
    format!(
        "<h3>{}</h3>\n<pre>{}</pre>\n",
        escape(heading),
        escape(&shown)
    )
}

/// `text` made a safe element id, one per text: letters, digits, `-` and `_` kept, any other
/// character written as its code point in hexadecimal between dots (`a.b` is `a.2e.b`, `a b`
/// is `a.20.b`), so that `a.b`, `a-b` and `a b` get three ids.
pub fn anchor(text: &str) -> String {
    let mut id = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            id.push(c);
        } else {
            let _ = write!(id, ".{:x}.", u32::from(c));
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_holds_its_blocks_and_nothing_external() {
        let mut page = Page::new("Report <1>");
        page.push(&headline(
            "12.5",
            "± 0.3",
            &[("GPU".into(), "A100 & co".into())],
        ));
        page.push(&section("a b", "Runs", &details("stderr", "x < y")));
        let html = page.finish();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>Report &lt;1&gt;</title>"));
        assert!(html.contains("<dd>A100 &amp; co</dd>"));
        assert!(html.contains("<section id=\"a.20.b\">"));
        assert!(html.contains("<pre>x &lt; y</pre>"));
        for external in ["src=", "href=\"http", "@import", "url("] {
            assert!(!html.contains(external), "{external}");
        }
    }

    /// Issue 38, item 16: benchmarks named `a.b`, `a-b` and `a b` shared one HTML id.
    #[test]
    fn names_that_differ_get_ids_that_differ() {
        let ids: Vec<String> = ["a.b", "a-b", "a b", "a_b", "a.2e.b", "ä"]
            .iter()
            .map(|name| anchor(name))
            .collect();
        assert_eq!(
            ids,
            ["a.2e.b", "a-b", "a.20.b", "a_b", "a.2e.2e.2e.b", ".e4."]
        );
        for (i, id) in ids.iter().enumerate() {
            assert!(!ids[..i].contains(id), "{id}");
        }
    }

    /// Issue 38, item 16: a 10 MB exception text gave a 46 MB page. Long lines are cut and
    /// the lines past the block's size left out, each cut said.
    #[test]
    fn a_huge_text_is_cut_and_says_so() {
        let long = format!("first\n{}\nlast\n", "x".repeat(10_000_000));
        let html = details("error", &long);
        assert!(html.len() < 10_000, "{}", html.len());
        assert!(html.contains("first\n"), "{html}");
        assert!(
            html.contains("[… 9998000 more characters of this line left out]"),
            "{html}"
        );
        assert!(html.contains("last\n"), "{html}");
        let many = "a line of the traceback\n".repeat(1_000_000);
        let html = details("error", &many);
        assert!(html.len() < MAX_DETAILS_CHARS + 1_000, "{}", html.len());
        assert!(html.contains("more lines left out]"), "{html}");
        // Text within the bounds is shown whole.
        assert_eq!(details("h", "a\nb"), "<h3>h</h3>\n<pre>a\nb</pre>\n");
    }
}
