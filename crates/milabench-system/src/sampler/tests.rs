use std::sync::{Arc, Mutex};

use serde_json::json;

use super::*;
use crate::gpu::GpuError;
use crate::gpu::fake::{FakeBackend, FakeDevice};

fn fake(devices: Vec<FakeDevice>) -> GpuDiscovery {
    GpuDiscovery::with_backend(Arc::new(FakeBackend::new(devices)))
}

fn a100(load: f64) -> FakeDevice {
    FakeDevice::new("Fake A100", 81920.0, load, 40000.0, 300.0)
}

fn data(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| matches!(e, Event::Data(_)))
        .map(Event::data_value)
        .collect()
}

fn messages(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) => Some(m.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn poll_interval_from_config() {
    assert_eq!(poll_interval(&json!({})), DEFAULT_POLL_INTERVAL);
    let with = |v: Value| poll_interval(&json!({"voir": {"options": {"gpu_poll": v}}}));
    assert_eq!(with(json!(0.1)), Duration::from_millis(100));
    assert_eq!(with(json!(1)), Duration::from_secs(1));
    assert_eq!(with(json!("500ms")), Duration::from_millis(500));
    assert_eq!(with(json!("2s")), Duration::from_secs(2));
    assert_eq!(with(json!(0)), DEFAULT_POLL_INTERVAL);
    assert_eq!(with(json!("soon")), DEFAULT_POLL_INTERVAL);
}

#[test]
fn one_record_per_monitor_in_voir_shapes() {
    let config = SamplerConfig::new(Duration::from_secs(1))
        .gpus([1])
        .process(std::process::id());
    let mut c = Collector::new(fake(vec![a100(0.1), a100(0.9)]), config).expect("collector");
    let events = c.collect();
    assert!(messages(&events).is_empty());
    let records = data(&events);
    assert_eq!(records.len(), 3, "{records:?}");
    let time = records[0]["time"].clone();
    for r in &records {
        assert_eq!(r["task"], "main");
        assert_eq!(r["time"], time);
    }
    // Only the benchmark's device, keyed by its physical index.
    assert_eq!(
        records[0]["gpudata"],
        json!({"1": {"memory": [40000.0, 81920.0], "load": 0.9, "temperature": 66.0, "power": 300.0}})
    );
    let cpu = &records[1]["cpudata"];
    assert!(cpu["memory"][1].as_f64().unwrap_or(0.0) > 0.0, "{cpu}");
    assert!(cpu["load"].is_number());
    let process = &records[2]["process"];
    assert_eq!(process["pid"], json!(std::process::id()));
    assert!(
        process["memory"][0].as_f64().unwrap_or(0.0) > 0.0,
        "{process}"
    );
    assert!(process["processes"].as_u64().unwrap_or(0) >= 1);
}

#[test]
fn a_lost_gpu_is_said_once_and_sampling_goes_on() {
    let config = SamplerConfig::new(Duration::from_secs(1)).gpus([0, 1]);
    let devices = vec![a100(0.5), a100(0.5).lost_after(2)];
    let mut c = Collector::new(fake(devices), config).expect("collector");
    let mut all = Vec::new();
    for _ in 0..5 {
        all.extend(c.collect());
    }
    let msgs = messages(&all);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(msgs[0].contains("GPU 1 is lost"), "{}", msgs[0]);
    let gpus: Vec<Value> = data(&all)
        .into_iter()
        .filter_map(|r| r.get("gpudata").cloned())
        .collect();
    assert_eq!(gpus.len(), 5);
    assert_eq!(gpus[1]["1"]["load"], json!(0.5));
    assert!(
        gpus[2]["1"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("lost"))
    );
    assert_eq!(gpus[4]["0"]["load"], json!(0.5));
    assert_eq!(c.warnings().len(), 1);
}

#[test]
fn missing_fields_are_listed_and_said_once() {
    let config = SamplerConfig::new(Duration::from_secs(1)).gpus([0]);
    let devices = vec![a100(0.7).without("power", "not supported by this device")];
    let mut c = Collector::new(fake(devices), config).expect("collector");
    let mut all = c.collect();
    all.extend(c.collect());
    assert_eq!(messages(&all).len(), 1);
    let g = &data(&all)[0]["gpudata"]["0"];
    assert_eq!(g["missing"], json!(["power"]));
    assert!(g.get("power").is_none());
    assert_eq!(g["load"], json!(0.7));
}

#[test]
fn a_refusing_driver_or_no_backend_gives_error_samples() {
    let refusing = FakeBackend::new(vec![a100(0.5)]).refusing(GpuError::NoPermission {
        backend: "NVML",
        detail: "Insufficient Permissions".into(),
    });
    let config = SamplerConfig::new(Duration::from_secs(1)).gpus([0]);
    let mut c = Collector::new(
        GpuDiscovery::with_backend(Arc::new(refusing)),
        config.clone(),
    )
    .expect("collector");
    let mut all = c.collect();
    all.extend(c.collect());
    assert_eq!(messages(&all).len(), 1);
    assert!(messages(&all)[0].contains("no permission"));
    assert!(data(&all)[2]["gpudata"]["0"]["error"].is_string());

    let nothing = GpuDiscovery {
        backend: None,
        problems: vec!["NVML: no permission".into()],
    };
    let mut c = Collector::new(nothing, config).expect("collector");
    let mut all = c.collect();
    all.extend(c.collect());
    assert_eq!(messages(&all).len(), 1);
    assert!(messages(&all)[0].contains("NVML: no permission"));
    assert_eq!(
        data(&all)[0]["gpudata"],
        json!({"0": {"error": "NVML: no permission"}})
    );
}

#[test]
fn the_process_tree_includes_children() {
    use std::os::unix::process::CommandExt as _;
    let mut child = std::process::Command::new("sh")
        .args(["-c", "sleep 30 & sleep 30 & wait"])
        .process_group(0)
        .spawn()
        .expect("sh starts");
    std::thread::sleep(Duration::from_millis(300));
    let config = SamplerConfig {
        cpu: false,
        ..SamplerConfig::new(Duration::from_secs(1)).process(child.id())
    };
    let mut c = Collector::new(GpuDiscovery::none(), config).expect("collector");
    let records = data(&c.collect());
    // The group of the child started above, and nothing else.
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["process"]["processes"], json!(3));
    // Once the tree is gone, there is no process sample.
    std::thread::sleep(Duration::from_millis(100));
    assert!(data(&c.collect()).is_empty());
}

