"""A script using BenchObserver under the real voir, with voirfile_monitor: what reaches the
data channel (skipped where voir is not installed)."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

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


def run_under_voir(tmp_path: pathlib.Path, *argv: str) -> tuple[list[dict], str, int]:
    (tmp_path / "voirfile.py").write_text(VOIRFILE)
    (tmp_path / "voirconf.json").write_text(json.dumps(VOIRCONF))
    (tmp_path / "main.py").write_text(SCRIPT)
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
