"""Command trees: how a benchmark's processes are built, as the Python milabench builds them.

A benchfile's ``build_run_plan`` returns a tree of commands. The leaves name a package and an
argument list (``CmdCommand``, ``PackCommand``); wrappers put arguments in front of their inner
command (``VoirCommand``, ``TorchrunAllGPU``, ``SSHCommand``...); lists run their members at
the same time (``ListCommand``, ``PerGPU``, ``NJobs``, ``ForeachNode``...). ``commands()``
flattens a tree into ``(package, argv, options)`` triples, one per process.

Two wrappers leave a marker in ``argv`` instead of their arguments, so that the Rust planner
applies its own launch for them: ``VoirMarker`` where voir starts (Rust writes the voir
configuration and puts ``<venv>/bin/voir --config FILE`` there) and ``SshMarker`` where a rank
goes to another node (Rust starts it through its own ssh launch, or here when the node is this
machine).
"""

from __future__ import annotations

import asyncio
import os
from copy import deepcopy

from .. import pack as _pack
from ..fs import XPath
from ..merge import merge
from ..utils import select_nodes

#: The rendezvous port of torchrun and accelerate on the main node.
RENDEZVOUS_PORT = 29400


def clone_with(config, update):
    """A copy of ``config`` with ``update`` merged in. The system tree (every node of the
    system file: thousands of entries on a large cluster) is shared, not copied, unless
    ``update`` changes it: nothing writes to it."""
    system = config.get("system") if isinstance(config, dict) else None
    memo = {} if system is None or "system" in update else {id(system): system}
    return merge(deepcopy(config, memo), update)


def _copy_around_packs(tree, packs):
    """A deep copy of a command tree that shares ``packs`` (the caller replaces them), so
    their configurations are not copied only to be dropped."""
    return deepcopy(tree, {id(pack): pack for pack in packs})


def option(name, kind, default=None):
    """A system option: ``MILABENCH_<NAME>`` in the environment (dots as underscores), else
    the system's ``options`` tree, else ``default``."""
    from packhost import runtime

    value = os.environ.get("MILABENCH_" + name.upper().replace(".", "_"))
    if value is None:
        tree = runtime.system().get("options") or {}
        for part in name.split(".")[:-1]:
            tree = tree.get(part) or {}
        value = tree.get(name.split(".")[-1]) if isinstance(tree, dict) else None
    return default if value is None else kind(value)


class VoirMarker:
    """Where voir starts in an argument list; ``args`` are voir's own extra arguments and
    ``module`` says the command was asked to run voir by name (``voir``) rather than by path."""

    def __init__(self, args=(), module=False):
        self.args = [str(a) for a in args]
        self.module = module

    def __str__(self):
        return "voir" if self.module else "<venv>/bin/voir"

    def to_json(self):
        """The marker as the Rust planner reads it."""
        return {"voir": {"args": self.args, "module": self.module}}


class SshMarker:
    """Where a command goes to another node over ssh."""

    def __init__(self, host, user, port, key, node):
        self.host, self.user, self.port, self.key, self.node = host, user, port, key, node

    def __str__(self):
        return "ssh"

    def to_json(self):
        """The marker as the Rust planner reads it."""
        return {
            "ssh": {
                "host": self.host,
                "user": self.user,
                "port": self.port,
                "key": self.key,
                "node": self.node,
            }
        }


