//! `milabench run --dry-run`: plans rendered as a shell script that does what the run would do,
//! one block per benchmark, processes of a benchmark started together and waited for.

use milabench_vocab::shell_quote;

use crate::spec::BenchPlan;

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
