"""What the ``milabench`` stand-in package asks of the host while a benchfile runs: the
system, placeholder values, and running commands for ``install`` and ``prepare`` overrides."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import sys

_state = {"system": {}, "placeholders": {}, "variables": {}, "uv": None}


class CommandFailed(RuntimeError):
    """A command started by a benchfile exited with an error status."""


def configure(system=None, placeholders=None, variables=None, uv=None):
    """Sets what the benchfile's commands see: the system mapping, the resolved values of the
    configuration's arguments, the placeholder variables and the uv program."""
    _state["system"] = system or {}
    _state["placeholders"] = placeholders or {}
    _state["variables"] = variables or {}
    _state["uv"] = uv


def system():
    """The resolved ``system`` mapping of the run."""
    return _state["system"]


def resolve(pack, text):
    """``text`` with its placeholders resolved as the Rust planner resolved them.

    An argument of the configuration comes back as Rust resolved it; otherwise each
    ``{name}`` with a known value is replaced. Anything else is left as it is: the Rust
    planner resolves the final arguments of every process again, and names what it cannot.
    """
    text = str(text)
    if text in _state["placeholders"]:
        return _state["placeholders"][text]
    variables = _state["variables"]
    out = text
    for name, value in variables.items():
        out = out.replace("{" + name + "}", str(value))
    return out


def _argv_for_host(pack, argv):
    """A process's argv with the launch markers done here: voir by its path and a
    configuration file, ssh refused (a benchfile's install or prepare runs on this machine)."""
    from milabench.commands import SshMarker, VoirMarker

    out = []
    for arg in argv:
        if isinstance(arg, VoirMarker):
            voir = "voir" if arg.module else f"{pack.dirs.venv}/bin/voir"
            out.append(voir)
            conf = pack.config.get("voir")
            if conf:
                digest = hashlib.md5(str(conf).encode()).hexdigest()
                path = pack.dirs.extra / f"voirconf-{pack.tag}-{digest}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(conf, indent=4))
                out += ["--config", str(path)]
            out += arg.args
        elif isinstance(arg, SshMarker):
            raise RuntimeError(
                "a benchfile's install or prepare started a command on another node over ssh; "
                "the Rust milabench runs them on each node itself"
            )
        else:
            out.append(resolve(pack, arg))
    return out


async def execute(pack, argv, cwd=None, env=None, external=False, use_stdout=False, **_):
    """Runs ``argv`` for ``pack`` in this process group, its output going to the host's, and
    raises ``CommandFailed`` when it fails. Returns the exit status."""
    argv = _argv_for_host(pack, argv)
    if external:
        full = {**os.environ, **(env or {})}
    else:
        full = {**os.environ, **pack.full_env(env or {})}
    if use_stdout:
        full["MILABENCH_USE_STDOUT"] = "1"
    where = str(cwd or pack.working_directory)
    print(f"+ (cd {where} && {' '.join(argv)})", file=sys.stderr, flush=True)
    sys.stdout.flush()
    try:
        process = await asyncio.create_subprocess_exec(*argv, cwd=where, env=full)
    except FileNotFoundError:
        raise CommandFailed(f"`{argv[0]}` was not found (needed by {pack.config.get('name')})") from None
    status = await process.wait()
    if status != 0:
        raise CommandFailed(f"`{' '.join(argv)}` exited with status {status}")
    return status


async def execute_tree(command, phase, **kwargs):
    """Runs every process of a command tree at the same time; raises when one fails."""
    runs = []
    for pack, argv, options in command.commands():
        pack.phase = phase
        runs.append(execute(pack, argv, **{**options, **kwargs}))
    results = await asyncio.gather(*runs, return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        raise failures[0]
    return results


async def pip_install(pack, args, build_isolation):
    """``uv pip install ARGS`` into the benchmark's environment (``pip`` when uv is not
    known), with the configuration's pip constraints and arguments."""
    if pack.constraints:
        pack.constraints.parent.mkdir(parents=True, exist_ok=True)
        pack.constraints.write_text("\n".join(pack.config["pip"]["constraints"]))
        args = [*args, "-c", str(pack.constraints)]
    for line in pack.config.get("pip", {}).get("args", []):
        args = [*args, *line.split(" ")]
    isolation = [] if build_isolation else ["--no-build-isolation"]
    uv = _state["uv"] or shutil.which("uv")
    python = f"{pack.dirs.venv}/bin/python"
    if uv:
        argv = [uv, "pip", "install", "--python", python, *isolation, *args]
    else:
        argv = [python, "-m", "pip", "install", *isolation, *args]
    env = {**os.environ, **pack.venv_env(), **pack.config.get("env", {})}
    print(f"+ {' '.join(argv)}", file=sys.stderr, flush=True)
    process = await asyncio.create_subprocess_exec(*argv, env=env)
    status = await process.wait()
    if status != 0:
        raise CommandFailed(f"`{' '.join(argv)}` exited with status {status}")

