"""``Package``: the class a ``benchfile.py`` subclasses to say how its benchmark is installed,
prepared and run.

A benchmark folder's ``benchfile.py`` names its class in ``__pack__``. The pack host builds one
instance per benchmark from the configuration the Rust planner resolved, asks it for its run
plan (``build_run_plan``) and its prepare plan (``build_prepare_plan``), and runs its
``install`` and ``prepare`` methods when the class overrides them. ``Package.install`` itself
does nothing here: Rust installs the requirements of every install group before any override
runs.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

from .fs import XPath
from .merge import merge
from .utils import assemble_options


class BasePackage:
    """A benchmark, with no behaviour for install, prepare or run.

    ``config`` is the benchmark's resolved configuration (``name``, ``tag``, ``dirs``,
    ``argv``, ``plan``, ``system``...); ``dirs`` holds its folders as ``XPath`` (``code`` is the
    benchmark folder, ``venv``, ``data``, ``runs``, ``extra``, ``cache`` come from the
    configuration).
    """

    def __init__(self, config, core=None):
        self.config = config
        self.pack_path = XPath(config["definition"])
        folders = {name: XPath(path) for name, path in config.get("dirs", {}).items()}
        folders["code"] = self.pack_path
        self.dirs = SimpleNamespace(**folders)
        constraints = config.get("pip", {}).get("constraints")
        extra = folders.get("extra")
        self.constraints = extra / "pip-constraints.txt" if constraints and extra else None
        group = config.get("install_group", config.get("group", config.get("name")))
        self.install_mark_file = extra / f"mark_{group}" if extra else None
        self.core = self
        self.phase = None
        self.processes = []

    def copy(self, config):
        """A package of the same class whose configuration is this one's merged with ``config``."""
        return type(self)(config=merge(self.config, config))

    @property
    def argv(self):
        """The benchmark's arguments from its configuration (see ``assemble_options``)."""
        return assemble_options(self.config.get("argv", []))

    @property
    def tag(self):
        """The process tag: the parts of ``config["tag"]`` joined with dots."""
        return ".".join(self.config["tag"]) if self.config.get("tag") else self.config["name"]

    @property
    def logdir(self):
        """The folder of the run's ``.data`` files."""
        run_name = self.config.get("run_name", "")
        if run_name and run_name[0] in "/.~":
            return XPath(run_name).expanduser().absolute()
        return self.dirs.runs / run_name

    def logfile(self, extension):
        """The file of this process in the run folder, with ``extension``."""
        return self.logdir / f"{'.'.join(self.config['tag'])}.{extension}"

    def make_env(self):
        """Variables for prepare and run on top of the defaults; none at this level."""
        return {}

    def venv_env(self):
        """The variables that put the benchmark's environment first: ``VIRTUAL_ENV``, ``PATH``."""
        venv = str(self.dirs.venv)
        return {
            "VIRTUAL_ENV": venv,
            "PATH": f"{venv}/bin:{os.environ.get('PATH', '')}",
        }

    async def message(self, *parts):
        """Prints a message of the benchmark in the host's log."""
        print(f"[{self.config.get('name', '?')}]", *parts, flush=True)

    async def message_error(self, exc):
        """Prints an exception of the benchmark in the host's log."""
        await self.message(f"{type(exc).__name__}: {exc}")

    async def send(self, **kwargs):
        """Prints an event of the benchmark in the host's log."""
        await self.message(json.dumps(kwargs, default=str))

    async def checked_install(self):
        """Runs ``install``."""
        await self.install()

    async def install(self):
        """Nothing: the base class has no install step."""

    async def prepare(self):
        """Nothing: the base class has no prepare step."""

    async def pip_install(self, *args, build_isolation=False, use_uv_override=None, **kwargs):
        """Installs packages in the benchmark's environment (``pip install`` arguments)."""
        from packhost import runtime

        await runtime.pip_install(self, [str(a) for a in args], build_isolation)

    def conda_install(self, *args, **kwargs):
        """Refused: the Rust milabench makes no conda environments."""
        raise NotImplementedError(
            "conda_install: the Rust milabench installs with uv or pip only; list the package "
            "in the benchmark's requirements instead"
        )

    async def execute(self, *args, cwd=None, env=None, external=False, **kwargs):
        """Runs a command in the benchmark's environment (the benchmark folder by default)."""
        from packhost import runtime

        return await runtime.execute(
            self, list(args), cwd=cwd, env=env or {}, external=external, **kwargs
        )

    async def python(self, *args, **kwargs):
        """Runs ``python ARGS`` in the benchmark's environment."""
        return await self.execute("python", *args, **kwargs)

    async def voir(self, script, args=(), wrapper=(), cwd=None, **kwargs):
        """Runs ``script`` (a path, or a command as a list) under voir."""
        from . import commands as cmd

        if isinstance(script, list):
            inner = cmd.CmdCommand(self, *script, *args)
        else:
            if not XPath(script).is_absolute():
                script = str(self.dirs.code / script)
            inner = cmd.PackCommand(self, script, *args)
        plan = cmd.WrapperCommand(cmd.VoirCommand(inner, cwd=cwd, **kwargs), *wrapper)
        return await plan.execute()


