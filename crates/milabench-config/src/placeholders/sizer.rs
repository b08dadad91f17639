//! The batch-size sizer behind `auto_batch(n)` (reference §1.22).
//!
//! It works on one benchmark's entry of a scaling file, given as JSON by the caller (reading and
//! choosing the file is the caller's business): v1 `{model: {"<bs>": "<mem>"}, optimized: N}` or
//! v2 `{observations: [{batch_size, memory: "N MiB", perf, ...}]}`.
//!
//! Deliberate difference from the Python tool: when there is no usable data (no scaling entry,
//! fewer than two observations, no capacity), `auto_batch(n)` keeps `n` instead of dropping to a
//! batch size of 1.

use serde_json::Value as Json;

use crate::settings::options::SizerOptions;

/// Bytes in a memory size such as `"81920 MiB"`, `"40 GiB"`, `"80GB"`, `"512 Mo"` or `"1024"`
/// (binary `KiB/MiB/GiB/TiB`, decimal `kB/MB/GB/TB`, French `o/Ko/Mo/Go/To`); `None` if unparsable.
pub fn to_bytes(text: &str) -> Option<f64> {
    let t = text.trim();
    let split = t.trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
    let number: f64 = t[..split].trim().parse().ok()?;
    let unit = t[split..].trim();
    let factor = match unit {
        "" | "B" | "o" => 1.0,
        "kB" | "KB" | "ko" | "Ko" => 1e3,
        "MB" | "Mo" => 1e6,
        "GB" | "Go" => 1e9,
        "TB" | "To" => 1e12,
        "KiB" | "kiB" | "Kio" | "kio" => 1024.0,
        "MiB" | "Mio" => 1024f64.powi(2),
        "GiB" | "Gio" => 1024f64.powi(3),
        "TiB" | "Tio" => 1024f64.powi(4),
        _ => return None,
    };
    Some(number * factor).filter(|b| b.is_finite())
}

