//! Launch-time placeholders (`{n_worker}`, `{nodes[0][ip]}`), the `auto(v, d)`,
//! `auto_batch(n)` and `expr(...)` functions, and `requires_capabilities` checks.
//!
//! Everything goes through one small safe evaluator ([`expr`]): nothing is ever executed.
//!
//! Resolving one argv element ([`ArgResolver::resolve`]):
//! 1. `{name}` substitution over the context (see [`template`](self) rules below); an unknown
//!    name is an error listing the known ones, never silently kept.
//! 2. If the whole result is a call `auto(...)`, `auto_batch(...)` or `expr(...)` it is evaluated;
//!    otherwise, if it contains `=`, the part after the first `=` is checked the same way and the
//!    prefix kept (`--batch-size=auto_batch(64)`, `batch_size=auto_batch(8)`).
//!    Only a call counts: `--mode=automatic` stays text (the Python tool would crash on it).
//! 3. The result is rendered like Python's `str()`: `expr(8 * 10)` -> `80`, `expr(8 / 2)` -> `4.0`.
//!
//! Template rules: `{{`/`}}` are literal braces; a placeholder is `{` followed by a letter or `_`
//! (`{name}`, `{a[0][b]}`, `{a.b}`); an element holding any other `{` (JSON such as
//! `{"image":10}`, `{}`, `{0}`) is passed through verbatim, untouched.
//!
//! ```
//! use milabench_config::placeholders::{ArgResolver, LaunchContext};
//! use serde_json::json;
//!
//! let ctx = LaunchContext {
//!     system: json!({"arch": "cuda", "nodes": [{"name": "a", "ip": "10.0.0.1"}]}),
//!     host_cpu_count: 64,
//!     gpu_count: 8,
//!     bench_name: "resnet50".into(),
//!     ..Default::default()
//! };
//! let r = ArgResolver::new(ctx);
//! assert_eq!(r.resolve("{n_worker}").unwrap(), "8");
//! assert_eq!(r.resolve("--master={nodes[0][ip]}").unwrap(), "--master=10.0.0.1");
//! assert_eq!(r.resolve("auto({n_worker}, 4)").unwrap(), "4"); // cpu.enabled is off
//! assert_eq!(r.resolve("--bs=auto_batch(64)").unwrap(), "--bs=64");
//! assert_eq!(r.resolve("expr(8 * 10)").unwrap(), "80");
//! assert_eq!(r.resolve(r#"{"image":10}"#).unwrap(), r#"{"image":10}"#);
//! assert!(r.resolve("{n_workers}").unwrap_err().to_string().contains("n_worker"));
//! ```

pub mod expr;
pub mod sizer;
mod template;

use camino::Utf8PathBuf;
use serde_json::{Map, Value as Json};

use crate::settings::options::{CpuOptions, SizerOptions};
use expr::{ExprError, JsonScope, Program, Scope, Value};
use template::TemplateError;

/// A placeholder or expression that could not be resolved; names the argument and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlaceholderError {
    /// `{name}` with a name outside the context.
    #[error(
        "unknown placeholder `{{{name}}}` in argument `{arg}`; known placeholders: {}; write `{{{{{name}}}}}` for literal braces",
        known.join(", ")
    )]
    Unknown {
        /// The argument.
        arg: String,
        /// The unknown name.
        name: String,
        /// Every known name, sorted.
        known: Vec<String>,
    },
    /// `{a[b]}` whose path does not exist in the context value.
    #[error("placeholder `{placeholder}` in argument `{arg}` cannot be resolved: {message}")]
    BadPath {
        /// The argument.
        arg: String,
        /// The placeholder as written.
        placeholder: String,
        /// What is missing.
        message: String,
    },
    /// A `{name` that does not follow the placeholder syntax.
    #[error("malformed placeholder in argument `{arg}` at column {column}: {message}")]
    Malformed {
        /// The argument.
        arg: String,
        /// 1-based column in the argument.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// `auto(...)`, `auto_batch(...)` or `expr(...)` failed to parse or evaluate. The
    /// evaluator's error is part of this message, not a cause of its own: the planner keeps a
    /// placeholder error as text.
    #[error(
        "argument `{arg}`: {error}\n(placeholders inside expressions are written `{{name}}`; functions: auto(value, default), auto_batch(n), expr(x))"
    )]
    Expression {
        /// The argument.
        arg: String,
        /// The evaluator's error, with a caret under the column.
        error: ExprError,
    },
}

/// Directories of one benchmark, as the planner computed them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackDirs {
    /// Its environment (`{milabench_venv}`).
    pub venv: Utf8PathBuf,
    /// Its definition folder (`{milabench_code}`).
    pub code: Utf8PathBuf,
    /// Its scratch folder (`{milabench_extra}`).
    pub extra: Utf8PathBuf,
    /// Datasets (`{milabench_data}`).
    pub data: Utf8PathBuf,
    /// Run folders (`{milabench_runs}`).
    pub runs: Utf8PathBuf,
    /// Caches (`{milabench_cache}`).
    pub cache: Utf8PathBuf,
}