class Command:
    """A node of a command tree: either around a package (a leaf) or around another command."""

    def __init__(self, pack_or_exec, **kwargs):
        self._pack = None
        self.exec = None
        self.remote = False
        if isinstance(pack_or_exec, Command):
            self.exec = pack_or_exec
        elif isinstance(pack_or_exec, _pack.BasePackage):
            self._pack = pack_or_exec
        elif pack_or_exec is not None:
            raise TypeError(f"a command wraps a package or another command, not {pack_or_exec!r}")
        self._kwargs = kwargs

    def use_stdout(self):
        """Asks for the data channel in the process's standard output."""
        return self.set_run_options(use_stdout=True)

    def set_run_options(self, **kwargs):
        """Sets options of the processes (``use_stdout``, ``cwd``, ``env``...)."""
        self._kwargs.update(kwargs)
        return self

    @property
    def options(self):
        """The process options: the inner command's, then this one's."""
        if self._pack is None and self.exec is not None:
            return {**self.exec.options, **self._kwargs}
        return self._kwargs

    @property
    def pack(self):
        """The package of the leaf of this command."""
        return self._pack if self._pack is not None else self.exec.pack

    def _set_pack(self, pack):
        if self._pack is not None:
            self._pack = pack
            return True
        if self.exec is not None:
            return self.exec._set_pack(pack)
        return False

    def packs(self):
        """Every package of the tree."""
        yield self.pack

    def copy(self, pack):
        """A deep copy of this tree whose leaf is ``pack``."""
        copied = _copy_around_packs(self, self.packs())
        copied._set_pack(pack)
        return copied

    def kwargs(self):
        """Alias of ``options``, for benchfiles that call it."""
        return self.options

    def commands(self):
        """``(package, argv, options)`` of each process of the tree."""
        yield self.pack, self.argv(), self.options

    def argv(self):
        """The argument list of this command's process."""
        raise NotImplementedError(f"{type(self).__name__} has no argument list")

    async def execute(self, phase="run", timeout=False, timeout_delay=600, **kwargs):
        """Runs the tree's processes together, in the pack host (install and prepare
        overrides); raises when one fails."""
        from packhost import runtime

        return await runtime.execute_tree(self, phase, **kwargs)

    def __repr__(self):
        inner = ["pack"] if self._pack is not None else []
        if self.exec is not None:
            inner.append(repr(self.exec))
        return f"{type(self).__name__}({', '.join(inner)})"


class SingleCmdCommand(Command):
    """A command whose arguments come in front of its inner command's."""

    def argv(self, **kwargs):
        """This command's arguments, then its inner command's."""
        own = self._argv(**kwargs)
        return own + self.exec.argv(**kwargs) if self.exec is not None else own

    def _argv(self, **kwargs):
        return []


class ListCommand(Command):
    """Commands whose processes run at the same time."""

    def __init__(self, *executors, **kwargs):
        super().__init__(None, **kwargs)
        self._executors = executors

    @property
    def executors(self):
        """The member commands."""
        return self._executors

    @property
    def pack(self):
        """The package of the first member."""
        return self.executors[0].pack

    def commands(self):
        """The processes of every member, in order."""
        for executor in self.executors:
            yield from executor.commands()

    def packs(self):
        """The packages of every member."""
        for executor in self.executors:
            yield from executor.packs()

    def set_run_options(self, **kwargs):
        """Sets the options of every member."""
        for executor in self._executors:
            executor.set_run_options(**kwargs)
        return self

    def copy(self, pack):
        """A deep copy whose members' leaves are ``pack``."""
        copied = _copy_around_packs(self, [e.pack for e in self._executors])
        for executor in copied._executors:
            executor._set_pack(pack)
        return copied

    def __repr__(self):
        return f"{type(self).__name__}([{', '.join(repr(e) for e in self.executors)}])"


class CmdCommand(SingleCmdCommand):
    """A command given as its arguments: ``CmdCommand(pack, "python", "x.py")``."""

    def __init__(self, pack, *cmd_argv, **kwargs):
        if isinstance(pack, Command):
            raise TypeError(f"{type(self).__name__} takes a package, not a command")
        super().__init__(pack, **kwargs)
        self.cmd_argv = cmd_argv

    def _argv(self, **kwargs):
        return [*self.cmd_argv]


class PackCommand(CmdCommand):
    """A script of the package with arguments. When the first argument is an existing file or
    folder it is the script (a folder runs as ``-m NAME``); otherwise the package's
    ``main_script`` runs. ``lazy=True`` takes the arguments from ``pack.argv`` when the argument
    list is built."""

    def __init__(self, pack, *script_argv, lazy=False, **kwargs):
        script = None
        if script_argv and XPath(str(script_argv[0])).exists():
            script, script_argv = script_argv[0], script_argv[1:]
        super().__init__(pack, *script_argv, **kwargs)
        self.script = script
        self.lazy = lazy

    def command_arguments(self, **kwargs):
        """The script's arguments."""
        return list(self.pack.argv) if self.lazy else super()._argv(**kwargs)

    def _argv(self, **kwargs):
        script = self.script or self.pack.main_script
        path = XPath(str(script))
        if not path.is_absolute():
            path = self.pack.dirs.code / str(script)
        if path.is_dir():
            target = ["-m", str(script)]
        else:
            target = [str(path)]
        return target + self.command_arguments()


class VoidCommand(CmdCommand):
    """A process that does nothing (``true``)."""

    def __init__(self, pack, *argv, **kwargs):
        super().__init__(pack, "true", *argv, **kwargs)


class WrapperCommand(SingleCmdCommand):
    """Arguments put in front of another command: ``WrapperCommand(inner, "nice", "-n5")``."""

    def __init__(self, executor, *wrapper_argv, **kwargs):
        super().__init__(executor, **kwargs)
        self.wrapper_argv = wrapper_argv

    def _argv(self, **kwargs):
        return [*self.wrapper_argv]


class WorkingDir(WrapperCommand):
    """Starts the inner command in the package's working directory with its cache variables,
    through ``env -C`` (for commands run where the process's own directory is not kept)."""

    def __init__(self, cmd, **kwargs):
        cache = str(cmd.pack.dirs.cache)
        super().__init__(
            cmd,
            "env",
            "-C",
            str(cmd.pack.working_directory),
            "-",
            f"XDG_CACHE_HOME={cache}",
            f"HF_HOME={cache}",
            f"TORCH_HOME={cache}",
            "GLOO_SOCKET_IFNAME=enP7s7",
            "NCCL_SOCKET_IFNAME=enP7s7",
        )


class DockerConfig:
    """The system's ``docker`` settings (``system.docker`` or the ``docker.*`` options); with no
    image, commands run directly."""

    def __init__(self, executable=None, image=None, base=None, args=None, **_):
        self.executable = executable or option("docker.executable", str, "podman")
        self.image = image or option("docker.image", str, None)
        self.base = base or option("docker.base", str, "/tmp/workspace")
        self.args = list(args) if args is not None else _default_docker_args()

    def command(self, extra_args):
        """``EXECUTABLE run ARGS EXTRA IMAGE``: the front of a command run in the image."""
        return [self.executable, "run", *self.args, *extra_args, self.image]


def _default_docker_args():
    """The ``docker run`` arguments the Python milabench uses when the system gives none."""
    token = os.environ.get("MILABENCH_HF_TOKEN", "Undefined")
    return [
        "-it", "--rm", "--ipc=host", "--gpus=all", "--network", "host", "--privileged",
        "-e", f"MILABENCH_HF_TOKEN={token}",
        "-v", "/tmp/workspace/data:/milabench/envs/data",
        "-v", "/tmp/workspace/runs:/milabench/envs/runs",
    ]


class DockerRunCommand(WrapperCommand):
    """The inner command inside the system's docker image, when it names one (else as is);
    paths under the base folder become the image's ``/milabench/results``."""

    def __init__(self, executor, config, *docker_argv, **kwargs):
        self.config = config
        self.extra_args = docker_argv
        super().__init__(executor, **kwargs)

    def as_container_path(self, path):
        """``path`` as the container sees it."""
        base = self.pack.config["system"].get("base")
        text = str(path)
        return text.replace(str(base), "/milabench/results") if base else text

    def argv(self, **kwargs):
        """The inner command's arguments, inside docker when an image is set."""
        inner = self.exec.argv(**kwargs)
        outer = self._argv(**kwargs)
        if not outer:
            return inner
        return outer + [a if not isinstance(a, str) else self.as_container_path(a) for a in inner]

    def _argv(self, **kwargs):
        if self.config.image is None or (os.environ.get("MILABENCH_DOCKER") and not self.remote):
            return []
        argv = list(self.extra_args)
        env = self.pack.make_env()
        for name in ("XDG_CACHE_HOME", "OMP_NUM_THREADS"):
            if name in env:
                argv += ["--env", f"{name}={self.as_container_path(env[name])}"]
        return self.config.command(argv)


def node_address(node):
    """The address to reach ``node`` at: its ``ip``, else its ``hostname``."""
    return node.get("ip") or node.get("hostname")


class SSHCommand(WrapperCommand):
    """The inner command on ``host`` over ssh. The host leaves a ``SshMarker`` that the Rust
    planner turns into its own ssh launch (or runs here when the host is this machine)."""

    def __init__(self, executor, host, *ssh_argv, user=None, key=None, port=22, **kwargs):
        super().__init__(executor, *ssh_argv, **kwargs)
        self.host = host
        self.user = user
        self.key = key
        self.port = port
        executor.remote = True

    def _find_node_config(self):
        for node in self.pack.config["system"].get("nodes", []):
            if node.get("ip") == self.host:
                return node
        return {}

    def is_local(self):
        """Whether the host is this machine, by the system's ``self`` node."""
        me = self.pack.config["system"].get("self")
        if not me:
            return False
        return self.host in me.get("ipaddrlist", []) or self.host in (me.get("hostname"), me.get("ip"))

    def _argv(self, **kwargs):
        node = self._find_node_config()
        return [
            SshMarker(
                host=self.host,
                user=self.user or node.get("user"),
                port=int(self.port or 22),
                key=self.key or node.get("key"),
                node=node.get("name"),
            )
        ]


