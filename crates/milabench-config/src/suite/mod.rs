//! Suite resolution: suite YAML files -> the ordered list of resolved benchmarks.
//!
//! The order of operations is milabench's:
//! 1. layers: the built-in `_defaults` entry, every file with its `include`s expanded depth
//!    first (an included file comes before the file that includes it), then each `--override`;
//!    folded with [`merge`](crate::merge::merge);
//! 2. matrix entries replaced by one benchmark per combination;
//! 3. `inherits` chains (tags accumulate), then the `*` entry on top of every benchmark;
//! 4. finalisation (`name`, absolute `definition`, `tag`), private `_names` and `*` dropped;
//! 5. `${...}` interpolation over `{system, multirun, packs}`;
//! 6. selection (`--select`, `--exclude`), each benchmark kept read into a [`ResolvedBench`]
//!    (typed fields, a malformed one reported with its location);
//! 7. the `benchfile.yaml` of each benchmark that runs (enabled, with a `definition`), read
//!    once per folder.
//!
//! Deliberate differences from the Python tool (its defects): a relative `definition` is
//! resolved against the folder of the file that wrote it; the `*` entry does not carry its
//! file's `config_base`; a string matrix value is one value, not a list of characters; matrix
//! argv values mix matrix and launch-time placeholders; include and inheritance cycles are
//! errors instead of endless loops; keys with dashes work in dotted overrides; a benchmark
//! without `group`/`install_group` gets its name rather than crashing selection. The resolved
//! `system` is kept once in [`Suite::system`] (a [`ResolvedSystem`]) instead of being copied
//! into every benchmark (the Python tool's `system: ${system}` default); the `config` event of a
//! process and `milabench resolve --with-system` put it back in.
//!
//! Each stage has its file: `layers` (1, with the parsing of `--override`), `matrix` (2),
//! `inheritance` (3), `finalize` (4), `interpolation` (5), `selection` (6) and `bench` (7);
//! [`resolve_suite`] runs them in order.

mod bench;
mod finalize;
mod inheritance;
mod interpolation;
mod layers;
mod matrix;
mod selection;

use std::path::Path;

use crate::error::ConfigError;
use crate::limits::MAX_SUITE_VALUES;
use crate::system::{ResolvedSystem, SystemConfig};
use crate::value::{Map, Node};

pub use bench::{FieldError, PlanMethod, ResolvedBench};
pub use layers::parse_override;

/// What to resolve.
pub struct SuiteRequest<'a> {
    /// The suite file.
    pub config: &'a Path,
    /// The resolved system file.
    pub system: &'a SystemConfig,
    /// `--override` values, in order.
    pub overrides: &'a [String],
    /// `--select` names (empty: everything).
    pub select: &'a [String],
    /// `--exclude` names.
    pub exclude: &'a [String],
    /// Environment lookup for `${oc.env:...}`.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> SuiteRequest<'a> {
    /// A request for the whole suite: no overrides, no selection.
    pub fn whole(
        config: &'a Path,
        system: &'a SystemConfig,
        env: &'a dyn Fn(&str) -> Option<String>,
    ) -> SuiteRequest<'a> {
        SuiteRequest {
            config,
            system,
            overrides: &[],
            select: &[],
            exclude: &[],
            env,
        }
    }
}

/// A resolved suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The public benchmarks the selection (`--select`, `--exclude`) keeps, enabled or not, in
    /// suite order.
    pub benches: Vec<ResolvedBench>,
    /// The resolved system.
    pub system: ResolvedSystem,
    /// Every entry after inheritance, private ones included, before interpolation (report
    /// weights are read from here).
    pub raw: Map,
    /// Non-fatal remarks, e.g. benchmarks without a monitor tag.
    pub warnings: Vec<String>,
}

impl Suite {
    /// The benchmarks that would run: enabled, and with a definition.
    pub fn runnable(&self) -> impl Iterator<Item = &ResolvedBench> {
        self.benches.iter().filter(|b| b.is_runnable())
    }
}