#[test]
fn the_thread_samples_until_stopped() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = Arc::clone(&events);
        move |e: Event| events.lock().expect("lock").push(e)
    };
    let config = SamplerConfig::new(Duration::from_millis(20)).gpus([0]);
    let handle = Sampler::start(fake(vec![a100(0.9)]), config, sink).expect("starts");
    std::thread::sleep(Duration::from_millis(250));
    let stats = handle.stop();
    let n = events.lock().expect("lock").len();
    assert!(stats.samples >= 3, "{stats:?}");
    // Two records a poll, and the energy record at the end.
    assert_eq!(n as u64, stats.samples * 2 + 1);

    // Stopping does not wait for the next poll.
    let config = SamplerConfig::new(Duration::from_secs(60));
    let handle = Sampler::start(GpuDiscovery::none(), config, |_| {}).expect("starts");
    let began = Instant::now();
    let stats = handle.stop();
    assert!(began.elapsed() < Duration::from_secs(5));
    assert_eq!(stats.samples, 0);
}

/// Issue 47: the energy the GPUs' own counters counted while the sampler ran is one
/// `gpu_energy` record when it stops (here 300 W, the fake counter's power), per GPU sampled.
#[test]
fn the_energy_counter_is_read_at_start_and_end() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let config = SamplerConfig::new(Duration::from_secs(60)).gpus([0, 1]);
    let handle = Sampler::start(fake(vec![a100(0.5), a100(0.5)]), config, move |e| {
        sink.lock().unwrap().push(e);
    })
    .expect("sampler");
    std::thread::sleep(Duration::from_millis(300));
    handle.stop();
    let records = data(&events.lock().unwrap());
    let energy: Vec<&Value> = records.iter().filter_map(|r| r.get("gpu_energy")).collect();
    assert_eq!(energy.len(), 1, "{records:?}");
    for gpu in ["0", "1"] {
        let joules = energy[0][gpu]["joules"].as_f64().unwrap();
        let seconds = energy[0][gpu]["seconds"].as_f64().unwrap();
        assert!(seconds >= 0.3, "{seconds}");
        let watts = joules / seconds;
        assert!(
            (270.0..=330.0).contains(&watts),
            "{watts} W from {joules} J in {seconds} s"
        );
    }
}

/// Without a counter (the text backends, a machine without GPUs) no `gpu_energy` record is
/// made.
#[test]
fn no_counter_no_energy_record() {
    let config = SamplerConfig::new(Duration::from_secs(1)).gpus([0]);
    let collector = Collector::new(GpuDiscovery::none(), config).expect("collector");
    assert!(collector.energy().is_none());
}

/// A pool samples many collectors on one thread, each into its own sink; stopping one leaves
/// the others sampling.
#[test]
fn a_pool_samples_many_collectors_on_one_thread() {
    let pool = SamplerPool::start().expect("pool");
    let seen: Arc<Mutex<Vec<(usize, std::thread::ThreadId)>>> = Arc::default();
    let mut handles: Vec<SamplerHandle> = (0..20)
        .map(|member| {
            let config = SamplerConfig::new(Duration::from_millis(40)).gpus([0]);
            let collector = Collector::new(fake(vec![a100(0.5)]), config).expect("collector");
            let seen = Arc::clone(&seen);
            pool.add(collector, move |_| {
                seen.lock()
                    .unwrap()
                    .push((member, std::thread::current().id()));
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let first = handles.remove(0).stop();
    assert!(first.samples >= 3, "{first:?}");
    let count = |member: usize| {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|s| s.0 == member)
            .count()
    };
    let (first_then, second_then) = (count(0), count(1));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(count(0), first_then, "a stopped member is not sampled");
    assert!(count(1) > second_then, "the others go on");
    for handle in handles {
        assert!(handle.stop().samples >= 3);
    }
    let threads: HashSet<std::thread::ThreadId> =
        seen.lock().unwrap().iter().map(|s| s.1).collect();
    assert_eq!(threads.len(), 1);
    assert_ne!(
        threads.into_iter().next(),
        Some(std::thread::current().id())
    );
}
