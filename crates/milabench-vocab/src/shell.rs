//! Shell quoting, once for the workspace.

/// Quotes a word for a POSIX shell, only when needed: the one quoting of the workspace (dry-run
/// scripts, ssh command lines, Slurm batch scripts, the commands in install logs).
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("--lr"), "--lr");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("{\"a\": 1}"), "'{\"a\": 1}'");
        assert_eq!(shell_quote("a=b,c:d@e%f+g/h_i.j"), "a=b,c:d@e%f+g/h_i.j");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
        assert_eq!(shell_quote("été"), "'été'");
    }

    /// What a shell makes of the quoted words is the words.
    #[test]
    fn a_shell_reads_back_the_words() {
        let words = [
            "plain",
            "",
            "two words",
            "it's",
            "''",
            "$HOME `id` $(id)",
            "back\\slash",
            "line\nbreak",
            "*?[x]",
            "~",
            "été",
            "-x=1",
        ];
        let line: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
        let script = format!(
            "for w in {}; do printf '%s\\0' \"$w\"; done",
            line.join(" ")
        );
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("sh runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let read: Vec<String> = String::from_utf8(out.stdout)
            .expect("utf-8")
            .split_terminator('\0')
            .map(str::to_string)
            .collect();
        assert_eq!(read, words);
    }
}
