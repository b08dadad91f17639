"""The C fronts of discovery (``_callfront.c``), compiled on first use and cached.

Discovery's per-call work is a few dozen interpreter operations; around a model whose forward
takes 100 us of mostly Python (a small MLP), those cost about 10% of the script's run time. The C
call front does the same counting with a handful of C API calls. Its init front records where
each module is made for a few C calls too, where the Python wrapper's frame walk and weak
dictionary entry cost 5-12 us per layer built: 2-3% of a script that builds a model and calls it
once. It is built the way torch builds its
JIT extensions: the interpreter's own compiler and flags (``sysconfig``), into a cache folder keyed
by the source and the interpreter (``$BENCHMATE_NATIVE_DIR``, else
``$XDG_CACHE_HOME/benchmate/native``, else ``~/.cache/benchmate/native``), written under a
temporary name and renamed, so concurrent workers never load a half-written file.

Where it cannot be built (no compiler, no Python headers), discovery runs its Python wrapper,
which behaves the same and is slower; :func:`fronts` says why, and the worker reports it.
``BENCHMATE_DISCOVERY=python`` asks for the Python wrapper outright.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from types import ModuleType
from typing import Any, Optional

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_callfront.c")

#: How long one compilation may take before it is abandoned, in seconds.
COMPILE_TIMEOUT = 120


def cache_folder() -> str:
    """Where compiled fronts are kept."""
    explicit = os.environ.get("BENCHMATE_NATIVE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "benchmate", "native")


@functools.lru_cache(maxsize=None)
def fronts() -> tuple[Optional[ModuleType], str]:
    """The compiled module (its ``CallFront`` and ``InitFront`` types) and ``"c"``, or ``None``
    and ``"python (why)"``."""
    if os.environ.get("BENCHMATE_DISCOVERY", "").lower() == "python":
        return None, "python (asked by BENCHMATE_DISCOVERY=python)"
    try:
        path = _compiled()
        spec = importlib.util.spec_from_file_location("benchmate.benchit._callfront", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (OSError, ImportError, CompileError) as error:
        return None, f"python (the C hot path is unavailable: {error})"
    return module, "c"


class CompileError(RuntimeError):
    """The C front could not be compiled; the message says why in one line."""


def _compiled() -> str:
    """The path of the compiled front for this interpreter, compiling it when missing."""
    with open(SOURCE, "rb") as source:
        code = source.read()
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    key = hashlib.sha256(code + sys.version.encode() + suffix.encode() + sys.prefix.encode())
    folder = os.path.join(cache_folder(), key.hexdigest()[:16])
    target = os.path.join(folder, "_callfront" + suffix)
    if os.path.exists(target):
        return target
    os.makedirs(folder, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=".building-", suffix=suffix, dir=folder)
    os.close(handle)
    try:
        _compile(partial)
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


def _compile(output: str) -> None:
    """Compile :data:`SOURCE` into the extension module ``output``."""
    compiler = sysconfig.get_config_var("CC")
    include = sysconfig.get_paths().get("include")
    if not compiler or not include or not os.path.exists(os.path.join(include, "Python.h")):
        raise CompileError("this Python has no C compiler or headers configured")
    command: list[Any] = [*shlex.split(compiler), "-O2", "-shared", "-fPIC",
                          f"-I{include}", SOURCE, "-o", output]
    if sys.platform == "darwin":
        command[1:1] = ["-undefined", "dynamic_lookup"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CompileError(f"{command[0]}: {error}") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise CompileError(f"{command[0]} failed: {lines[-1] if lines else done.returncode}")
