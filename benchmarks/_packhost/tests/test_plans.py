"""Command trees of benchfiles flattened into the processes the Rust planner reads."""

import json

from hosttools import config_for, run_host

from packhost import plan as planning

GPUS = [{"device": str(i), "selection_variable": "CUDA_VISIBLE_DEVICES", "selector": str(i)}
        for i in range(2)]

DEFAULT = """
from milabench.pack import Package

class Bench(Package):
    pass

__pack__ = Bench
"""


def test_the_default_package_runs_main_under_voir_once_per_gpu(bench_folder):
    folder = bench_folder(DEFAULT, scripts=("main.py", "prepare.py"))
    answer = planning.plan(config_for(folder), GPUS)
    assert answer["class"] == "Bench" and answer["overrides"] == []
    run = answer["run"]
    assert [p["tag"] for p in run] == [["bench", "D0"], ["bench", "D1"]]
    assert run[1]["argv"] == [{"voir": {"args": [], "module": False}}, str(folder / "main.py"),
                              "--size", "3"]
    assert run[1]["env"] == {"CUDA_VISIBLE_DEVICES": "1"}
    assert run[1]["devices"] == ["1"] and run[1]["cwd"] == str(folder)
    assert run[0]["extra_env"] == {}, "the defaults of make_env are Rust's to set"
    assert answer["prepare"][0]["argv"] == [str(folder / "prepare.py"), "--size", "3"]


def test_njobs_copies_see_every_gpu_and_a_cpu_machine_gets_one_process(bench_folder):
    folder = bench_folder(DEFAULT)
    jobs = planning.plan(config_for(folder, plan={"method": "njobs", "n": 3}), GPUS)["run"]
    assert [p["tag"] for p in jobs] == [["bench", "0"], ["bench", "1"], ["bench", "2"]]
    assert jobs[2]["devices"] == ["0", "1"] and jobs[2]["job_number"] == 2
    cpu = planning.plan(config_for(folder), [])["run"]
    assert len(cpu) == 1 and cpu[0]["env"] == {"CPU_VISIBLE_DEVICE": "0"}
    assert not planning.plan(config_for(folder), [])["prepare"], "no prepare.py: nothing to do"


STDOUT_AND_ENV = """
from milabench.pack import Package
import milabench.commands as cmd

class Bench(Package):
    main_script = "other.py"

    def make_env(self):
        return {**super().make_env(), "EXTRA": "1"}

    async def prepare(self):
        await super().prepare()

    def build_run_plan(self):
        return cmd.PackCommand(self, *self.argv, lazy=True).use_stdout()

__pack__ = Bench
"""


def test_overrides_extra_variables_and_the_stdout_channel_are_reported(bench_folder):
    folder = bench_folder(STDOUT_AND_ENV, scripts=("other.py",))
    answer = planning.plan(config_for(folder), GPUS[:1])
    assert answer["overrides"] == ["prepare"]
    process = answer["run"][0]
    assert process["argv"] == [str(folder / "other.py"), "--size", "3"]
    assert process["use_stdout"] is True
    assert process["extra_env"] == {"EXTRA": "1"}


TORCHRUN = """
from milabench.pack import Package
from milabench.commands import TorchrunAllNodes

class Bench(Package):
    def build_run_plan(self):
        return TorchrunAllNodes(super().build_run_plan()).use_stdout()

__pack__ = Bench
"""


def test_torchrun_on_two_nodes_sends_the_second_rank_over_ssh(bench_folder):
    folder = bench_folder(TORCHRUN)
    config = config_for(folder, plan={"method": "njobs", "n": 1}, nodes=2, num_machines=2)
    run = planning.plan(config, GPUS)["run"]
    # As in the Python tool, a rank's tag is the benchmark's tag before the plan spread it (no
    # job number), then the node's name.
    assert [p["tag"] for p in run] == [["bench", "0"], ["bench", "1", "nolog"]]
    second = run[1]["argv"]
    assert second[0] == {"ssh": {"host": "10.0.0.1", "user": "me", "port": 22, "key": None,
                                 "node": "1"}}
    assert second[1].endswith("/venv/bin/benchrun")
    assert "--nnodes=2" in second and "--node-rank=1" in second
    assert "--local-addr=10.0.0.1" in second and "--nproc-per-node=gpu" in second
    assert second[second.index("--") + 1] == {"voir": {"args": [], "module": False}}


