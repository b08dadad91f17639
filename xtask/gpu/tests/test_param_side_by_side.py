"""The side-by-side table of `benchit ops` and PARAM's runner, from their records."""

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("side", HERE.parent / "param_side_by_side.py")
side = importlib.util.module_from_spec(spec)
spec.loader.exec_module(side)


def write_records(prefix: Path, metrics: dict) -> None:
    lines = [{"run_options": {}}]
    for key, metric in metrics.items():
        op, run_id = key.split("|", 1)
        lines.append({"op_name": op, "id": run_id, "metric": metric})
    lines.append({"finish_time": "now"})
    Path(f"{prefix}_1_2.json").write_text("\n".join(json.dumps(l) for l in lines) + "\n")
    # A trace file beside them is not a record file.
    Path(f"{prefix}_1_2_trace.json").write_text("{}")


def timed(forward, backward=None):
    metric = {"forward": {"measure.time": forward}}
    if backward:
        metric["backward"] = {"measure.time": backward}
    return metric


def test_each_id_and_pass_gets_both_medians_and_their_ratio(tmp_path):
    write_records(tmp_path / "ours", {"torch.add|0|0|0": timed([1.0, 2.0, 3.0], [4.0])})
    write_records(tmp_path / "param", {"torch.add|0|0|0": timed([4.0, 4.0, 4.0]), "torch.mm|0|0|0": timed([1.0])})
    rows = side.compare(side.records(str(tmp_path / "ours")), side.records(str(tmp_path / "param")))
    assert rows == [
        {"id": "torch.add|0|0|0", "pass": "forward", "benchit_ms": 2.0, "param_ms": 4.0, "ratio": 0.5},
        {"id": "torch.add|0|0|0", "pass": "backward", "benchit_ms": 4.0, "param_ms": None, "ratio": None},
        {"id": "torch.mm|0|0|0", "pass": "forward", "benchit_ms": None, "param_ms": 1.0, "ratio": None},
    ]


def test_the_table_escapes_the_ids_bars(tmp_path):
    class Args:
        iterations, warmup, device = 5, 2, "cuda"

    text = side.table([{"id": "torch.add|0|0|0", "pass": "forward", "benchit_ms": 2.0, "param_ms": 4.0, "ratio": 0.5}], Args)
    assert "| `torch.add\\|0\\|0\\|0` | forward | 2.0000 | 4.0000 | 0.500 |" in text


def test_missing_records_are_an_error(tmp_path):
    try:
        side.records(str(tmp_path / "nothing"))
    except SystemExit as exit:
        assert "no records found" in str(exit)
    else:
        raise AssertionError("no error")
