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

use crate::scaling::{Line, observations};
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
    let obs = observations(entry);
    if opts.optimized {
        if let Some(n) = entry.get("optimized").and_then(Json::as_i64) {
            return n;
        }
        return obs
            .iter()
            .filter(|o| o.memory < capacity)
            .rev()
            .max_by(|a, b| a.perf.total_cmp(&b.perf))
            .map_or(default, |o| o.batch_size as i64);
    }
    // Least squares fit size = a * mem + b.
    let points: Vec<(f64, f64)> = obs.iter().map(|o| (o.memory, o.batch_size)).collect();
    let Some(line) = Line::fit(&points) else {
        return default;
    };
    let size_f = line.at(capacity);
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
