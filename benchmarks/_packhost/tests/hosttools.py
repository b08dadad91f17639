"""Helpers of the pack host's tests: a configuration as Rust sends it, the host's CLI."""

import json
import os
import subprocess
import sys
from pathlib import Path

HOST = Path(__file__).resolve().parent.parent


def config_for(folder, name="bench", plan=None, nodes=1, argv=None, **extra):
    """A resolved configuration as the Rust planner sends it."""
    node_list = [
        {"name": str(i), "ip": "127.0.0.1" if i == 0 else f"10.0.0.{i}", "user": "me",
         "main": i == 0, "sshport": 22, "local": i == 0}
        for i in range(nodes)
    ]
    base = folder.parent / "base"
    config = {
        "name": name,
        "tag": [name],
        "definition": str(folder),
        "plan": plan or {"method": "per_gpu"},
        "argv": argv if argv is not None else {"--size": 3},
        "dirs": {k: str(base / k) for k in ("venv", "data", "runs", "extra", "cache")},
        "system": {"arch": "cuda", "nodes": node_list, "self": node_list[0]},
        "voir": {"options": {"stop": 5}},
    }
    config["dirs"]["base"] = str(base)
    config.update(extra)
    return config


def run_host(method, request, cwd=None, env=None):
    """Runs ``python -m packhost METHOD`` with ``request`` on standard input (and the variables
    ``env`` added)."""
    env = {**os.environ, "PYTHONPATH": str(HOST), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "packhost", method],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )
