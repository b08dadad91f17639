//! Whether a cached build can be reused, and which stages must run: the three rebuild policies
//! over what `state.yaml` records (model weights, input shapes and dtypes, tool versions, build
//! options) and the stage outputs on disk, both read once into a [`CachedBuild`] so that the
//! decision itself reads nothing.

use camino::Utf8PathBuf;
use indexmap::IndexMap;

use super::options::RebuildPolicy;
use super::state::{
    BuildState, BuildStatus, STATE_FILE, StateError, Versions, read_yaml, stage_output,
};

/// Every stage that leaves an output file in the build folder.
const STAGES_WITH_OUTPUT: [&str; 4] = ["receive", "export", "optimize", "fp16"];

/// A build of the cache as it is on disk, read once before deciding what to do with it.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedBuild {
    /// Its name.
    pub name: String,
    /// Its folder.
    pub dir: Utf8PathBuf,
    /// Its `state.yaml`: `None` when there is none, the problem when it cannot be read.
    pub state: Result<Option<BuildState>, String>,
    /// The stages whose output file is there at the opset asked for (a lean cache deletes
    /// them).
    pub outputs: Vec<String>,
}

impl CachedBuild {
    /// Reads build `name` in folder `dir`: its state, and the stage outputs it holds at `opset`.
    pub fn read(name: String, dir: Utf8PathBuf, opset: u32) -> CachedBuild {
        let state = read_yaml(&dir.join(STATE_FILE)).map_err(|e| match e {
            StateError::Corrupt { problem, .. } => format!("{STATE_FILE}: {problem}"),
            other => other.to_string(),
        });
        let outputs = STAGES_WITH_OUTPUT
            .iter()
            .filter(|stage| stage_output(&dir, &name, opset, stage).is_file())
            .map(|stage| stage.to_string())
            .collect();
        CachedBuild {
            name,
            dir,
            state,
            outputs,
        }
    }
}

/// What the current call needs from a build.
#[derive(Debug, Clone)]
pub struct Wanted<'a> {
    /// The build name.
    pub build_name: &'a str,
    /// sha256 of the model and weights.
    pub model_hash: &'a str,
    /// Input shapes.
    pub input_shapes: &'a IndexMap<String, Vec<i64>>,
    /// Input dtypes.
    pub input_dtypes: &'a IndexMap<String, String>,
    /// Tool versions.
    pub versions: &'a Versions,
    /// ONNX opset.
    pub opset: u32,
    /// `torchscript` or `dynamo`.
    pub exporter: &'a str,
    /// The stages the build must hold, in order.
    pub stages: &'a [&'a str],
}

/// What to do with a build folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Wipe the folder and start again (otherwise the completed stages are kept).
    pub fresh: bool,
    /// The stages to run now, in order.
    pub stages: Vec<String>,
    /// Why the cached build is not reused as it is (empty for a cache hit).
    pub reasons: Vec<String>,
    /// A message for the person: a stale build rebuilt, or kept under `--rebuild never`.
    pub warning: Option<String>,
}

/// A cached build that cannot be used under the policy asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the cached build {build_name} cannot be read ({problem}) and --rebuild never forbids rebuilding it; use --rebuild if_needed, or delete it with `benchit cache delete {build_name}`"
)]
pub struct UnusableBuild {
    /// The build.
    pub build_name: String,
    /// Why its state cannot be read.
    pub problem: String,
}

/// Why the cached `state` does not match what is wanted (empty when it does).
pub fn stale_reasons(state: &BuildState, wanted: &Wanted<'_>) -> Vec<String> {
    let mut reasons = Vec::new();
    if state.model_hash != wanted.model_hash {
        reasons.push("the model or its weights changed".to_string());
    }
    if &state.expected_input_shapes != wanted.input_shapes {
        reasons.push(format!(
            "input shapes changed ({:?} -> {:?})",
            state.expected_input_shapes, wanted.input_shapes
        ));
    }
    if &state.expected_input_dtypes != wanted.input_dtypes {
        reasons.push(format!(
            "input dtypes changed ({:?} -> {:?})",
            state.expected_input_dtypes, wanted.input_dtypes
        ));
    }
    let versions = [
        (
            "benchit",
            Some(&state.benchit_version),
            Some(&wanted.versions.benchit),
        ),
        (
            "torch",
            state.torch_version.as_ref(),
            wanted.versions.torch.as_ref(),
        ),
        (
            "onnx",
            state.onnx_version.as_ref(),
            wanted.versions.onnx.as_ref(),
        ),
        (
            "onnxruntime",
            state.onnxruntime_version.as_ref(),
            wanted.versions.onnxruntime.as_ref(),
        ),
    ];
    for (tool, was, is) in versions {
        if was != is {
            let show = |v: Option<&String>| v.map_or("none".to_string(), String::clone);
            reasons.push(format!(
                "{tool} version changed ({} -> {})",
                show(was),
                show(is)
            ));
        }
    }
    if state.config.onnx_opset != wanted.opset {
        reasons.push(format!(
            "ONNX opset changed ({} -> {})",
            state.config.onnx_opset, wanted.opset
        ));
    }
    if state.config.exporter != wanted.exporter {
        reasons.push(format!(
            "exporter changed ({} -> {})",
            state.config.exporter, wanted.exporter
        ));
    }
    reasons
}

