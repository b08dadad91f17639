use super::*;
use serde_json::json;

fn system() -> Json {
    json!({
        "arch": "rocm",
        "sshkey": null,
        "run_name": "nightly",
        "nodes": [
            {"name": "manager", "ip": "192.168.11.11", "main": true, "user": "me", "sshport": 22},
            {"name": "node1", "ip": "192.168.11.12", "main": false, "user": "me"}
        ],
        "gpu": {"count": 8, "capacity": "81920 MiB"},
        "options": {"sizer": {"auto": 1}}
    })
}

fn ctx() -> LaunchContext {
    LaunchContext {
        system: system(),
        host_cpu_count: 64,
        gpu_count: 8,
        milabench_base: "/base".into(),
        dirs: PackDirs {
            venv: "/base/venv/torch".into(),
            code: "/src/benchmarks/timm".into(),
            extra: "/base/extra/timm".into(),
            data: "/base/data".into(),
            runs: "/base/runs".into(),
            cache: "/base/cache".into(),
        },
        bench_name: "resnet50".into(),
        benchmark_folder: "/src/benchmarks/timm".into(),
        ..Default::default()
    }
}

fn r(arg: &str) -> String {
    ArgResolver::new(ctx())
        .resolve(arg)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn computed_context() {
    assert_eq!(r("{cpu_count}"), "64");
    assert_eq!(r("{gpu_count}"), "8");
    assert_eq!(r("{cpu_per_gpu}"), "8");
    assert_eq!(r("{n_worker}"), "8");
    assert_eq!(r("{arch}"), "rocm");
    assert_eq!(r("{device_name}"), "cuda");
    assert_eq!(r("{ccl}"), "rccl");
    assert_eq!(r("{milabench_base}"), "/base");
    assert_eq!(r("{milabench_venv}"), "/base/venv/torch");
    assert_eq!(r("{milabench_code}"), "/src/benchmarks/timm");
    assert_eq!(r("{milabench_extra}/output"), "/base/extra/timm/output");
    assert_eq!(r("{milabench_data}"), "/base/data");
    assert_eq!(r("{milabench_runs}"), "/base/runs");
    assert_eq!(r("{milabench_cache}"), "/base/cache");
    assert_eq!(r("{milabench_name}"), "resnet50");
    assert_eq!(r("{benchmark_folder}"), "/src/benchmarks/timm");
}

#[test]
fn raw_system_keys_and_indexing() {
    assert_eq!(r("{run_name}"), "nightly");
    assert_eq!(r("{nodes[0][ip]}"), "192.168.11.11");
    assert_eq!(r("{nodes[1][name]}:{nodes[0][sshport]}"), "node1:22");
    assert_eq!(r("{gpu[capacity]}"), "81920 MiB");
    assert_eq!(r("{gpu.count}"), "8");
    assert_eq!(r("{sshkey}"), "None");
    assert_eq!(r("{nodes[0][main]}"), "True");
}

#[test]
fn n_worker_clamping() {
    let mut c = ctx();
    c.host_cpu_count = 8; // 1 per gpu -> clamped to min 2
    assert_eq!(
        ArgResolver::new(c.clone()).resolve("{n_worker}").unwrap(),
        "2"
    );
    c.host_cpu_count = 512; // 64 per gpu -> clamped to max 16
    assert_eq!(
        ArgResolver::new(c.clone()).resolve("{n_worker}").unwrap(),
        "16"
    );
    c.cpu.reserved_cores = 256;
    c.cpu.total_count = Some(1024);
    assert_eq!(
        ArgResolver::new(c.clone()).resolve("{cpu_count}").unwrap(),
        "768"
    );
    c.cpu.n_workers = Some(3);
    assert_eq!(
        ArgResolver::new(c.clone()).resolve("{n_worker}").unwrap(),
        "3"
    );
    c.gpu_count = 0;
    c.cpu.n_workers = None;
    assert_eq!(ArgResolver::new(c).resolve("{cpu_per_gpu}").unwrap(), "768");
}

#[test]
fn escapes_and_literals() {
    assert_eq!(r("{{n_worker}}"), "{n_worker}");
    assert_eq!(r("a}b"), "a}b");
    assert_eq!(r("x}}y{{"), "x}y{");
    assert_eq!(r(r#"{"image":10}"#), r#"{"image":10}"#);
    assert_eq!(
        r(r#"{"a": {"b": "{n_worker}"}}"#),
        r#"{"a": {"b": "{n_worker}"}}"#
    );
    assert_eq!(r("{ n_worker }"), "{ n_worker }");
    assert_eq!(r("{}"), "{}");
    assert_eq!(r("{0}"), "{0}");
    assert_eq!(r("plain"), "plain");
    assert_eq!(r("--mode=automatic"), "--mode=automatic");
    assert_eq!(r("autotune"), "autotune");
}

#[test]
fn auto_functions() {
    assert_eq!(r("auto({n_worker}, 8)"), "8");
    let mut c = ctx();
    c.cpu.enabled = true;
    assert_eq!(
        ArgResolver::new(c).resolve("auto({n_worker}, 4)").unwrap(),
        "8"
    );

    assert_eq!(r("auto_batch(64)"), "64");
    assert_eq!(r("--batch-size=auto_batch(64)"), "--batch-size=64");
    assert_eq!(r("batch_size=auto_batch(8)"), "batch_size=8");
    assert_eq!(r("expr(8 * 10)"), "80");
    assert_eq!(r("expr({n_worker} * 10)"), "80");
    assert_eq!(r("expr({n_worker} / 16)"), "0.5");
    assert_eq!(r("--x=expr(2 ** 3)"), "--x=8");
    assert_eq!(r("expr(1 == 1)"), "True");
    assert_eq!(r("expr(max(2, {gpu_count}))"), "8");
}

#[test]
fn auto_batch_with_sizer() {
    let mut c = ctx();
    c.sizer.auto = true;
    c.sizer.mult = Some(2.0);
    assert_eq!(
        ArgResolver::new(c.clone())
            .resolve("auto_batch(64)")
            .unwrap(),
        "128"
    );
    c.sizer.mult = Some(0.001);
    assert_eq!(
        ArgResolver::new(c.clone())
            .resolve("auto_batch(64)")
            .unwrap(),
        "1"
    );
    c.sizer.mult = Some(0.5);
    c.sizer.add = Some(3);
    assert_eq!(
        ArgResolver::new(c.clone())
            .resolve("auto_batch(15)")
            .unwrap(),
        "10"
    );

    // No add/mult: scaling data, capacity from the system file.
    c.sizer.mult = None;
    c.sizer.add = None;
    assert_eq!(
        ArgResolver::new(c.clone())
            .resolve("auto_batch(16)")
            .unwrap(),
        "16"
    );
    c.scaling = Some(json!({"observations": [
        {"batch_size": 32, "memory": "10000 MiB", "perf": 1.0},
        {"batch_size": 64, "memory": "20000 MiB", "perf": 2.0}
    ]}));
    assert_eq!(
        ArgResolver::new(c.clone())
            .resolve("auto_batch(16)")
            .unwrap(),
        "256"
    );
    c.sizer.capacity = Some("40000 MiB".into());
    assert_eq!(
        ArgResolver::new(c).resolve("auto_batch(16)").unwrap(),
        "128"
    );
}

#[test]
fn unknown_placeholder_lists_known_names() {
    let err = ArgResolver::new(ctx())
        .resolve("--workers={n_workers}")
        .unwrap_err();
    let PlaceholderError::Unknown { name, known, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(name, "n_workers");
    let mut sorted = known.clone();
    sorted.sort();
    assert_eq!(&sorted, known);
    assert!(known.contains(&"n_worker".to_string()));
    assert!(known.contains(&"nodes".to_string()));
    let msg = err.to_string();
    assert!(
        msg.contains("`{n_workers}`") && msg.contains("--workers={n_workers}"),
        "{msg}"
    );
    assert!(msg.contains("`{{n_workers}}`"), "{msg}");
}

#[test]
fn malformed_and_bad_paths() {
    let res = ArgResolver::new(ctx());
    let e = res.resolve("--x={n_worker").unwrap_err();
    assert!(
        matches!(e, PlaceholderError::Malformed { column: 5, .. }),
        "{e:?}"
    );
    let e = res.resolve("{n_worker:>4}").unwrap_err();
    assert!(e.to_string().contains("format specs"), "{e}");
    let e = res.resolve("{image: 10}").unwrap_err();
    assert!(e.to_string().contains("literal braces"), "{e}");
    let e = res.resolve("{nodes[5][ip]}").unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
    let e = res.resolve("{gpu[memory]}").unwrap_err();
    assert!(e.to_string().contains("keys: count, capacity"), "{e}");
    let e = res.resolve("{arch[0]}").unwrap_err();
    assert!(e.to_string().contains("cannot index a string"), "{e}");
}

#[test]
fn expression_errors() {
    let res = ArgResolver::new(ctx());
    let e = res.resolve("expr(8 *)").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("expr(8 *)") && msg.contains('^'), "{msg}");
    let e = res.resolve("auto(1)").unwrap_err();
    assert!(e.to_string().contains("auto() takes 2 arguments"), "{e}");
    let e = res.resolve("expr(n_worker)").unwrap_err();
    assert!(e.to_string().contains("unknown name `n_worker`"), "{e}");
    let e = res.resolve("expr(__import__('os'))").unwrap_err();
    assert!(e.to_string().contains("unknown function"), "{e}");
    let e = res.resolve("auto_batch('x')").unwrap_err();
    assert!(e.to_string().contains("integer"), "{e}");
}

#[test]
fn resolve_all_keeps_order() {
    let res = ArgResolver::new(ctx());
    let out = res
        .resolve_all(&["--a", "{n_worker}", "--b", "auto_batch(4)"])
        .unwrap();
    assert_eq!(out, ["--a", "8", "--b", "4"]);
}

#[test]
fn capabilities() {
    let sys = system();
    assert!(check_capability("gpu['count'] > 1", &sys).unwrap());
    assert!(check_capability("len(nodes) >= 2", &sys).unwrap());
    assert!(!check_capability("arch == 'cuda'", &sys).unwrap());
    assert!(check_capability("arch == 'rocm' and not len(nodes) > 2", &sys).unwrap());
    let exprs = vec![
        "gpu['count'] > 1".to_string(),
        "len(nodes) >= 3".to_string(),
    ];
    assert_eq!(
        unmet_capabilities(&exprs, &sys).unwrap(),
        ["len(nodes) >= 3"]
    );
    let e = check_capability("gpu.count > 1", &sys).unwrap_err();
    assert_eq!(e.column, 4);
    let e = check_capability("len(nodez) > 1", &sys).unwrap_err();
    assert!(
        e.to_string()
            .contains("known names: arch, gpu, nodes, options, run_name, sshkey"),
        "{e}"
    );
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn resolve_never_panics(arg in "\\PC{0,60}") {
            let _ = ArgResolver::new(ctx()).resolve(&arg);
        }

        #[test]
        fn resolve_never_panics_on_template_like(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("{"), Just("}"), Just("{{"), Just("}}"), Just("n_worker"), Just("nodes"),
                    Just("[0]"), Just("[ip]"), Just("["), Just("]"), Just("."), Just("="),
                    Just("auto("), Just("auto_batch("), Just("expr("), Just(")"), Just(","),
                    Just("8"), Just("*"), Just("\""), Just(":"), Just("é"),
                ],
                0..20,
            )
        ) {
            let _ = ArgResolver::new(ctx()).resolve(&parts.concat());
        }

        #[test]
        fn text_without_braces_or_calls_is_unchanged(arg in "[a-zA-Z0-9_./= -]{0,40}") {
            prop_assume!(!is_call(&arg) && !arg.split_once('=').is_some_and(|(_, v)| is_call(v)));
            prop_assert_eq!(ArgResolver::new(ctx()).resolve(&arg).unwrap(), arg);
        }
    }
}
