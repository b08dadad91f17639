//! The statistics of every sample group of a report, computed by polars on one sorted column.

use polars::prelude::*;
use serde::Serialize;

/// The fewest values a statistic trims: from this many on, exactly one minimum and one maximum
/// are left out (the Python tool's rule, `xs[1:-1]` of the sorted values).
pub const TRIM_FROM: usize = 5;

/// Summary statistics of one list of values, after dropping one minimum and one maximum when
/// there are five values or more: percentiles with linear interpolation, mean, population
/// standard deviation, and standard error of the mean. All NaN when there is no value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stats {
    /// 0th percentile.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub min: f64,
    /// 25th percentile.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub q1: f64,
    /// 50th percentile.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub median: f64,
    /// 75th percentile.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub q3: f64,
    /// 100th percentile.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub max: f64,
    /// Mean.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub mean: f64,
    /// Population standard deviation (ddof 0).
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub std: f64,
    /// `std / sqrt(count)`.
    #[serde(serialize_with = "crate::json::finite_or_null")]
    pub sem: f64,
}

impl Stats {
    /// Statistics of nothing: every field NaN.
    pub const NAN: Stats = Stats {
        min: f64::NAN,
        q1: f64::NAN,
        median: f64::NAN,
        q3: f64::NAN,
        max: f64::NAN,
        mean: f64::NAN,
        std: f64::NAN,
        sem: f64::NAN,
    };
}

/// Collects values under numbered groups, then computes every group's [`Stats`] at once.
#[derive(Debug, Default)]
pub struct StatsQuery {
    groups: Vec<Vec<f64>>,
}

/// Handle of a group of a [`StatsQuery`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupId(u32);

impl GroupId {
    /// Position of the group's statistics in the result of [`StatsQuery::run`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl StatsQuery {
    /// An empty query.
    pub fn new() -> StatsQuery {
        StatsQuery::default()
    }

    /// A new, empty group.
    pub fn group(&mut self) -> GroupId {
        self.groups.push(Vec::new());
        GroupId(self.groups.len() as u32 - 1)
    }

    /// Adds values to `group`.
    pub fn extend(&mut self, group: GroupId, values: impl IntoIterator<Item = f64>) {
        self.groups[group.index()].extend(values);
    }

    /// Runs the query: one [`Stats`] per group, indexed by [`GroupId`].
    pub fn run(self) -> PolarsResult<Vec<Stats>> {
        // Each group is sorted and trimmed here: with five values or more it loses exactly one
        // minimum and one maximum. The kept values go into one column, group after group.
        let mut values = Vec::with_capacity(self.groups.iter().map(Vec::len).sum());
        let mut bounds = Vec::with_capacity(self.groups.len());
        for mut group in self.groups {
            group.sort_unstable_by(f64::total_cmp);
            let kept = if group.len() >= TRIM_FROM {
                &group[1..group.len() - 1]
            } else {
                &group[..]
            };
            bounds.push((values.len(), kept.len()));
            values.extend_from_slice(kept);
        }
        // One zero-copy slice of the sorted column per group; polars computes its quantiles
        // (linear interpolation, as numpy), mean and population standard deviation.
        let column = Float64Chunked::from_vec("x".into(), values);
        let stats = bounds.into_iter().map(|(offset, len)| {
            if len == 0 {
                return Ok(Stats::NAN);
            }
            let mut slice = column.slice(offset as i64, len);
            // Already sorted (NaN last, as polars sorts): polars reads the quantiles off directly.
            if slice.get(0).is_some_and(|first| !first.is_nan()) {
                slice.set_sorted_flag(polars::series::IsSorted::Ascending);
            }
            let q = slice.quantiles(&[0.0, 0.25, 0.5, 0.75, 1.0], QuantileMethod::Linear)?;
            let [min, q1, median, q3, max] = [0, 1, 2, 3, 4].map(|i| q[i].unwrap_or(f64::NAN));
            let std = slice.std(0).unwrap_or(f64::NAN);
            Ok(Stats {
                min,
                q1,
                median,
                q3,
                max,
                mean: slice.mean().unwrap_or(f64::NAN),
                std,
                sem: std / (len as f64).sqrt(),
            })
        });
        stats.collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn trims_and_interpolates_like_numpy() {
        let mut q = StatsQuery::new();
        let small = q.group();
        let big = q.group();
        let empty = q.group();
        q.extend(small, [3.0, 1.0, 2.0]);
        q.extend(big, [10.0, 1.0, 2.0, 3.0, 4.0, 100.0]);
        let s = q.run().unwrap();
        // small: no trimming; numpy: mean 2, std sqrt(2/3), percentile 25 = 1.5
        assert!(
            close(s[0].mean, 2.0) && close(s[0].q1, 1.5) && close(s[0].std, (2.0f64 / 3.0).sqrt())
        );
        assert_eq!((s[0].min, s[0].max), (1.0, 3.0));
        // big: 1 and 100 dropped -> [2, 3, 4, 10]
        assert!(close(s[1].mean, 4.75));
        assert_eq!((s[1].min, s[1].max), (2.0, 10.0));
        assert!(close(s[1].median, 3.5));
        assert!(close(s[1].q3, 5.5));
        assert!(close(s[1].sem, s[1].std / 2.0));
        assert!(s[empty.0 as usize].mean.is_nan());
    }
}