/// Observations `(memory bytes, batch size, perf)` of a scaling entry, sorted by batch size.
fn observations(entry: &Json) -> Vec<(f64, f64, f64)> {
    let mut out: Vec<(f64, f64, f64)> = if let Some(model) =
        entry.get("model").and_then(Json::as_object)
    {
        model
            .iter()
            .filter_map(|(bs, mem)| Some((to_bytes(mem.as_str()?)?, bs.trim().parse().ok()?, 0.0)))
            .collect()
    } else {
        entry
            .get("observations")
            .and_then(Json::as_array)
            .map(|obs| {
                obs.iter()
                    .filter_map(|o| {
                        let mem = to_bytes(o.get("memory")?.as_str()?)?;
                        let bs = o.get("batch_size")?.as_f64()?;
                        let perf = o.get("perf").and_then(Json::as_f64).unwrap_or(0.0);
                        Some((mem, bs, perf))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    out.sort_by(|a, b| a.1.total_cmp(&b.1));
    out
}

/// The sizer's suggestion for a benchmark whose suite asks for `default`.
///
/// Order: `sizer.batch_size` (fixed), then `sizer.optimized` (best-performing observation that
/// fits in `capacity`), then a least-squares line memory -> batch size evaluated at `capacity`,
/// rounded half up, floored to `sizer.multiple` or set to `sizer.power^floor(log2(size))`,
/// at least 1. `capacity` in bytes. Without usable data, `default`.
pub fn suggest(
    opts: &SizerOptions,
    entry: Option<&Json>,
    capacity: Option<f64>,
    default: i64,
) -> i64 {
    if let Some(bs) = opts.batch_size {
        return i64::try_from(bs).unwrap_or(i64::MAX);
    }
    let (Some(entry), Some(capacity)) = (entry, capacity) else {
        return default;
    };
    if opts.optimized {
        if let Some(n) = entry.get("optimized").and_then(Json::as_i64) {
            return n;
        }
        let mut obs = observations(entry);
        obs.sort_by(|a, b| b.2.total_cmp(&a.2));
        return obs
            .iter()
            .find(|o| o.0 < capacity)
            .map_or(default, |o| o.1 as i64);
    }
    let obs = observations(entry);
    if obs.len() <= 1 {
        return default;
    }
    // Least squares fit size = a * mem + b.
    let n = obs.len() as f64;
    let mx = obs.iter().map(|o| o.0).sum::<f64>() / n;
    let my = obs.iter().map(|o| o.1).sum::<f64>() / n;
    let sxx: f64 = obs.iter().map(|o| (o.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return default;
    }
    let sxy: f64 = obs.iter().map(|o| (o.0 - mx) * (o.1 - my)).sum();
    let slope = sxy / sxx;
    let size_f = slope * capacity + (my - slope * mx);
    if !size_f.is_finite() || size_f < 1.0 {
        return 1;
    }
    let mut size = size_f.min(1e15) as i64;
    if size_f - size as f64 > 0.5 {
        size += 1;
    }
    let mut result = size;
    if let Some(m) = opts.multiple.filter(|m| *m > 0) {
        let m = i64::try_from(m).unwrap_or(i64::MAX);
        result = (size / m) * m;
    }
    if let Some(p) = opts.power.filter(|p| *p > 1) {
        let exp = (size as f64).log2().floor() as i32;
        result = (p as f64).powi(exp).min(1e15) as i64;
    }
    result.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn memory_units() {
        assert_eq!(to_bytes("81920 MiB"), Some(81920.0 * 1024.0 * 1024.0));
        assert_eq!(to_bytes("40GB"), Some(40e9));
        assert_eq!(to_bytes("2 Go"), Some(2e9));
        assert_eq!(to_bytes("1024"), Some(1024.0));
        assert_eq!(to_bytes("1e24 MiB"), Some(1e24 * 1048576.0));
        assert_eq!(to_bytes("lots"), None);
        assert_eq!(to_bytes("3 parsecs"), None);
    }

    #[test]
    fn least_squares_and_rounding() {
        let mib = 1024.0 * 1024.0;
        let entry = json!({"observations": [
            {"batch_size": 32, "memory": "10000 MiB", "perf": 100.0},
            {"batch_size": 64, "memory": "20000 MiB", "perf": 150.0},
            {"batch_size": 128, "memory": "40000 MiB", "perf": 160.0},
        ]});
        let opts = SizerOptions {
            auto: true,
            ..Default::default()
        };
        // size = 0.0032 * MiB: 80000 MiB -> 256 (a multiple of 8).
        assert_eq!(suggest(&opts, Some(&entry), Some(80000.0 * mib), 16), 256);
        // 81920 MiB -> 262.1 -> 262 -> floored to a multiple of 8 = 256.
        assert_eq!(suggest(&opts, Some(&entry), Some(81920.0 * mib), 16), 256);
        let power = SizerOptions {
            power: Some(2),
            ..opts.clone()
        };
        assert_eq!(suggest(&power, Some(&entry), Some(70000.0 * mib), 16), 128);
        let optimized = SizerOptions {
            optimized: true,
            ..opts.clone()
        };
        assert_eq!(
            suggest(&optimized, Some(&entry), Some(30000.0 * mib), 16),
            64
        );
        assert_eq!(suggest(&opts, None, Some(1.0), 16), 16);
        assert_eq!(
            suggest(&opts, Some(&json!({"observations": []})), Some(1.0), 16),
            16
        );
        let fixed = SizerOptions {
            batch_size: Some(3),
            ..opts
        };
        assert_eq!(suggest(&fixed, None, None, 16), 3);
    }

    #[test]
    fn v1_format() {
        let entry = json!({"model": {"32": "10 GiB", "64": "20 GiB"}, "optimized": 48});
        let opts = SizerOptions {
            auto: true,
            multiple: None,
            ..Default::default()
        };
        assert_eq!(suggest(&opts, Some(&entry), to_bytes("40 GiB"), 8), 128);
        let optimized = SizerOptions {
            optimized: true,
            ..opts
        };
        assert_eq!(suggest(&optimized, Some(&entry), to_bytes("40 GiB"), 8), 48);
    }
}