class TorchrunAllGPU(WrapperCommand):
    """The inner command under torchrun (through benchmate's ``benchrun``, which hands voir's
    data channel to rank 0) with a process per GPU, when the package has more than one GPU."""

    def __init__(self, executor, *torchrun_argv, module=False, **kwargs):
        self.binfolder = executor.pack.config["dirs"]["venv"]
        self.module = module
        super().__init__(executor, self.executable, *torchrun_argv, **kwargs)

    @property
    def executable(self):
        """The launcher program."""
        return f"{self.binfolder}/bin/benchrun"

    def get_cmd(self):
        """The first argument of the inner command."""
        return next(iter(self.exec.argv()), None)

    def device_count(self):
        """How many GPUs the package has."""
        return len(self.pack.config.get("devices", []))

    def should_wrap(self):
        """Whether torchrun is needed: more than one GPU."""
        return self.device_count() > 1

    def _argv(self, **kwargs):
        if not self.should_wrap():
            return []
        per_node = () if self.pack.config["plan"]["method"] == "per_gpu" else ("--nproc-per-node=gpu",)
        argv = [*super()._argv(**kwargs), *per_node]
        first = self.get_cmd()
        if self.module:
            argv.append("-m")
            return argv
        if first is not None:
            if isinstance(first, VoirMarker):
                first = str(first)
            if first in ("python", "voir"):
                argv.append("--no-python")
            elif "/" not in first and not XPath(first).exists():
                argv.append("-m")
        argv.append("--")
        return argv


class ClientServer(ListCommand):
    """A server and its client run together on this node (the client's tag ends in
    ``client``, the server's in ``server``)."""

    @staticmethod
    def new_pack(pack, tag, has_logs=True):
        """A copy of ``pack`` whose tag ends in ``tag`` (and ``nolog`` without logs)."""
        tags = [*pack.config["tag"], tag]
        if not has_logs:
            tags.append("nolog")
        return pack.copy(clone_with(pack.config, {"tag": tags}))

    @staticmethod
    def new_client_pack(pack, has_logs=True):
        """The client's package."""
        return ClientServer.new_pack(pack, "client", has_logs)

    @staticmethod
    def new_server_pack(pack, has_logs=True):
        """The server's package."""
        return ClientServer.new_pack(pack, "server", has_logs)

    def __init__(self, pack, client, server, different_nodes=False, **kwargs):
        self.client = client
        self.server = server
        super().__init__(client, server, **kwargs)


class ForeachNode(ListCommand):
    """The inner command once on each of the ``num_machines`` first nodes, over ssh; rank 0
    (the main node) keeps the benchmark's tag and options, the others are tagged ``nolog``."""

    def __init__(self, executor, use_docker=True, **kwargs):
        super().__init__(None, **kwargs)
        self.executor = executor
        self.base_tags = executor.pack.config["tag"]
        self.use_docker = use_docker

    def make_new_node_pack(self, rank, node, base):
        """The package of the rank on ``node``."""
        tags = [*self.base_tags, node["name"]]
        if rank != 0:
            tags.append("nolog")
        return base.pack.copy(clone_with(base.pack.config, {"tag": tags}))

    def make_new_node_executor(self, rank, node, base):
        """The command of the rank on ``node``."""
        return base.copy(self.make_new_node_pack(rank, node, base))

    def single_node(self):
        """The command when one node takes part."""
        return self.executor

    @property
    def executors(self):
        """One command per node taking part, built from the current configuration."""
        config = self.executor.pack.config
        wanted = config.get("num_machines", 1)
        self.nodes = select_nodes(config["system"]["nodes"], wanted)
        key = config["system"].get("sshkey")
        if len(self.nodes) == 1 or wanted == 1:
            return [self.single_node()]
        executors = []
        for rank, node in enumerate(self.nodes):
            options = dict(setsid=True, **self.options) if rank == 0 else {}
            command = self.make_new_node_executor(rank, node, self.executor)
            if self.use_docker:
                docker = DockerConfig(**config["system"].get("docker", {}))
                command = DockerRunCommand(command, docker)
            executors.append(
                SSHCommand(
                    command,
                    node_address(node),
                    user=node.get("user"),
                    key=key,
                    port=node.get("sshport", 22),
                    **options,
                )
            )
        return executors

    def set_run_options(self, **kwargs):
        """Sets the options of the inner command."""
        self.executor.set_run_options(**kwargs)
        return self

    def copy(self, pack):
        """A deep copy whose inner leaf is ``pack``."""
        copied = _copy_around_packs(self, [self.executor.pack])
        copied.executor._set_pack(pack)
        return copied


