"""Scripts under the real voir (BenchObserver with voirfile_monitor, bench_monitor), and a
flops-like script without it (setupvoir): what reaches the data channel (skipped where voir is
not installed)."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from benchmate.channel import unsmuggle

pytest.importorskip("voir")

# The standard voirfile of the suite's benchmarks; its options come from a voir config file, as
# milabench gives them (`voir --config voirconf.json`).
VOIRFILE = """
from benchmate.default_voirfile import Config, instrument_main
"""

VOIRCONF = {"options": {"stop": 3, "skip": 1, "gpu_poll": 0}}

SCRIPT = """
import sys
import time

from benchmate.observer import BenchObserver

observer = BenchObserver(earlystop=int(sys.argv[1]), skip=1, batch_size_fn=len)
criterion = observer.criterion(lambda x: x)
for epoch in range(100):
    for batch in observer.loader([[0] * 8] * 10):
        time.sleep(0.01)
        criterion(float(epoch))
print("script finished")
"""


def run_under_voir(tmp_path: pathlib.Path, *argv: str, script: str = SCRIPT) -> tuple[list[dict], str, int]:
    (tmp_path / "voirfile.py").write_text(VOIRFILE)
    (tmp_path / "voirconf.json").write_text(json.dumps(VOIRCONF))
    (tmp_path / "main.py").write_text(script)
    read, write = os.pipe()
    env = dict(os.environ, DATA_FD=str(write))
    env["PYTHONPATH"] = os.pathsep.join([str(pathlib.Path(__file__).parents[1]), env.get("PYTHONPATH", "")])
    env.pop("VOIR_EARLYSTOP_COUNT", None)
    env.pop("BENCHMATE_OBSERVATION_COUNT", None)
    voir = shutil.which("voir", path=os.path.dirname(sys.executable)) or "voir"
    proc = subprocess.Popen(
        [voir, "--config", "voirconf.json", "main.py", *argv], cwd=tmp_path, env=env,
        pass_fds=[write],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    os.close(write)
    with os.fdopen(read) as data:
        records = [json.loads(line) for line in data]
    out, err = proc.communicate(timeout=60)
    return records, out + err, proc.returncode


def test_rates_losses_and_phases_reach_the_data_channel(tmp_path: pathlib.Path) -> None:
    records, output, code = run_under_voir(tmp_path, "4")
    assert code == 0, output
    assert "script finished" in output
    phases = [r["$data"]["name"] for r in records if r.get("$event") == "phase"]
    assert phases == ["init", "parse_args", "load_script", "run_script", "finalize"]
    rates = [r for r in records if "rate" in r]
    assert len(rates) == 3  # 4 observations, the first one is warm-up
    assert all(r["task"] == "train" and r["units"] == "items/s" and r["rate"] > 0 for r in rates)
    assert all(isinstance(r["loss"], float) for r in records if "loss" in r)
    assert any(r.get("argv") == ["4"] for r in records)
    assert not any(r.get("$event") == "stop" for r in records)


def test_voir_asks_milabench_to_stop_after_stop_observations(tmp_path: pathlib.Path) -> None:
    # The script reports more rates than the voirfile's `stop` (3): the fourth one makes voir
    # write the `stop` event milabench reacts to.
    records, output, code = run_under_voir(tmp_path, "6")
    assert code == 0, output
    assert any(r.get("$event") == "stop" for r in records)
    progress = [tuple(r["progress"]) for r in records if r.get("task") == "early_stop" and "progress" in r]
    assert (3, 3) in progress


# A script written for Python milabench (its llava, rlhf and vllm benchmarks do this): system
# samples and its own records through bench_monitor.
MONITORED = """
import time

from benchmate.monitor import bench_monitor

with bench_monitor(poll_interval=0.05) as log:
    log({"task": "train", "rate": 42.0, "units": "Tok/s", "time": time.time()})
    time.sleep(0.5)
"""


def test_bench_monitor_under_voir_writes_to_voirs_data_file(tmp_path: pathlib.Path) -> None:
    records, output, code = run_under_voir(tmp_path, script=MONITORED)
    assert code == 0, output
    assert [r["rate"] for r in records if "rate" in r] == [42.0]
    gpu = [r for r in records if "gpudata" in r]
    assert len(gpu) >= 3 and all(r["task"] == "main" for r in gpu)
    assert records[-1]["$event"] == "phase" and records[-1]["$data"]["name"] == "finalize"


# Python milabench's flops benchmark: no voir, records smuggled in stdout (DATA_FD=1).
FLOPS_LIKE = """
import time

from benchmate.monitor import setupvoir

log, monitor = setupvoir(interval=0.05)
for step in range(3):
    time.sleep(0.1)
    log({"task": "train", "rate": 1.5 * step, "units": "Tflops", "time": time.time()})
monitor.stop()
print("done")
"""


def test_setupvoir_smuggles_in_stdout_when_data_fd_is_1(tmp_path: pathlib.Path) -> None:
    (tmp_path / "main.py").write_text(FLOPS_LIKE)
    env = dict(os.environ, DATA_FD="1", PYTHONPATH=str(pathlib.Path(__file__).parents[1]))
    done = subprocess.run(
        [sys.executable, "main.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout.split("\x1b[")
    assert text[0] == "" and text[-1].endswith("z" + "done\n")
    records = [json.loads(unsmuggle("\x1b[" + part.split("z")[0] + "z")) for part in text[1:]]
    assert [r["rate"] for r in records if "rate" in r] == [0.0, 1.5, 3.0]
    assert all(r["units"] == "Tflops" for r in records if "rate" in r)
    assert len([r for r in records if "gpudata" in r]) >= 3
