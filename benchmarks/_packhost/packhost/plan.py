"""Loading a benchfile and turning its command trees into the JSON the Rust planner reads."""

from __future__ import annotations

import inspect
import os
import runpy
from pathlib import Path

from milabench import commands as cmd
from milabench.pack import BasePackage, Package

#: The methods whose override in a benchfile the host runs itself.
OVERRIDABLE = ("install", "prepare")


class BenchfileError(Exception):
    """A benchfile that cannot be used, with what is wrong and how to fix it."""


def load_package(config):
    """The package object of the benchmark whose folder is ``config["definition"]``: the
    class its ``benchfile.py`` names in ``__pack__``, built with ``config``."""
    folder = Path(config["definition"])
    benchfile = folder / "benchfile.py"
    if not benchfile.is_file():
        raise BenchfileError(f"{benchfile} does not exist")
    previous = os.getcwd()
    os.chdir(folder)
    try:
        namespace = runpy.run_path(str(benchfile), run_name="benchfile")
    except ImportError as error:
        if not (error.name or "milabench").startswith("milabench"):
            raise BenchfileError(
                f"{benchfile}: {error}. The pack host runs on the orchestrator's Python, without "
                "the benchmark's environment: import such modules inside the methods that use them"
            ) from error
        raise BenchfileError(
            f"{benchfile}: {error}. The pack host provides milabench.pack, milabench.commands, "
            "milabench.fs, milabench.utils and milabench.merge; a benchfile importing anything "
            "else of the Python milabench needs a benchfile.yaml instead"
        ) from error
    finally:
        os.chdir(previous)
    cls = namespace.get("__pack__")
    if cls is None:
        raise BenchfileError(f"{benchfile} sets no `__pack__` (the Package class it defines)")
    if not (inspect.isclass(cls) and issubclass(cls, BasePackage)):
        raise BenchfileError(f"{benchfile}: `__pack__` is {cls!r}, not a subclass of milabench.pack.Package")
    return cls(config)


def overrides(pack):
    """The names of ``OVERRIDABLE`` methods the benchfile's class defines itself."""
    found = []
    for name in OVERRIDABLE:
        for klass in type(pack).__mro__:
            if klass in (Package, BasePackage):
                break
            if name in vars(klass):
                found.append(name)
                break
    return found


def execution_plan(pack, gpus):
    """The run plan of ``pack`` spread as the Python milabench spreads it: a copy per GPU
    (``per_gpu``) or ``n`` copies (``njobs``)."""
    plan = dict(pack.config.get("plan") or {"method": "per_gpu"})
    method = str(plan.pop("method", "per_gpu")).replace("-", "_")
    tree = command_of(pack, "build_run_plan")
    if method == "per_gpu":
        return cmd.PerGPU(tree, gpus)
    if method == "njobs":
        return cmd.NJobs(tree, int(plan.get("n", 1)), gpus)
    raise BenchfileError(f"plan method {method!r} is neither per_gpu nor njobs")


def command_of(pack, method):
    """What ``pack.METHOD()`` returns, which must be a command (``milabench.commands``)."""
    tree = getattr(pack, method)()
    if not isinstance(tree, cmd.Command):
        raise BenchfileError(
            f"{type(pack).__name__}.{method} returned {tree!r}, not a command: return one of "
            "milabench.commands (for example cmd.PackCommand(self, *self.argv))"
        )
    return tree


def _json_arg(arg):
    if isinstance(arg, (cmd.VoirMarker, cmd.SshMarker)):
        return arg.to_json()
    return str(arg)


def _env_added(env, base):
    """The variables of ``env`` that the benchfile adds or changes over ``base``."""
    return {str(k): str(v) for k, v in env.items() if base.get(k) != v}


def flatten(tree, phase):
    """One JSON entry per process of a command tree."""
    processes = []
    for pack, argv, options in tree.commands():
        pack.phase = phase
        base = Package.make_env(pack) if isinstance(pack, Package) else {}
        extra = _env_added(pack.make_env(), base)
        opts = dict(options)
        cwd = opts.pop("cwd", None)
        option_env = _env_added(opts.pop("env", None) or {}, {**base, **extra})
        processes.append(
            {
                "tag": [str(t) for t in pack.config.get("tag", [])],
                "argv": [_json_arg(a) for a in argv],
                "cwd": str(cwd or pack.working_directory),
                "env": {str(k): str(v) for k, v in (pack.config.get("env") or {}).items()},
                "extra_env": {**extra, **option_env},
                "use_stdout": bool(opts.pop("use_stdout", False)),
                "setsid": bool(opts.pop("setsid", False)),
                "devices": [str(d) for d in pack.config.get("devices", [])],
                "job_number": pack.config.get("job-number"),
                "options": {k: str(v) for k, v in opts.items()},
            }
        )
    return processes


def plan(config, gpus):
    """Everything the Rust planner needs of one benchmark: its class, the methods it
    overrides, its run plan and its prepare plan."""
    pack = load_package(config)
    pack.phase = "run"
    run = flatten(execution_plan(pack, gpus), "run")
    # A second instance of the class, not a second run of the benchfile.
    prepare_pack = type(pack)(config)
    prepare_pack.phase = "prepare"
    prepare_tree = command_of(prepare_pack, "build_prepare_plan")
    prepare = flatten(prepare_tree, "prepare")
    return {
        "class": type(pack).__name__,
        "overrides": overrides(pack),
        "run": run,
        "prepare": [p for p in prepare if p["argv"] != ["true"]],
    }