/// Everything placeholders can depend on, for one benchmark launch.
#[derive(Debug, Clone, Default)]
pub struct LaunchContext {
    /// The raw system mapping (what is under `system:`: `arch`, `nodes`, `gpu`, `options`,
    /// `self`, ...). Its top-level keys are placeholders too, below the computed ones.
    pub system: Json,
    /// CPUs of this host (before `cpu.total_count` / `cpu.reserved_cores`).
    pub host_cpu_count: usize,
    /// GPUs visible on this host (`{gpu_count}`).
    pub gpu_count: usize,
    /// `{milabench_base}`.
    pub milabench_base: Utf8PathBuf,
    /// The benchmark's directories.
    pub dirs: PackDirs,
    /// `{milabench_name}`.
    pub bench_name: String,
    /// `{benchmark_folder}` (its definition folder).
    pub benchmark_folder: Utf8PathBuf,
    /// CPU options (`auto(v, d)`, `n_worker`).
    pub cpu: CpuOptions,
    /// Sizer options (`auto_batch(n)`).
    pub sizer: SizerOptions,
    /// This benchmark's entry of the scaling file, if one was loaded.
    pub scaling: Option<Json>,
    /// GPU memory to size for (e.g. `"81920 MiB"`); falls back to `system.gpu.capacity`.
    pub gpu_capacity: Option<String>,
}

/// Torch device name of an arch: itself when known, `rocm` -> `cuda`, anything else -> `cpu`.
pub fn device_name(arch: &str) -> &'static str {
    match arch {
        "cuda" | "rocm" => "cuda",
        "xpu" => "xpu",
        "hpu" => "hpu",
        _ => "cpu",
    }
}

/// Collective-communication backend of an arch (`nccl`, `rccl`, `hccl`, `ccl`, else `gloo`).
pub fn ccl(arch: &str) -> &'static str {
    match arch {
        "cuda" => "nccl",
        "rocm" => "rccl",
        "hpu" => "hccl",
        "xpu" => "ccl",
        _ => "gloo",
    }
}

/// Resolves argv elements of one benchmark launch.
#[derive(Debug, Clone)]
pub struct ArgResolver {
    vars: Map<String, Json>,
    cpu_enabled: bool,
    sizer: SizerOptions,
    scaling: Option<Json>,
    capacity: Option<f64>,
}

const FUNCTIONS: &[&str] = &["auto", "auto_batch", "expr"];

impl ArgResolver {
    /// Compute the placeholder variables of `ctx` (reference §1.15).
    pub fn new(ctx: LaunchContext) -> Self {
        let mut vars = ctx.system.as_object().cloned().unwrap_or_default();
        let arch = ctx
            .system
            .get("arch")
            .and_then(Json::as_str)
            .unwrap_or("cpu")
            .to_string();
        let total = ctx.cpu.total_count.unwrap_or(ctx.host_cpu_count);
        let cpu_count = total.saturating_sub(ctx.cpu.reserved_cores);
        let cpu_per_gpu = cpu_count / ctx.gpu_count.max(1);
        let n_worker = ctx
            .cpu
            .n_workers
            .unwrap_or_else(|| cpu_per_gpu.max(ctx.cpu.min).min(ctx.cpu.max));
        let path = |p: &Utf8PathBuf| Json::String(p.to_string());
        let computed = [
            ("cpu_count", Json::from(cpu_count)),
            ("gpu_count", Json::from(ctx.gpu_count)),
            ("cpu_per_gpu", Json::from(cpu_per_gpu)),
            ("n_worker", Json::from(n_worker)),
            ("device_name", Json::from(device_name(&arch))),
            ("ccl", Json::from(ccl(&arch))),
            ("arch", Json::from(arch)),
            ("milabench_base", path(&ctx.milabench_base)),
            ("milabench_venv", path(&ctx.dirs.venv)),
            ("milabench_code", path(&ctx.dirs.code)),
            ("milabench_extra", path(&ctx.dirs.extra)),
            ("milabench_data", path(&ctx.dirs.data)),
            ("milabench_runs", path(&ctx.dirs.runs)),
            ("milabench_cache", path(&ctx.dirs.cache)),
            ("milabench_name", Json::from(ctx.bench_name)),
            ("benchmark_folder", path(&ctx.benchmark_folder)),
        ];
        for (k, v) in computed {
            vars.insert(k.to_string(), v);
        }
        let capacity_text = ctx
            .sizer
            .capacity
            .clone()
            .filter(|c| c != "All")
            .or(ctx.gpu_capacity)
            .or_else(|| {
                ctx.system
                    .get("gpu")
                    .and_then(|g| g.get("capacity"))
                    .and_then(Json::as_str)
                    .map(String::from)
            });
        ArgResolver {
            vars,
            cpu_enabled: ctx.cpu.enabled,
            capacity: capacity_text.as_deref().and_then(sizer::to_bytes),
            sizer: ctx.sizer,
            scaling: ctx.scaling,
        }
    }

