"""PARAM's own operator runner beside `benchit ops`, on the same config, sizes and iterations.

Runs PARAM's `run_benchmark` (the source packed in `.gpu/param`, unchanged) on CONFIG, reads
its JSON-lines records and those `benchit ops` wrote for the same config (`--ours PREFIX`), and
writes per operator id both median times and their ratio: `side_by_side.md` (a table) and
`side_by_side.json` under `--out`.

PARAM's runner passes `use_cuda=` to `torch.autograd.profiler.profile`, which recent torch
releases no longer accept; the call is adapted here (to `use_device`) before the runner starts,
so its measuring code runs as published.

Usage: param_side_by_side.py --param DIR --config CONFIG.json --device cuda --ours PREFIX
                             --out DIR [-w 5] [-i 20] [--backward]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import runpy
import statistics
import sys
from pathlib import Path

RUNNER = "param_bench.train.compute.python.pytorch.run_benchmark"


def adapt_profiler() -> None:
    """Lets PARAM's `profile(..., use_cuda=...)` call work on a torch that dropped the keyword."""
    import inspect

    import torch.autograd.profiler as profiler

    original = profiler.profile
    if "use_cuda" in inspect.signature(original.__init__).parameters:
        return

    class Profile(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args, use_cuda: bool = False, **kwargs):
            if use_cuda:
                kwargs.setdefault("use_device", "cuda")
            super().__init__(*args, **kwargs)

    profiler.profile = Profile


def run_param(args: argparse.Namespace, prefix: Path) -> None:
    """PARAM's runner, in this process, writing `<prefix>_<pid>_<time>.json`."""
    sys.path.insert(0, str(Path(args.param).resolve()))
    adapt_profiler()
    argv = [RUNNER, "-c", args.config, "-d", args.device, "-w", str(args.warmup)]
    argv += ["-i", str(args.iterations), "-o", str(prefix)]
    if args.backward:
        argv.append("--backward")
    sys.argv = argv
    runpy.run_module(RUNNER, run_name="__main__")


def records(prefix: str) -> dict[str, dict]:
    """The measured records of the JSON-lines files PREFIX_*.json, by `op|id`."""
    found: dict[str, dict] = {}
    files = [f for f in glob.glob(f"{prefix}_*.json") if not f.endswith("_trace.json")]
    if not files:
        raise SystemExit(f"no records found at {prefix}_*.json")
    for file in files:
        for line in Path(file).read_text().splitlines():
            record = json.loads(line)
            if "metric" in record and "id" in record:
                found[f"{record['op_name']}|{record['id']}"] = record["metric"]
    return found


def median_ms(metric: dict, direction: str) -> float | None:
    times = metric.get(direction, {}).get("measure.time") or []
    return statistics.median(times) if times else None


def compare(ours: dict[str, dict], param: dict[str, dict]) -> list[dict]:
    rows = []
    for key in sorted(set(ours) | set(param)):
        for direction in ("forward", "backward"):
            mine = median_ms(ours.get(key, {}), direction)
            theirs = median_ms(param.get(key, {}), direction)
            if mine is None and theirs is None:
                continue
            ratio = mine / theirs if mine and theirs else None
            rows.append(
                {"id": key, "pass": direction, "benchit_ms": mine, "param_ms": theirs, "ratio": ratio}
            )
    return rows


def table(rows: list[dict], args: argparse.Namespace) -> str:
    def cell(value: float | None, digits: int) -> str:
        return "—" if value is None else f"{value:.{digits}f}"

    lines = [
        f"Median times over {args.iterations} iterations after {args.warmup} warm-up, "
        f"device `{args.device}`; ratio = benchit / PARAM.",
        "",
        "| id | pass | benchit ms | PARAM ms | ratio |",
        "|---|---|---:|---:|---:|",
    ]
    for row in rows:
        escaped = row["id"].replace("|", "\\|")
        lines.append(
            f"| `{escaped}` | {row['pass']} | {cell(row['benchit_ms'], 4)} | "
            f"{cell(row['param_ms'], 4)} | {cell(row['ratio'], 3)} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--param", required=True, help="folder holding the param_bench package")
    parser.add_argument("--config", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--ours", required=True, help="benchit ops' --output-prefix")
    parser.add_argument("--out", required=True)
    parser.add_argument("-w", "--warmup", type=int, default=5)
    parser.add_argument("-i", "--iterations", type=int, default=20)
    parser.add_argument("--backward", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    prefix = out / "param"
    if not glob.glob(f"{prefix}_*.json"):
        run_param(args, prefix)
    rows = compare(records(args.ours), records(str(prefix)))
    (out / "side_by_side.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "side_by_side.md").write_text(table(rows, args))
    print(table(rows, args))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