/// The stages of `wanted` still to run on top of `state`: from the first one not completed or
/// whose output is not among `outputs` (a lean cache deletes them) to the end.
fn missing_stages(state: &BuildState, outputs: &[String], wanted: &Wanted<'_>) -> Vec<String> {
    let first_missing = wanted.stages.iter().position(|stage| {
        let done = state.info.completed_build_stages.iter().any(|s| s == stage);
        !done || !outputs.iter().any(|o| o == stage)
    });
    match first_missing {
        Some(i) => wanted.stages[i..].iter().map(|s| s.to_string()).collect(),
        None => Vec::new(),
    }
}

/// Decides what to do with the `cached` build under `policy` for what is `wanted`.
pub fn decide(
    policy: RebuildPolicy,
    cached: &CachedBuild,
    wanted: &Wanted<'_>,
) -> Result<Decision, UnusableBuild> {
    let all = || wanted.stages.iter().map(|s| s.to_string()).collect();
    let fresh = |reasons: Vec<String>, warning: Option<String>| Decision {
        fresh: true,
        stages: all(),
        reasons,
        warning,
    };
    if policy == RebuildPolicy::Always {
        return Ok(fresh(vec!["--rebuild always".into()], None));
    }
    let state = match &cached.state {
        Ok(None) => return Ok(fresh(Vec::new(), None)),
        Err(problem) if policy == RebuildPolicy::Never => {
            return Err(UnusableBuild {
                build_name: wanted.build_name.to_string(),
                problem: problem.clone(),
            });
        }
        Err(problem) => {
            let warning = format!(
                "the state of build {} cannot be read ({problem}); rebuilding it",
                wanted.build_name
            );
            return Ok(fresh(vec![problem.clone()], Some(warning)));
        }
        Ok(Some(state)) => state,
    };
    let reasons = stale_reasons(state, wanted);
    if state.build_status != BuildStatus::SuccessfulBuild {
        // A failed or interrupted build holds nothing to reuse, whatever the policy.
        let mut reasons = reasons;
        reasons.push(format!(
            "the previous build did not succeed ({})",
            state.build_status.as_str()
        ));
        return Ok(fresh(reasons, None));
    }
    if reasons.is_empty() {
        return Ok(Decision {
            fresh: false,
            stages: missing_stages(state, &cached.outputs, wanted),
            reasons,
            warning: None,
        });
    }
    let list = reasons.join("; ");
    match policy {
        RebuildPolicy::Never => Ok(Decision {
            fresh: false,
            stages: missing_stages(state, &cached.outputs, wanted),
            warning: Some(format!(
                "build {} is stale ({list}) but --rebuild never keeps it",
                wanted.build_name
            )),
            reasons,
        }),
        _ => Ok(fresh(
            reasons,
            Some(format!("rebuilding {}: {list}", wanted.build_name)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use camino::Utf8Path;

    use super::*;
    use crate::models::state::tests::sample_state;
    use crate::models::state::write_yaml;

    struct Case {
        shapes: IndexMap<String, Vec<i64>>,
        dtypes: IndexMap<String, String>,
        versions: Versions,
    }

    impl Case {
        fn new() -> Case {
            let state = sample_state();
            Case {
                shapes: state.expected_input_shapes.clone(),
                dtypes: state.expected_input_dtypes.clone(),
                versions: Versions {
                    benchit: state.benchit_version.clone(),
                    torch: state.torch_version.clone(),
                    onnx: state.onnx_version.clone(),
                    onnxruntime: state.onnxruntime_version.clone(),
                },
            }
        }

        fn wanted<'a>(&'a self, stages: &'a [&'a str], model_hash: &'a str) -> Wanted<'a> {
            Wanted {
                build_name: "hello_world_24adc42f",
                model_hash,
                input_shapes: &self.shapes,
                input_dtypes: &self.dtypes,
                versions: &self.versions,
                opset: 17,
                exporter: "torchscript",
                stages,
            }
        }
    }

    /// The build `hello_world_24adc42f` with `state` and the outputs of `outputs`.
    fn cached(state: Result<Option<BuildState>, String>, outputs: &[&str]) -> CachedBuild {
        CachedBuild {
            name: "hello_world_24adc42f".into(),
            dir: "/cache/hello_world_24adc42f".into(),
            state,
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
        }
    }

    const STAGES: [&str; 2] = ["export", "optimize"];

    #[test]
    fn a_build_is_read_with_the_outputs_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(dir.path()).unwrap().to_path_buf();
        let name = "hello_world_24adc42f";
        let read = || CachedBuild::read(name.into(), dir.clone(), 17);
        assert_eq!(read().state, Ok(None));
        assert!(read().outputs.is_empty());
        write_yaml(&dir.join(STATE_FILE), &sample_state()).unwrap();
        for stage in STAGES {
            let path = stage_output(&dir, name, 17, stage);
            fs_err::create_dir_all(path.parent().unwrap()).unwrap();
            fs_err::write(path, "onnx").unwrap();
        }
        let build = read();
        assert_eq!(build.state, Ok(Some(sample_state())));
        // `receive` writes the file `export` does.
        assert_eq!(build.outputs, ["receive", "export", "optimize"]);
        assert!(
            CachedBuild::read(name.into(), dir.clone(), 13)
                .outputs
                .is_empty()
        );
        fs_err::write(dir.join(STATE_FILE), "build_status: [").unwrap();
        let problem = read().state.unwrap_err();
        assert!(problem.starts_with("state.yaml: "), "{problem}");
    }

    #[test]
    fn a_valid_build_is_reused_without_stages() {
        let case = Case::new();
        let state = sample_state();
        let hash = state.model_hash.clone();
        let build = cached(Ok(Some(state)), &STAGES);
        for policy in [RebuildPolicy::IfNeeded, RebuildPolicy::Never] {
            let d = decide(policy, &build, &case.wanted(&STAGES, &hash)).unwrap();
            assert!(
                !d.fresh && d.stages.is_empty() && d.reasons.is_empty(),
                "{d:?}"
            );
        }
        let d = decide(RebuildPolicy::Always, &build, &case.wanted(&STAGES, &hash)).unwrap();
        assert!(d.fresh);
        assert_eq!(d.stages, STAGES);
    }

    #[test]
    fn only_missing_stages_run() {
        let case = Case::new();
        let state = sample_state();
        let hash = state.model_hash.clone();
        let d = decide(
            RebuildPolicy::IfNeeded,
            &cached(Ok(Some(state.clone())), &STAGES),
            &case.wanted(&["export", "optimize", "fp16"], &hash),
        )
        .unwrap();
        assert!(!d.fresh);
        assert_eq!(d.stages, ["fp16"]);
        // A lean cache removed the files: everything runs again.
        let d = decide(
            RebuildPolicy::IfNeeded,
            &cached(Ok(Some(state)), &[]),
            &case.wanted(&STAGES, &hash),
        )
        .unwrap();
        assert_eq!(d.stages, STAGES);
    }

    #[test]
    fn stale_builds_rebuild_if_needed_and_stay_under_never() {
        let case = Case::new();
        let build = cached(Ok(Some(sample_state())), &STAGES);
        let d = decide(
            RebuildPolicy::IfNeeded,
            &build,
            &case.wanted(&STAGES, "other"),
        )
        .unwrap();
        assert!(d.fresh);
        assert_eq!(d.reasons, ["the model or its weights changed"]);
        assert!(
            d.warning
                .unwrap()
                .starts_with("rebuilding hello_world_24adc42f")
        );
        let d = decide(RebuildPolicy::Never, &build, &case.wanted(&STAGES, "other")).unwrap();
        assert!(!d.fresh && d.stages.is_empty());
        assert!(d.warning.unwrap().contains("--rebuild never keeps it"));
    }

    #[test]
    fn every_staleness_reason_is_named() {
        let case = Case::new();
        let mut state = sample_state();
        state.expected_input_shapes.insert("x".into(), vec![12]);
        state
            .expected_input_dtypes
            .insert("x".into(), "float16".into());
        state.torch_version = Some("2.0.0".into());
        state.config.onnx_opset = 13;
        state.config.exporter = "dynamo".into();
        let hash = state.model_hash.clone();
        let reasons = stale_reasons(&state, &case.wanted(&STAGES, &hash));
        assert_eq!(reasons.len(), 5, "{reasons:?}");
        assert!(reasons[2].contains("torch version changed (2.0.0 -> 2.15.0)"));
        assert!(reasons[3].contains("opset changed (13 -> 17)"));
    }

    #[test]
    fn failed_or_unfinished_builds_are_rebuilt() {
        let case = Case::new();
        let mut state = sample_state();
        state.build_status = BuildStatus::BuildRunning;
        let hash = state.model_hash.clone();
        let build = cached(Ok(Some(state)), &STAGES);
        for policy in [RebuildPolicy::IfNeeded, RebuildPolicy::Never] {
            let d = decide(policy, &build, &case.wanted(&STAGES, &hash)).unwrap();
            assert!(d.fresh, "{policy:?}");
            assert!(d.reasons[0].contains("build_running"));
        }
    }

    #[test]
    fn unreadable_state() {
        let case = Case::new();
        let unreadable = cached(Err("bad yaml".into()), &[]);
        let d = decide(
            RebuildPolicy::IfNeeded,
            &unreadable,
            &case.wanted(&STAGES, "h"),
        )
        .unwrap();
        assert!(d.fresh);
        assert!(d.warning.unwrap().contains("cannot be read (bad yaml)"));
        let err = decide(
            RebuildPolicy::Never,
            &unreadable,
            &case.wanted(&STAGES, "h"),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("benchit cache delete hello_world_24adc42f")
        );
        let d = decide(
            RebuildPolicy::Never,
            &cached(Ok(None), &[]),
            &case.wanted(&STAGES, "h"),
        )
        .unwrap();
        assert!(d.fresh && d.reasons.is_empty());
    }
}