def test_one_node_torchrun_has_no_ssh(bench_folder):
    folder = bench_folder(TORCHRUN)
    run = planning.plan(config_for(folder, plan={"method": "njobs", "n": 1}), GPUS)["run"]
    assert len(run) == 1 and run[0]["argv"][0].endswith("/bin/benchrun")


def test_a_benchfile_without_pack_or_with_an_unknown_import_is_named(bench_folder, tmp_path):
    folder = bench_folder("x = 1\n")
    answer = run_host("plan", {"config": config_for(folder), "gpus": []})
    reply = json.loads(answer.stdout)
    assert answer.returncode == 1 and not reply["ok"]
    assert "sets no `__pack__`" in reply["error"]
    folder = bench_folder("from milabench.sizer import resolve_argv\n")
    reply = json.loads(run_host("plan", {"config": config_for(folder), "gpus": []}).stdout)
    assert "milabench.sizer" in reply["error"] and "benchfile.yaml" in reply["error"]


def test_a_failing_benchfile_says_where_and_a_batch_answers_each_request(bench_folder, tmp_path):
    good = bench_folder(DEFAULT)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "benchfile.py").write_text("from milabench.pack import Package\n"
                                      "class B(Package):\n"
                                      "    def build_run_plan(self):\n"
                                      "        raise KeyError('nope')\n"
                                      "__pack__ = B\n")
    answer = run_host("plan", [{"config": config_for(good), "gpus": []},
                               {"config": config_for(bad, name="bad"), "gpus": []}])
    lines = [json.loads(line) for line in answer.stdout.splitlines()]
    assert [line["ok"] for line in lines] == [True, False]
    assert "KeyError" in lines[1]["error"] and "benchfile.py:4" in lines[1]["error"]
    assert "Traceback" in answer.stderr


INSTALL = """
import sys
from milabench.pack import Package

class Bench(Package):
    async def install(self):
        await super().install()
        await self.execute(sys.executable, "-c", "open('installed', 'w').write('yes')")
        if self.config.get("fail"):
            await self.execute(sys.executable, "-c", "raise SystemExit(3)")

__pack__ = Bench
"""


def test_an_install_method_runs_its_commands_and_fails_with_their_status(bench_folder):
    folder = bench_folder(INSTALL)
    done = run_host("install", {"config": config_for(folder)})
    assert done.returncode == 0, done.stderr
    assert (folder / "installed").read_text() == "yes"
    failed = run_host("install", {"config": config_for(folder, fail=True)})
    assert failed.returncode == 1
    assert "install failed" in failed.stderr and "exited with status 3" in failed.stderr


def test_output_on_fd_1_an_exit_and_a_bad_plan_leave_the_answers_whole(bench_folder, tmp_path):
    def folder(name, source):
        path = tmp_path / name
        path.mkdir()
        (path / "benchfile.py").write_text(source)
        (path / "main.py").write_text("print('hello')\n")
        return path

    prints = folder("prints", "import os, subprocess, sys\n"
                              "os.write(1, b'{not an answer\\n')\n"
                              "subprocess.run([sys.executable, '-c', 'print(\"{}\")'])\n" + DEFAULT)
    exits = folder("exits", "import sys\nsys.exit(0)\n" + DEFAULT)
    badplan = folder("badplan", DEFAULT.replace(
        "    pass", "    def build_run_plan(self):\n        return 42"))
    answer = run_host("plan", [{"config": config_for(path, name=path.name), "gpus": []}
                               for path in (prints, exits, badplan)])
    lines = [json.loads(line) for line in answer.stdout.splitlines()]
    assert [line["ok"] for line in lines] == [True, False, False], answer.stdout
    assert lines[1]["error"].startswith("the benchfile called sys.exit(0) (at ")
    assert "Bench.build_run_plan returned 42, not a command" in lines[2]["error"]
    assert "{not an answer" in answer.stderr


def test_a_benchfile_past_the_time_limit_is_answered_and_the_next_one_read(bench_folder, tmp_path):
    loops = tmp_path / "loops"
    loops.mkdir()
    (loops / "benchfile.py").write_text("while True:\n    pass\n")
    good = bench_folder(DEFAULT)
    env_limit = {"PACKHOST_ANSWER_LIMIT": "0.5"}
    answer = run_host("plan", [{"config": config_for(loops, name="loops"), "gpus": []},
                               {"config": config_for(good), "gpus": []}], env=env_limit)
    lines = [json.loads(line) for line in answer.stdout.splitlines()]
    assert "did not finish within 0.5 s" in lines[0]["error"] and lines[1]["ok"]
