//! `milabench run --dry-run`: plans rendered as a shell script that does what the run would do,
//! one block per benchmark, processes of a benchmark started together and waited for.

use crate::spec::BenchPlan;

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

/// Renders plans as a runnable shell script.
pub fn render_script(plans: &[BenchPlan]) -> String {
    let mut out = String::from(
        "#!/bin/sh\n# Commands `milabench run` would start, one block per benchmark.\n",
    );
    out.push_str("# Each process also gets DATA_FD (its data channel) from milabench.\n");
    for plan in plans {
        out.push_str(&format!(
            "\n# --- {} ({} process{}{})\n",
            plan.bench,
            plan.processes.len(),
            if plan.processes.len() == 1 { "" } else { "es" },
            plan.max_duration
                .map(|d| format!(", stopped after {} s", d.as_secs_f64()))
                .unwrap_or_default()
        ));
        for file in &plan.files {
            if let Some(parent) = file.path.parent() {
                out.push_str(&format!("mkdir -p {}\n", shell_quote(parent.as_str())));
            }
            out.push_str(&format!(
                "cat > {} <<'MILABENCH_EOF'\n{}\nMILABENCH_EOF\n",
                shell_quote(file.path.as_str()),
                file.content
            ));
        }
        let many = plan.processes.len() > 1;
        for process in &plan.processes {
            out.push_str(&format!("# {}\n", process.tag_name()));
            let mut line = format!("(cd {} && env", shell_quote(process.cwd.as_str()));
            for (key, value) in &process.env {
                line.push_str(&format!(
                    " \\\n    {}",
                    shell_quote(&format!("{key}={value}"))
                ));
            }
            let words: Vec<String> = process.argv.iter().map(|w| shell_quote(w)).collect();
            line.push_str(&format!(" \\\n    {}", words.join(" ")));
            line.push(')');
            if many {
                line.push_str(" &");
            }
            out.push_str(&line);
            out.push('\n');
        }
        if many {
            out.push_str("wait\n");
        }
    }
    out
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