    /// The placeholder variables, raw system keys included.
    pub fn variables(&self) -> &Map<String, Json> {
        &self.vars
    }

    /// Every placeholder name, sorted.
    pub fn known_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.vars.keys().cloned().collect();
        names.sort();
        names
    }

    /// Resolve one argv element (see the module documentation).
    pub fn resolve(&self, arg: &str) -> Result<String, PlaceholderError> {
        let substituted = template::substitute(arg, &|name| self.vars.get(name).cloned()).map_err(
            |e| match e {
                TemplateError::Unknown { name } => PlaceholderError::Unknown {
                    arg: arg.to_string(),
                    name,
                    known: self.known_names(),
                },
                TemplateError::BadPath {
                    placeholder,
                    message,
                } => PlaceholderError::BadPath {
                    arg: arg.to_string(),
                    placeholder,
                    message,
                },
                TemplateError::Malformed { column, message } => PlaceholderError::Malformed {
                    arg: arg.to_string(),
                    column,
                    message,
                },
            },
        )?;
        let Some(text) = substituted else {
            return Ok(arg.to_string());
        };
        let evaluate = |src: &str| {
            Program::parse(src)
                .and_then(|p| p.eval(self))
                .map(|v| v.to_python_string())
                .map_err(|error| PlaceholderError::Expression {
                    arg: arg.to_string(),
                    error,
                })
        };
        if is_call(&text) {
            return evaluate(&text);
        }
        if let Some((name, value)) = text.split_once('=')
            && is_call(value)
        {
            return Ok(format!("{name}={}", evaluate(value)?));
        }
        Ok(text)
    }

    /// Resolve every element of an argv.
    pub fn resolve_all<S: AsRef<str>>(&self, argv: &[S]) -> Result<Vec<String>, PlaceholderError> {
        argv.iter().map(|a| self.resolve(a.as_ref())).collect()
    }

    fn auto_batch(&self, n: &Value) -> Result<Value, String> {
        let Value::Int(default) = n else {
            return Err(format!(
                "auto_batch() needs an integer, got {}",
                n.type_name()
            ));
        };
        if !self.sizer.auto {
            return Ok(Value::Int(*default));
        }
        if self.sizer.add.is_some() || self.sizer.mult.is_some() {
            let scaled = (*default as f64 * self.sizer.mult.unwrap_or(1.0)).trunc();
            if !scaled.is_finite() || scaled.abs() > 9.0e18 {
                return Err("auto_batch(): sizer.mult gives a batch size out of range".into());
            }
            let v = (scaled as i64).saturating_add(self.sizer.add.unwrap_or(0));
            return Ok(Value::Int(v.max(1)));
        }
        Ok(Value::Int(sizer::suggest(
            &self.sizer,
            self.scaling.as_ref(),
            self.capacity,
            *default,
        )))
    }
}

/// `auto(...)`, `auto_batch(...)` or `expr(...)` as a whole string.
fn is_call(text: &str) -> bool {
    let t = text.trim_start();
    FUNCTIONS.iter().any(|f| {
        t.strip_prefix(f)
            .is_some_and(|rest| rest.trim_start().starts_with('('))
    })
}

impl Scope for ArgResolver {
    fn lookup(&self, _name: &str) -> Option<Value> {
        None
    }

    fn names(&self) -> Vec<String> {
        Vec::new()
    }

    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        Some(match (name, args) {
            ("auto", [value, default]) => Ok(if self.cpu_enabled {
                value.clone()
            } else {
                default.clone()
            }),
            ("auto_batch", [n]) => self.auto_batch(n),
            ("expr", [x]) => Ok(x.clone()),
            ("auto", _) => Err(format!(
                "auto() takes 2 arguments (value, default), {} given",
                args.len()
            )),
            ("auto_batch" | "expr", _) => {
                Err(format!("{name}() takes 1 argument, {} given", args.len()))
            }
            _ => return None,
        })
    }

    fn function_names(&self) -> Vec<String> {
        FUNCTIONS.iter().map(|s| s.to_string()).collect()
    }
}

/// Evaluate one `requires_capabilities` expression over the resolved system mapping (its
/// top-level keys are the names: `gpu`, `nodes`, `arch`, `self`, `options`, ...).
/// The result is converted to a boolean by Python truthiness.
pub fn check_capability(expression: &str, system: &Json) -> Result<bool, ExprError> {
    Ok(expr::evaluate(expression, &JsonScope(system))?.truthy())
}

/// The expressions of `requires_capabilities` that are not satisfied by `system` (empty: the
/// benchmark can run). Any expression outside the grammar is an error.
pub fn unmet_capabilities<'e, S: AsRef<str>>(
    expressions: &'e [S],
    system: &Json,
) -> Result<Vec<&'e str>, ExprError> {
    let mut unmet = Vec::new();
    for e in expressions {
        if !check_capability(e.as_ref(), system)? {
            unmet.push(e.as_ref());
        }
    }
    Ok(unmet)
}

#[cfg(test)]
mod tests;