/// Resolves a suite.
pub fn resolve_suite(request: &SuiteRequest<'_>) -> Result<Suite, ConfigError> {
    let mut warnings = Vec::new();
    let layers::MergedLayers { entries, loaded } = layers::merged_layers(request, &mut warnings)?;
    let entries = matrix::expand_matrices(entries)?;
    let entries = inheritance::resolve_inheritance(entries)?;
    let packs = finalize::finalize_all(&entries, &loaded, &mut warnings)?;
    let (system, packs) = interpolation::interpolate_packs(request, packs)?;
    let system = ResolvedSystem::new(system)?;
    let mut benches = selection::select(request, packs, &mut warnings)?;
    bench::read_benchfiles(&mut benches)?;
    Ok(Suite {
        benches,
        system,
        raw: entries,
        warnings,
    })
}

/// The values held by the entries built so far in one step of resolution, against
/// [`MAX_SUITE_VALUES`]: matrices and inheritance copy values, and this bounds the copies.
#[derive(Default)]
struct ValueBudget {
    spent: usize,
}

impl ValueBudget {
    /// Counts the values of `node`, just built for entry `name`.
    fn spend(&mut self, name: &str, node: &Node) -> Result<(), ConfigError> {
        self.spent = self.spent.saturating_add(node.value_count());
        if self.spent > MAX_SUITE_VALUES {
            return Err(ConfigError::too_large(
                node.location.clone(),
                format!(
                    "the suite holds more than {MAX_SUITE_VALUES} values once matrices are expanded and entries inherit their parents' settings (crossed at `{name}`)"
                ),
                "make fewer benchmarks inherit from large entries, use smaller matrices, or split the suite",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_INCLUDE_DEPTH;
    use crate::system::{SystemInputs, load_system};
    use crate::yaml;
    use proptest::prelude::*;

    fn resolve_text(text: &str, overrides: &[String]) -> Result<Suite, ConfigError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("suite.yaml");
        std::fs::write(&path, text).expect("write");
        std::fs::write(dir.path().join("other.yaml"), "_base: {enabled: true}\n").expect("write");
        let system = load_system(None, &SystemInputs::local("cpu", "/b", "r")).expect("system");
        let env = |_: &str| None;
        resolve_suite(&SuiteRequest {
            overrides,
            ..SuiteRequest::whole(&path, &system, &env)
        })
    }

    #[test]
    fn inheritance_accumulates_tags_and_overrides_the_rest() {
        let suite = resolve_text(
            "_p: {inherits: _defaults, tags: [b, a], weight: 1, argv: {--x: 1, --y: 2}}\n\
             c: {inherits: _p, tags: [c], argv: {--y: 3}, definition: d}\n",
            &[],
        )
        .expect("resolves");
        let c = &suite.benches[0];
        assert_eq!(c.tags, ["a", "b", "c"]);
        assert_eq!(c.argv, ["--x", "1", "--y", "3"]);
        assert_eq!(c.group, "c");
        assert!(c.is_runnable());
    }

    #[test]
    fn overrides_with_dashes_and_star() {
        let suite = resolve_text(
            "b-1: {inherits: _defaults, definition: d, argv: {--batch-size: 8}}\n",
            &[
                "b-1.argv.--batch-size=64".to_string(),
                "{'*': {weight: 3}}".to_string(),
            ],
        )
        .expect("resolves");
        let b = &suite.benches[0];
        assert_eq!(b.argv, ["--batch-size", "64"]);
        assert_eq!(b.weight, 3.0);
    }

    /// Resolves `files[0]` of `files` (name, text), all written to one folder.
    fn resolve_files(files: &[(String, String)]) -> Result<Suite, ConfigError> {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        let system = load_system(None, &SystemInputs::local("cpu", "/b", "r")).expect("system");
        let env = |_: &str| None;
        resolve_suite(&SuiteRequest::whole(
            &dir.path().join(&files[0].0),
            &system,
            &env,
        ))
    }

    #[test]
    fn a_long_include_chain_is_refused_before_the_stack_runs_out() {
        let files: Vec<(String, String)> = (0..MAX_INCLUDE_DEPTH + 8)
            .map(|i| (format!("f{i}.yaml"), format!("include: f{}.yaml\n", i + 1)))
            .chain(std::iter::once((
                format!("f{}.yaml", MAX_INCLUDE_DEPTH + 8),
                "{}\n".to_string(),
            )))
            .collect();
        let err = resolve_files(&files).expect_err("refused");
        assert!(matches!(err, ConfigError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("nested more than"), "{err}");
        // A short chain of the same shape loads.
        let short = [
            ("a.yaml".to_string(), "include: b.yaml\n".to_string()),
            ("b.yaml".to_string(), "x: {enabled: true}\n".to_string()),
        ];
        assert_eq!(resolve_files(&short).expect("loads").benches.len(), 1);
    }

    #[test]
    fn a_file_included_exponentially_often_is_refused() {
        // Each file includes the next one twice: 2^11 reads.
        let files: Vec<(String, String)> = (0..11)
            .map(|i| {
                let next = format!("f{}.yaml", i + 1);
                (format!("f{i}.yaml"), format!("include: [{next}, {next}]\n"))
            })
            .chain(std::iter::once((
                "f11.yaml".to_string(),
                "{}\n".to_string(),
            )))
            .collect();
        let err = resolve_files(&files).expect_err("refused");
        assert!(err.to_string().contains("reads more than"), "{err}");
    }

    #[test]
    fn a_huge_matrix_is_refused_before_it_is_built() {
        let values = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
        let text = format!(
            "m:\n  matrix: {{a: [{0}], b: [{0}], c: [{0}]}}\n  job: {{name: 'x-{{a}}-{{b}}-{{c}}'}}\n",
            values(200)
        );
        let err = resolve_text(&text, &[]).expect_err("refused");
        assert!(matches!(err, ConfigError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("200 x 200 x 200"), "{err}");
        let small = format!(
            "m:\n  matrix: {{a: [{0}], b: [{0}]}}\n  job: {{name: 'x-{{a}}-{{b}}'}}\n",
            values(3)
        );
        assert_eq!(
            resolve_text(&small, &[]).expect("resolves").benches.len(),
            9
        );
    }

    #[test]
    fn a_deep_inheritance_chain_written_child_first_resolves() {
        // Entry i inherits from entry i + 1, written before it; only the root sets `weight`.
        let depth = 5_000;
        let mut text = String::new();
        for i in 0..depth {
            text.push_str(&format!("_p{i}: {{inherits: _p{}}}\n", i + 1));
        }
        text.push_str(&format!("_p{depth}: {{weight: 7, tags: [monogpu]}}\n"));
        text.push_str("leaf: {inherits: _p0, definition: d}\n");
        let suite = resolve_text(&text, &[]).expect("resolves");
        let leaf = &suite.benches[0];
        assert_eq!(leaf.weight, 7.0);
        assert_eq!(leaf.tags, ["monogpu"]);
    }

    #[test]
    fn interpolations_that_copy_copies_are_bounded() {
        // Each entry holds two copies of the previous one's list: 2^30 values unbounded.
        let mut text = "b0: {x: [1, 2, 3, 4]}\n".to_string();
        for i in 1..30 {
            let p = i - 1;
            text.push_str(&format!(
                "b{i}: {{x: ['${{packs.b{p}.x}}', '${{packs.b{p}.x}}']}}\n"
            ));
        }
        let err = resolve_text(&text, &[]).expect_err("refused");
        assert!(matches!(err, ConfigError::TooLarge { .. }), "{err}");
    }

    fn fragment() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            Just("include"),
            Just("inherits"),
            Just("matrix"),
            Just("job"),
            Just("name"),
            Just("argv"),
            Just("enabled"),
            Just("tags"),
            Just("definition"),
            Just("append"),
            Just("a"),
            Just("_base"),
            Just("*"),
            Just("--x"),
        ];
        let value = prop_oneof![
            Just("other.yaml".to_string()),
            Just("_base".to_string()),
            Just("a".to_string()),
            Just("'${system.arch}'".to_string()),
            Just("'${.name}'".to_string()),
            Just("'${..x}'".to_string()),
            Just("'{x}'".to_string()),
            Just("[1, 2]".to_string()),
            Just("!delete ''".to_string()),
            Just("null".to_string()),
            Just("false".to_string()),
            Just("{x: [a, b]}".to_string()),
            "[a-z0-9{}$.]{0,6}".prop_map(|s| format!("'{s}'")),
        ];
        (key, value, 0usize..3).prop_map(|(k, v, depth)| format!("{}{k}: {v}", "  ".repeat(depth)))
    }

    /// Suites built to exhaust the loader: alias bombs, deep nesting, huge matrices, long
    /// inheritance chains written child first, self-includes, long dotted keys and
    /// interpolations that copy copies, each sized at random around its bound.
    fn attack() -> impl Strategy<Value = String> {
        prop_oneof![
            (1usize..14, 2usize..10).prop_map(|(levels, fan)| {
                let mut text = "l0: &l0 [x]\n".to_string();
                for i in 1..levels {
                    let items = vec![format!("*l{}", i - 1); fan].join(", ");
                    text.push_str(&format!("l{i}: &l{i} [{items}]\n"));
                }
                text
            }),
            (0usize..400).prop_map(|depth| format!(
                "a: {{x: {}{}}}\n",
                "[".repeat(depth),
                "]".repeat(depth)
            )),
            (1usize..4, 1usize..400).prop_map(|(axes, n)| {
                let values = (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
                let keys: Vec<String> = (0..axes).map(|a| format!("k{a}")).collect();
                let name: String = keys.iter().map(|k| format!("-{{{k}}}")).collect();
                let matrix: Vec<String> = keys.iter().map(|k| format!("{k}: [{values}]")).collect();
                format!(
                    "m:\n  matrix: {{{}}}\n  job: {{name: 'm{name}', definition: d}}\n",
                    matrix.join(", ")
                )
            }),
            (1usize..3000).prop_map(|depth| {
                let mut text = String::new();
                for i in 0..depth {
                    text.push_str(&format!("_p{i}: {{inherits: _p{}, x{i}: 1}}\n", i + 1));
                }
                text.push_str(&format!(
                    "_p{depth}: {{tags: [monogpu]}}\nleaf: {{inherits: _p0}}\n"
                ));
                text
            }),
            Just("include: suite.yaml\n".to_string()),
            (1usize..300)
                .prop_map(|n| format!("e: !expand-dot {{{}: 1}}\n", vec!["k"; n].join("."))),
            (1usize..40).prop_map(|levels| {
                let mut text = "b0: {x: [1, 2]}\n".to_string();
                for i in 1..levels {
                    let p = i - 1;
                    text.push_str(&format!(
                        "b{i}: {{x: ['${{packs.b{p}.x}}', '${{packs.b{p}.x}}']}}\n"
                    ));
                }
                text
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// The resolver returns a result or an error for any suite, never panics.
        #[test]
        fn resolver_never_panics(lines in prop::collection::vec(fragment(), 0..12)) {
            let text = lines.join("\n");
            let _ = resolve_text(&text, &[]);
        }

        /// The fuzz target of the suite loader: attacks on its bounds (and random fragments
        /// after them) end in a suite or an error, never in a panic, and what resolves stays
        /// within the bounds of `limits`, so memory stays bounded.
        #[test]
        fn suite_loader_survives_alias_and_size_attacks(
            attack in attack(),
            lines in prop::collection::vec(fragment(), 0..4),
        ) {
            let text = format!("{attack}{}", lines.join("\n"));
            if let Ok(suite) = resolve_text(&text, &[]) {
                let values: usize = suite.raw.values().map(Node::value_count).sum();
                prop_assert!(values <= 2 * MAX_SUITE_VALUES, "{values} values");
            }
        }

        /// The YAML loader never panics, whatever the bytes.
        #[test]
        fn yaml_loader_never_panics(text in "\\PC{0,80}") {
            let _ = yaml::parse_str(&text, "fuzz.yaml");
        }
    }
}
