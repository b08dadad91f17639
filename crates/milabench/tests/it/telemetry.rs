//! The GPU path end to end with the scripted backend: the sampler's events, written to `.data`
//! files as a run writes them, give the report its peak memory, energy and power, and let the
//! usage layer judge the GPUs; a CPU-only run gets its peak memory from process samples.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use milabench_metrics::{DataFileWriter, Event, Record, Tag};
use milabench_report::{ReportOptions, report_runs};
use milabench_system::gpu::fake::{FakeBackend, FakeDevice};
use milabench_system::{GpuDiscovery, MilabenchVersion, Sampler, SamplerConfig, SystemFacts};
use milabench_validate::{Entry, LayerName, Validation, ValidationContext};
use serde_json::{Value, json};

fn event(name: &str, data: Value) -> Record {
    Record::new(Event::from_parts(name, data), None)
}

fn write(w: &Mutex<DataFileWriter>, r: Record) {
    w.lock().expect("lock").append(&r).expect("append");
}

/// Writes one benchmark process: config, meta, start, the sampler's events for ~250 ms, a few
/// training rates, end.
fn run_bench(dir: &std::path::Path, name: &str, gpus: GpuDiscovery, devices: &[u32]) {
    let config = json!({
        "name": name, "group": name, "tag": [name, "D0"], "weight": 1, "enabled": true,
        "device": devices.first(), "devices": devices, "plan": {"method": "per_gpu"},
        "arch": gpus.arch(),
    });
    let facts = SystemFacts::collect(&gpus, false).expect("facts");
    let path = dir.join(format!("{name}.D0.data"));
    let writer = Arc::new(Mutex::new(DataFileWriter::open(path).expect("open")));
    write(&writer, event("config", config));
    let meta = facts.meta(&MilabenchVersion::new("v0.1.0"), None);
    write(&writer, Record::new(Event::Meta(meta), None));
    write(
        &writer,
        event("start", json!({"command": ["voir"], "time": 1.0})),
    );
    let sampler_config = SamplerConfig::new(Duration::from_millis(20))
        .gpus(devices.iter().copied())
        .process(std::process::id());
    let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sink = {
        let writer = Arc::clone(&writer);
        let written = Arc::clone(&written);
        move |e: Event| {
            write(&writer, Record::new(e, None));
            written.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    };
    let handle = Sampler::start(gpus, sampler_config, sink).expect("sampler");
    // Until five samples are in (a loaded machine may take longer than five intervals): a
    // sample here gives at most four events (the GPUs' and the process's).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while written.load(std::sync::atomic::Ordering::SeqCst) < 20
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats = handle.stop();
    assert!(stats.samples >= 5, "{stats:?}");
    for rate in [100.0, 101.0, 102.0, 99.0, 100.0] {
        let data = json!({"task": "train", "rate": rate, "units": "items/s"});
        write(&writer, event("data", data));
    }
    let end = json!({"command": ["voir"], "time": 2.0, "return_code": 0});
    write(&writer, event("end", end));
}

fn usage(dir: &std::path::Path) -> (String, u64) {
    let mut v = Validation::new(&[LayerName::Usage], &ValidationContext::default());
    for entry in std::fs::read_dir(dir).expect("dir") {
        let path = entry.expect("entry").path();
        let tag = Tag::new(path.file_stem().and_then(|s| s.to_str()).unwrap_or(""));
        let mut config = Value::Null;
        for line in std::fs::read_to_string(&path).expect("read").lines() {
            let raw: Value = serde_json::from_str(line).expect("json line");
            let name = raw["event"].as_str().unwrap_or("");
            if name == "config" {
                config = raw["data"].clone();
            }
            let record = event(name, raw["data"].clone());
            v.observe(Entry {
                tag: &tag,
                config: &config,
                record: &record,
            });
        }
    }
    let report = v.finish();
    let code = report.combined_code();
    (report.text, code)
}

fn one_gpu(load: f64, used_mib: f64, power: f64) -> GpuDiscovery {
    let device = FakeDevice::new("Fake A100", 81920.0, load, used_mib, power);
    GpuDiscovery::with_backend(Arc::new(FakeBackend::new(vec![device])))
}

#[test]
fn fake_gpus_fill_the_report_and_the_usage_layer() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_bench(dir.path(), "busy", one_gpu(0.9, 40000.0, 300.0), &[0]);
    let path = dir.path().to_string_lossy().into_owned();
    let (report, _) = report_runs(&[path], None, &ReportOptions::default()).expect("report");
    let row = &report.rows[0];
    assert_eq!(row.peak_memory, 40000.0);
    assert_eq!(row.median_watt, Some(300.0));
    assert!(row.energy_kj > 0.0, "{row:?}");
    assert!(row.perf_watt > 0.0, "{row:?}");
    let product = report.system.iter().find(|(k, _)| k == "product");
    assert_eq!(product.map(|(_, v)| v.clone()), Some(json!("Fake A100")));
    assert_eq!(usage(dir.path()).1, 0);

    // Idle GPUs are flagged.
    let idle_dir = tempfile::tempdir().expect("tempdir");
    run_bench(idle_dir.path(), "idle", one_gpu(0.0, 10.0, 60.0), &[0]);
    let (text, code) = usage(idle_dir.path());
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("Device 0 loads is below threshold"), "{text}");
}

#[test]
fn cpu_runs_get_host_peak_memory_from_process_samples() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_bench(dir.path(), "cpu", GpuDiscovery::none(), &[]);
    let path = dir.path().to_string_lossy().into_owned();
    let (report, _) = report_runs(&[path], None, &ReportOptions::default()).expect("report");
    let row = &report.rows[0];
    assert!(row.peak_memory.is_nan(), "no GPU, yet {}", row.peak_memory);
    let host = row.host_peak_memory;
    assert!(host > 1.0 && host.is_finite(), "{host}");
    let (text, code) = usage(dir.path());
    assert_eq!(code, 0);
    assert!(text.contains("does not apply"), "{text}");
}