class Package(BasePackage):
    """A benchmark with the conventional behaviour: ``main.py`` run under voir, ``prepare.py``
    to prepare, requirements from ``requirements.in`` (pinned per arch)."""

    main_script = "main.py"
    prepare_script = "prepare.py"
    base_requirements = "requirements.in"

    def requirements_map(self, variant=None):
        """Each base requirements file mapped to its pinned copy for ``variant``."""
        if variant is None:
            variant = self.config.get("install_variant")
        bases = (
            [self.base_requirements]
            if isinstance(self.base_requirements, str)
            else list(self.base_requirements)
        )
        bases = [self.dirs.code / base for base in bases]
        if variant == "unpinned":
            return {base: base for base in bases}
        suffix = f".{variant}.txt" if variant else ".txt"
        return {base: base.with_suffix(suffix) for base in bases}

    def requirements_files(self, variant=None):
        """The pinned requirements files for ``variant``."""
        return list(self.requirements_map(variant).values())

    @property
    def working_directory(self):
        """Where the benchmark's processes start: its folder."""
        return self.dirs.code

    def make_env(self):
        """The variables every process of the benchmark gets, as the Python milabench sets
        them: the folders, ``OMP_NUM_THREADS``, the configuration as JSON, and for prepare and
        run the cache folders."""
        from packhost import runtime

        env = {f"MILABENCH_DIR_{name.upper()}": str(path) for name, path in self.config["dirs"].items()}
        env["OMP_NUM_THREADS"] = str(runtime.resolve(self, "{cpu_per_gpu}"))
        env["MILABENCH_CONFIG"] = json.dumps(self.config)
        if self.phase in ("prepare", "run"):
            env["XDG_CACHE_HOME"] = str(self.dirs.cache)
            env["TORCH_HOME"] = str(self.dirs.cache)
            env["HF_HOME"] = str(self.dirs.data)
        return env

    def full_env(self, env=None):
        """The whole environment of a command: the venv, ``make_env``, the configuration's
        ``env``, then ``env``."""
        return {**self.venv_env(), **self.make_env(), **self.config.get("env", {}), **(env or {})}

    async def install(self):
        """Nothing more to do: the Rust milabench installed this benchmark's requirements files
        in its install group's environment before any benchfile's ``install`` runs."""
        self._check_phase("install")

    async def pin(self, *args, **kwargs):
        """Refused: ``milabench pin`` pins whole install groups itself (``uv pip compile`` of
        every benchmark's requirements of the group, with the arch's constraints)."""
        raise NotImplementedError(
            "Package.pin: pinning is done by `milabench pin`, for a whole install group"
        )

    async def prepare(self):
        """Runs the prepare plan (``build_prepare_plan``)."""
        self._check_phase("prepare")
        return await self.build_prepare_plan().execute()

    def build_prepare_plan(self):
        """``prepare_script ARGV`` from the benchmark folder when that script exists, else a
        command that does nothing."""
        from . import commands as cmd

        if self.prepare_script is not None:
            script = self.dirs.code / self.prepare_script
            if script.exists():
                return cmd.PackCommand(self, script, *self.argv, env=self.make_env(), cwd=script.parent)
        return cmd.VoidCommand(self)

    async def run(self):
        """Runs the run plan (``build_run_plan``)."""
        self._check_phase("run")
        return await self.build_run_plan().execute()

    def build_run_plan(self):
        """``main_script ARGV`` under voir, from the main script's folder."""
        from . import commands as cmd

        main = self.dirs.code / self.main_script
        return cmd.VoirCommand(cmd.PackCommand(self, *self.argv, lazy=True), cwd=main.parent)

    def resolve_argument(self, name, default):
        """The value of the argument ``name`` in the configuration, placeholders resolved;
        ``default`` when it has none."""
        value = self.config.get("argv", {}).get(name) if isinstance(self.config.get("argv"), dict) else None
        return self.resolve_placeholder(value) if value else default

    def resolve_placeholder(self, placeholder):
        """``placeholder`` (``{n_worker}``, ``auto(...)``, ``auto_batch(...)``) resolved."""
        from packhost import runtime

        return str(runtime.resolve(self, str(placeholder)))

    def _check_phase(self, phase):
        if self.phase not in (None, phase):
            raise RuntimeError(f"{type(self).__name__}.{phase}() called during {self.phase}")