class TorchrunAllNodes(ForeachNode):
    """torchrun on each node taking part, with a static rendezvous on the main node."""

    @staticmethod
    def make_base_executor(cls, executor, *args, **kwargs):
        """``cls`` (a torchrun command class) around ``executor`` with the rendezvous
        arguments of the nodes taking part."""
        config = executor.pack.config
        nodes = select_nodes(config["system"]["nodes"], config.get("num_machines", 1))
        main_host = node_address(nodes[0])
        port = option("torchrun.port", int, RENDEZVOUS_PORT)
        backend = option("torchrun.backend", str, "static")
        ranks_filter = option("torchrun.local_ranks_filder", str, "0")
        rendezvous = (
            f"--nnodes={len(nodes)}",
            f"--rdzv-backend={backend}",
            f"--rdzv-endpoint={main_host}:{port}",
            f"--master-addr={main_host}",
            f"--master-port={port}",
            f"--local-ranks-filter={ranks_filter}",
        )
        if config["plan"]["method"] == "per_gpu":
            rendezvous = ()
        return cls(executor, *rendezvous, *args, **kwargs)

    def make_new_node_executor(self, rank, node, base):
        """The torchrun command of ``rank``, told its rank and address."""
        command = super().make_new_node_executor(rank, node, base)
        command.wrapper_argv = [
            *command.wrapper_argv,
            f"--node-rank={rank}",
            f"--local-addr={node['ip']}",
            f"--rdzv-conf=rank={rank}",
        ]
        return command

    def __init__(self, executor, *args, **kwargs):
        base = TorchrunAllNodes.make_base_executor(TorchrunAllGPU, executor, *args, **kwargs)
        super().__init__(base)


TorchRunCommand = TorchrunAllGPU


class VoirCommand(WrapperCommand):
    """The inner command under voir. ``module=True`` names voir by name instead of by the
    environment's path (for torchrun, which then starts it as a module)."""

    def __init__(self, executor, *voir_argv, module=False, **kwargs):
        self.module = module
        super().__init__(executor, **{"setsid": True, **kwargs})
        self.voir_argv = voir_argv

    def _argv(self, **kwargs):
        return [VoirMarker(self.voir_argv, self.module)]


class NJobs(ListCommand):
    """``n`` copies of the inner command, tagged ``0``..``n-1``, each seeing every GPU."""

    def __init__(self, executor, n, gpus=None, **kwargs):
        self.n = n
        self.gpus = list(gpus or [])
        copies = []
        for index in range(n):
            update = {
                "tag": [*executor.pack.config["tag"], f"{index}"],
                "job-number": index,
                "devices": [gpu["device"] for gpu in self.gpus],
            }
            copies.append(executor.copy(executor.pack.copy(clone_with(executor.pack.config, update))))
        super().__init__(*copies, **kwargs)


class SequenceCommand(ListCommand):
    """Commands that run one after the other; a failure stops the rest."""

    async def execute(self, **kwargs):
        """Runs the members in order, in the pack host."""
        for executor in self.executors:
            await executor.execute(**{**self._kwargs, **kwargs})


class PerGPU(ListCommand):
    """A copy of the inner command per GPU, tagged ``D<i>`` and seeing only its GPU (one copy
    on the CPU when there is none)."""

    def __init__(self, executor, gpus=None, **kwargs):
        gpus = list(gpus or [])
        if not gpus:
            gpus = [{"device": 0, "selection_variable": "CPU_VISIBLE_DEVICE"}]
        self.devices = gpus
        copies = []
        for gpu in gpus:
            device = gpu["device"]
            update = {
                "tag": [*executor.pack.config["tag"], f"D{device}"],
                "device": device,
                "devices": [device],
                "env": {gpu["selection_variable"]: str(gpu.get("selector", device))},
            }
            copies.append(executor.copy(executor.pack.copy(clone_with(executor.pack.config, update))))
        super().__init__(*copies, **kwargs)


