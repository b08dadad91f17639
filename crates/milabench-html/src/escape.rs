//! Text made safe to place in HTML content and attribute values.

/// Escapes `text` for HTML content and double-quoted attribute values: `&`, `<`, `>`, `"` and
/// `'` become character references.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_become_references() {
        assert_eq!(
            escape(r#"<script>alert("a&b's")</script>"#),
            "&lt;script&gt;alert(&quot;a&amp;b&#39;s&quot;)&lt;/script&gt;"
        );
        assert_eq!(escape("plain résumé"), "plain résumé");
    }
}
