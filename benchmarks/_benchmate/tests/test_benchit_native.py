"""Building discovery's C front: compiled once per interpreter and cached, and a clear reason
when it cannot be built (the worker then runs the Python wrapper and says so)."""

from __future__ import annotations

import os
import pathlib
from typing import Iterator

import pytest

from benchmate.benchit import native


@pytest.fixture(autouse=True)
def fresh(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pathlib.Path]:
    """An empty cache folder, and no answer remembered from another test."""
    folder = tmp_path / "native"
    monkeypatch.setenv("BENCHMATE_NATIVE_DIR", str(folder))
    monkeypatch.delenv("BENCHMATE_DISCOVERY", raising=False)
    native.callfront.cache_clear()
    yield folder
    native.callfront.cache_clear()


def with_compiler(monkeypatch: pytest.MonkeyPatch, compiler: str | None) -> None:
    """Make ``sysconfig`` name ``compiler`` as this Python's C compiler."""
    real = native.sysconfig.get_config_var
    monkeypatch.setattr(native.sysconfig, "get_config_var",
                        lambda name: compiler if name == "CC" else real(name))


def test_the_front_is_compiled_once_then_loaded_from_the_cache(
        fresh: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    front, hot_path = native.callfront()
    assert hot_path == "c" and front.__name__ == "CallFront"
    (built,) = fresh.glob("*/_callfront*")
    assert not list(fresh.glob("*/.building-*"))
    native.callfront.cache_clear()
    with_compiler(monkeypatch, "/nonexistent/cc")  # a second build would fail
    assert native.callfront()[1] == "c"
    assert built.exists()


def test_without_a_compiler_the_reason_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    with_compiler(monkeypatch, None)
    assert native.callfront() == (
        None, "python (the C hot path is unavailable: this Python has no C compiler or headers "
              "configured)")


def test_a_failing_compiler_is_named_and_leaves_nothing(
        fresh: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_compiler(monkeypatch, "/nonexistent/cc -pthread")
    front, hot_path = native.callfront()
    assert front is None and hot_path.startswith("python (") and "/nonexistent/cc" in hot_path
    assert not [name for _, _, names in os.walk(fresh) for name in names]
    native.callfront.cache_clear()
    with_compiler(monkeypatch, "false")
    assert native.callfront()[1] == "python (the C hot path is unavailable: false failed: 1)"


def test_the_python_wrapper_can_be_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHMATE_DISCOVERY", "python")
    assert native.callfront() == (None, "python (asked by BENCHMATE_DISCOVERY=python)")
