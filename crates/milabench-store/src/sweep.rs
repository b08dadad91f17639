//! The sweep a run belongs to, as the store keeps it: the sweep's name and the run's point, so
//! that `history` can list a sweep's runs and follow one point across the days it ran.
//!
//! A run learns it is part of a sweep from its [`SweepRun`]: live from the session that runs
//! it, on import from the run folder's [`SWEEP_FILE`](milabench_config::sweep::SWEEP_FILE).

use std::path::Path;

use milabench_config::sweep::{SweepRun, read_sweep_file};
use serde::Serialize;

/// Which sweep a run belongs to and which point of it the run measured.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SweepPoint {
    /// The sweep's name (see [`SweepRun::sweep`]).
    pub sweep: String,
    /// The run's settings, `key=value` each in the sweep's order
    /// (`resnet50.argv.--batch-size=64`, `cpu.n_workers=4`).
    pub point: Vec<String>,
}

impl SweepPoint {
    /// The point of a run of a sweep.
    pub fn of(run: &SweepRun) -> SweepPoint {
        SweepPoint {
            sweep: run.sweep.clone(),
            point: run.point(),
        }
    }

    /// The point of the run held in the run folder `folder`, when it holds a run of a sweep.
    pub fn of_folder(folder: &Path) -> Option<SweepPoint> {
        read_sweep_file(folder).map(|run| SweepPoint::of(&run))
    }

    /// The settings, space-separated.
    pub fn shown(&self) -> String {
        self.point.join(" ")
    }

    /// Whether the point has `setting` (`key=value`): the same key with the same value, numbers
    /// compared as numbers (`2` is `2.0`).
    pub fn has(&self, setting: &str) -> bool {
        let Some((key, value)) = setting.split_once('=') else {
            return false;
        };
        self.point.iter().any(|own| {
            own.split_once('=')
                .is_some_and(|(k, v)| k == key.trim() && same_value(v, value.trim()))
        })
    }

    /// The point as stored in `execs.sweep_point`: a JSON list of strings.
    pub(crate) fn point_column(&self) -> String {
        serde_json::Value::from(self.point.clone()).to_string()
    }

    /// The sweep of a run from its `execs.sweep` and `execs.sweep_point` cells (`None` for a run
    /// outside any sweep).
    pub(crate) fn from_columns(sweep: Option<String>, point: Option<String>) -> Option<SweepPoint> {
        let point = point
            .and_then(|text| serde_json::from_str::<Vec<String>>(&text).ok())
            .unwrap_or_default();
        sweep.map(|sweep| SweepPoint { sweep, point })
    }
}

fn same_value(a: &str, b: &str) -> bool {
    a == b || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(settings: &[&str]) -> SweepPoint {
        SweepPoint {
            sweep: "bs".into(),
            point: settings.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn a_point_has_a_setting_of_the_same_key_and_value() {
        let p = point(&["resnet50.argv.--batch-size=64", "sizer.mult=2", "cpu.x=a=b"]);
        assert!(p.has("resnet50.argv.--batch-size=64"));
        assert!(p.has("sizer.mult=2.0"), "numbers as numbers");
        assert!(p.has("cpu.x=a=b"), "the key ends at the first `=`");
        assert!(!p.has("resnet50.argv.--batch-size=32"));
        assert!(!p.has("resnet50.argv.--batch-size"));
        assert!(!p.has("sizer=2"));
        assert_eq!(
            p.shown(),
            "resnet50.argv.--batch-size=64 sizer.mult=2 cpu.x=a=b"
        );
    }

    #[test]
    fn the_columns_give_the_point_back() {
        let p = point(&["sizer.mult=0.5"]);
        assert_eq!(
            SweepPoint::from_columns(Some("bs".into()), Some(p.point_column())),
            Some(p)
        );
        assert_eq!(SweepPoint::from_columns(None, None), None);
    }
}
