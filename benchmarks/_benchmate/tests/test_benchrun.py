"""benchrun: the console script the build backend declares, and torchrun workers that keep
DATA_FD (with a fake torch handler, and with the real torchrun where torch is installed)."""

import json
import os
import pathlib
import subprocess
import sys
import zipfile
from types import ModuleType

import pytest

from benchmate.benchrun import forward_voir_file

ROOT = pathlib.Path(__file__).parents[1]

WORKER = """
import json, os
os.write(int(os.environ["DATA_FD"]), (json.dumps({"rank": int(os.environ.get("RANK", 0))}) + "\\n").encode())
"""


def test_the_wheel_declares_the_benchrun_command(tmp_path):
    subprocess.run(
        [sys.executable, "-c", f"import inplace_backend as b; b.build_editable({str(tmp_path)!r})"],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT / "_build")),
        check=True,
    )
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert (
            archive.read(entry_points).decode() == "[console_scripts]\nbenchrun = benchmate.benchrun:main\n"
        )
        (record,) = [n for n in names if n.endswith(".dist-info/RECORD")]
        assert entry_points in archive.read(record).decode()


def test_the_backend_reads_scripts_without_tomllib():
    sys.path.insert(0, str(ROOT / "_build"))
    try:
        import inplace_backend
    finally:
        sys.path.remove(str(ROOT / "_build"))
    text = (ROOT / "pyproject.toml").read_text()
    assert inplace_backend._string_keys(text, "[project.scripts]") == {"benchrun": "benchmate.benchrun:main"}
    assert inplace_backend._string_keys(text, "[project]")["name"] == "benchmate"
    assert inplace_backend._string_keys(text, "[tool.none]") == {}


class FakeHandler:
    """torch's handler: it starts the worker from its constructor through ``_popen``."""

    def __init__(self, entrypoint, args, env, stdout, stderr, local_rank_id):
        self._stdout, self._stderr = None, None
        self.proc = self._popen((entrypoint, *args), dict(os.environ, **env))

    def _popen(self, args, env):
        return subprocess.Popen(args, env=env)  # closes every other descriptor


def fake_torch(monkeypatch):
    api = ModuleType("torch.distributed.elastic.multiprocessing.api")
    api.SubprocessHandler = FakeHandler
    api.get_subprocess_handler = lambda *a, **k: FakeHandler(*a, **k)
    monkeypatch.setitem(sys.modules, "torch.distributed.elastic.multiprocessing.api", api)
    return api


def worker_records(start, monkeypatch):
    """Starts a worker with ``start(entrypoint, args, env)`` while DATA_FD is a pipe; the
    records it wrote there."""
    read, write = os.pipe()
    monkeypatch.setenv("DATA_FD", str(write))
    process = start(sys.executable, ("-c", WORKER), {"RANK": "3"}).proc
    os.close(write)
    with os.fdopen(read) as stream:
        records = [json.loads(line) for line in stream]
    process.wait()
    return records, process.returncode


def test_workers_started_inside_forward_voir_file_keep_data_fd(monkeypatch):
    api = fake_torch(monkeypatch)
    original = api.get_subprocess_handler, api.SubprocessHandler
    with forward_voir_file():
        records, code = worker_records(lambda *a: api.get_subprocess_handler(*a, None, None, 0), monkeypatch)
        assert issubclass(api.SubprocessHandler, FakeHandler)
    assert (records, code) == ([{"rank": 3}], 0)
    assert (api.get_subprocess_handler, api.SubprocessHandler) == original


def test_workers_started_by_torchs_handler_cannot_write(monkeypatch):
    api = fake_torch(monkeypatch)
    records, code = worker_records(lambda *a: api.get_subprocess_handler(*a, None, None, 0), monkeypatch)
    assert records == [] and code != 0


def run_torchrun(command, tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    read, write = os.pipe()
    process = subprocess.Popen(
        [*command, "--standalone", "--nproc-per-node", "2", str(script)],
        env=dict(os.environ, DATA_FD=str(write), PYTHONPATH=str(ROOT)),
        pass_fds=[write],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    os.close(write)
    with os.fdopen(read) as stream:
        records = [json.loads(line) for line in stream]
    output = process.communicate(timeout=120)[0]
    return records, process.returncode, output


def test_benchrun_gives_every_rank_the_data_channel(tmp_path):
    pytest.importorskip("torch.distributed.run")
    records, code, output = run_torchrun([sys.executable, "-m", "benchmate.benchrun"], tmp_path)
    assert code == 0, output
    assert sorted(r["rank"] for r in records) == [0, 1]
    records, code, _ = run_torchrun([sys.executable, "-m", "torch.distributed.run"], tmp_path)
    assert records == [] and code != 0  # plain torchrun closes it
