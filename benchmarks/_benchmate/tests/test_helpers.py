"""The small helpers of Python milabench's benchmate API: progress bars, the spinner, JAX
memory peaks and traces, Hugging Face downloads. Optional packages are replaced by fakes."""

import contextlib
import importlib.util
import io
import sys
import time
from types import ModuleType, SimpleNamespace

import pytest

from benchmate import channel, metrics
from benchmate.hugginface import DEFAULT_IGNORE, download_hf_dataset, download_hf_model
from benchmate.jaxmem import memory_peak_fetcher, process_memory_peak
from benchmate.profiler import jax_profiler
from benchmate.ux import long_action


def fake_module(monkeypatch, name, **attributes):
    module = ModuleType(name)
    module.__dict__.update(attributes)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def test_give_push_is_the_channels_and_writes_to_the_data_channel_outside_voir(data_pipe):
    assert metrics.give_push is channel.give_push
    push = metrics.give_push()
    push(rate=2.0, units="items/s")
    assert data_pipe() == [{"rate": 2.0, "units": "items/s", "task": "train"}]


def test_long_action_shows_message_time_and_spinner_until_the_block_ends():
    out = io.StringIO()
    with long_action("Still working", interval=0.02, stream=out):
        time.sleep(0.15)
    shown = out.getvalue()
    frames = shown.split("\r")[1:]
    assert len(frames) >= 3
    for frame in frames:
        message, seconds, spinner = frame.rsplit(maxsplit=2)
        assert message == "Still working" and float(seconds) > 0 and spinner.count("*") == 1
    assert len({f.split()[-1] for f in frames}) > 1  # the spinner turns
    time.sleep(0.1)
    assert out.getvalue() == shown  # nothing after the block


def test_long_action_stops_when_the_block_raises():
    out = io.StringIO()
    with pytest.raises(KeyError), long_action("x", interval=0.01, stream=out):
        raise KeyError("boom")
    shown = out.getvalue()
    time.sleep(0.05)
    assert out.getvalue() == shown


def fake_jax(monkeypatch, stats):
    devices = [SimpleNamespace(memory_stats=lambda s=s: s) for s in stats]
    return fake_module(monkeypatch, "jax", devices=lambda: devices)


def test_memory_peak_is_the_largest_device_peak_in_mib(monkeypatch):
    fake_jax(
        monkeypatch, [{"peak_bytes_in_use": 80 * 2**20}, {"peak_bytes_in_use": 96 * 2**20, "bytes_in_use": 1}]
    )
    assert memory_peak_fetcher()() == 96.0


def test_memory_peak_without_device_statistics_is_the_process_peak(monkeypatch):
    fake_jax(monkeypatch, [None])  # JAX's CPU device keeps no statistics
    peak = memory_peak_fetcher()()
    assert peak == process_memory_peak() and peak > 1


def test_jax_needs_jax(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(ImportError, match="memory_peak_fetcher needs jax"):
        memory_peak_fetcher()


class Tracer:
    def __init__(self):
        self.folders = []

    @contextlib.contextmanager
    def trace(self, folder):
        self.folders.append(folder)
        yield


def fake_profiler(monkeypatch):
    tracer = Tracer()
    fake_module(monkeypatch, "jax")
    fake_module(monkeypatch, "jax.profiler", trace=tracer.trace)
    return tracer


def test_jax_profiler_does_nothing_unless_asked(monkeypatch):
    monkeypatch.delenv("MILABENCH_PROFILE", raising=False)
    monkeypatch.setitem(sys.modules, "jax", None)  # and needs no JAX
    with jax_profiler():
        pass


def test_jax_profiler_traces_into_the_folder_from_the_environment(monkeypatch, tmp_path, capsys):
    tracer = fake_profiler(monkeypatch)
    monkeypatch.setenv("MILABENCH_PROFILE", "1")
    monkeypatch.setenv("MILABENCH_PROFILE_DIR", str(tmp_path / "trace"))
    with jax_profiler():
        pass
    assert tracer.folders == [str(tmp_path / "trace")] and (tmp_path / "trace").is_dir()
    assert f"Tracing to {tmp_path / 'trace'}" in capsys.readouterr().out


def test_jax_profiler_arguments_win(monkeypatch, tmp_path):
    tracer = fake_profiler(monkeypatch)
    monkeypatch.setenv("MILABENCH_PROFILE", "0")
    with jax_profiler(trace_dir=str(tmp_path), enabled=True):
        pass
    assert tracer.folders == [str(tmp_path)]


def test_download_hf_model_passes_the_options_and_returns_the_folder(monkeypatch, capsys):
    calls = []
    fake_module(monkeypatch, "huggingface_hub", snapshot_download=lambda **kw: calls.append(kw) or "/cache/m")
    assert download_hf_model("org/model") == "/cache/m"
    assert download_hf_model("org/model", token="t", cache_dir="/c", ignore_patterns=["*.bin"]) == "/cache/m"
    assert calls == [
        {"repo_id": "org/model", "ignore_patterns": DEFAULT_IGNORE},
        {"repo_id": "org/model", "ignore_patterns": ["*.bin"], "cache_dir": "/c", "token": "t"},
    ]
    assert "Model is available at /cache/m" in capsys.readouterr().out


def test_download_hf_dataset_loads_it_and_says_where_it_is(monkeypatch, capsys):
    calls = []

    def load_dataset(path, **kwargs):  # datasets' signature: the dataset is `path`
        calls.append((path, kwargs))
        return SimpleNamespace(cache_files={"train": [{"filename": "/cache/a.arrow"}]})

    fake_module(monkeypatch, "datasets", load_dataset=load_dataset)
    assert download_hf_dataset("org/data", split="train", name="cfg", token="t") is True
    assert calls == [("org/data", {"name": "cfg", "split": "train", "token": "t"})]
    out = capsys.readouterr().out
    assert "Downloading dataset: org/data (split: train)" in out
    assert "Cached at (split train): /cache/a.arrow" in out


needs_tqdm = pytest.mark.skipif(importlib.util.find_spec("tqdm") is None, reason="tqdm is not installed")


@needs_tqdm
def test_tqdm_redraws_at_most_every_30_seconds(monkeypatch):
    from benchmate.progress import tqdm

    monkeypatch.delenv("MILABENCH_NO_PROGRESS", raising=False)
    bar = tqdm(range(3), file=io.StringIO(), mininterval=0.1, maxinterval=120)
    assert (bar.mininterval, bar.maxinterval, bar.disable) == (30, 120, False)
    assert list(bar) == [0, 1, 2]


@needs_tqdm
def test_tqdm_is_hidden_by_milabench_no_progress(monkeypatch):
    from benchmate.progress import tqdm

    monkeypatch.setenv("MILABENCH_NO_PROGRESS", "1")
    out = io.StringIO()
    assert list(tqdm(range(3), file=out)) == [0, 1, 2]
    assert out.getvalue() == ""