def activator_script():
    """The script that activates an environment, sets the cache folder and runs its arguments."""
    return str(XPath(__file__).resolve().parent.parent.parent / "scripts" / "activator")


class ActivatorCommand(SingleCmdCommand):
    """The inner command started through the activator script (``activator VENV CACHE ...``)."""

    def _argv(self, **kwargs):
        return [activator_script(), str(self.pack.dirs.venv), str(self.pack.dirs.cache)]


class SimpleCommand(SingleCmdCommand):
    """The package's arguments followed by ``args``."""

    def __init__(self, pack_or_exec, *args, **options):
        super().__init__(pack_or_exec, **options)
        self.args = args

    def argv(self, **kwargs):
        """``pack.argv`` then ``args``."""
        return list(self.pack.argv) + list(self.args)


class AccelerateLaunchCommand(SingleCmdCommand):
    """The inner command under ``accelerate launch`` for machine ``rank``."""

    def __init__(self, pack, rank, *accelerate_argv, **kwargs):
        super().__init__(pack, **kwargs)
        self.accelerate_argv = accelerate_argv
        self.rank = rank

    def _get_main_and_workers(self):
        nodes = select_nodes(self.pack.config["system"]["nodes"], self.pack.config.get("num_machines", 1))
        return nodes[0], nodes[1:]

    def _argv(self, **kwargs):
        main, workers = self._get_main_and_workers()
        machines = max(1, len(workers) + 1)
        gpus = len(self.pack.config["devices"])
        processes = gpus * machines
        if processes <= 0:
            raise ValueError(
                f"accelerate needs at least one process: {gpus} GPU(s) on {machines} machine(s)"
            )
        if self.pack.config.get("use_deepspeed", False):
            parallel = ["--use_deepspeed", "--deepspeed_multinode_launcher=standard", "--zero_stage=2"]
        elif gpus > 1:
            parallel = ["--multi_gpu"]
        else:
            parallel = []
        threads = self.pack.resolve_argument("--cpus_per_gpu", 4)
        port = option("torchrun.port", int, RENDEZVOUS_PORT)
        accumulation = self.pack.config.get("gradient_accumulation_steps", 1)
        return [
            activator_script(),
            str(self.pack.dirs.venv),
            str(self.pack.dirs.cache),
            "accelerate",
            "launch",
            "--mixed_precision=bf16",
            "--dynamo_backend=no",
            f"--machine_rank={self.rank}",
            f"--num_machines={machines}",
            *parallel,
            f"--gradient_accumulation_steps={accumulation}",
            f"--num_cpu_threads_per_process={threads}",
            f"--main_process_ip={main['ip']}",
            f"--main_process_port={port}",
            f"--num_processes={processes}",
            *self.accelerate_argv,
        ]


class AccelerateAllNodes(ForeachNode):
    """``accelerate launch`` on each node taking part (on one node: only with several GPUs)."""

    def single_node(self):
        """accelerate with several GPUs, else the inner command itself."""
        if len(self.executor.pack.config.get("devices", [])) > 1:
            return AccelerateLaunchCommand(self.executor, 0, **self.options)
        return self.executor

    def make_new_node_executor(self, rank, node, base):
        """accelerate for ``rank``, in docker when the system names an image."""
        command = base.copy(self.make_new_node_pack(rank, node, base))
        docker = DockerConfig(**base.pack.config["system"].get("docker", {}))
        return DockerRunCommand(AccelerateLaunchCommand(command, rank, **self.options), docker)


class SCPCommand(SSHCommand, CmdCommand):
    """Refused: copying folders between nodes is the Rust milabench's job (``milabench
    install`` on each node)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "SCPCommand: the Rust milabench does not copy folders between nodes from a benchfile"
        )


__all__ = [
    "AccelerateAllNodes",
    "AccelerateLaunchCommand",
    "ActivatorCommand",
    "ClientServer",
    "CmdCommand",
    "Command",
    "DockerConfig",
    "DockerRunCommand",
    "ForeachNode",
    "ListCommand",
    "NJobs",
    "PackCommand",
    "PerGPU",
    "SCPCommand",
    "SSHCommand",
    "SequenceCommand",
    "SimpleCommand",
    "SingleCmdCommand",
    "TorchRunCommand",
    "TorchrunAllGPU",
    "TorchrunAllNodes",
    "VoidCommand",
    "VoirCommand",
    "WorkingDir",
    "WrapperCommand",
    "clone_with",
    "node_address",
]
