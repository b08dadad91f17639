"""The small helpers benchfiles import: argument assembly, merging, node selection, paths."""

import pytest

from milabench.fs import XPath
from milabench.merge import DELETE, merge
from milabench.utils import assemble_options, select_nodes


def test_assemble_options_follows_the_python_tools_rules():
    options = {"pos": True, "--flag": True, "--gone": None, "--n": 3, "--list": [1, 2],
               "--": ["a", "b"]}
    assert assemble_options(options) == ["pos", "--flag", "--n", "3", "--list", "1,2", "a", "b"]
    assert assemble_options(["--x", "1"]) == ["--x", "1"]
    with pytest.raises(ValueError, match="null"):
        assemble_options({"--bad": False})


def test_merge_is_deep_and_lists_are_replaced_or_appended():
    base = {"a": {"b": 1, "c": 2}, "l": [1], "k": 1}
    assert merge(base, {"a": {"c": 3}, "l": [2]}) == {"a": {"b": 1, "c": 3}, "l": [2], "k": 1}
    assert merge(base, {"l": {"append": [2]}})["l"] == [1, 2]
    assert "k" not in merge(base, {"k": DELETE})
    assert base == {"a": {"b": 1, "c": 2}, "l": [1], "k": 1}


def test_select_nodes_puts_the_main_node_first():
    nodes = [{"name": "a"}, {"name": "b", "main": True}, {"name": "c"}]
    assert [n["name"] for n in select_nodes(nodes, 2)] == ["b", "a"]
    assert [n["name"] for n in select_nodes(nodes, 0)] == ["b"]


def test_merge_into_copies_what_the_manifest_selects(tmp_path):
    source = XPath(tmp_path / "src")
    (source / "llama").mkdir(parents=True)
    (source / "llama" / "model.py").write_text("m")
    (source / "requirements.txt").write_text("r")
    (source / "other.txt").write_text("o")
    dest = XPath(tmp_path / "dest")
    source.merge_into(dest, manifest="/llama/\n/requirements.txt\n")
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "llama/model.py", "requirements.txt"]
    source.rm()
    assert not source.exists()
