"""The record selection of benchmate's voir instrument (the rule of voir's ``log``)."""

import fnmatch

from benchmate.monitor import LEAN_KEYS, key_filter


def voirs_rule(patterns, context, record):
    """voir's ``log`` selection, written out with fnmatch for every key (the reference)."""
    kept, matched = {}, False
    for key, value in record.items():
        if key in context or any(fnmatch.fnmatch(key, p) for p in context):
            kept[key] = value
        if key in patterns or any(fnmatch.fnmatch(key, p) for p in patterns):
            kept[key] = value
            matched = True
    return kept if matched else None


RECORDS = [
    {"task": "train", "rate": 10.0, "units": "items/s", "time": 1.0},
    {"task": "early_stop", "progress": (1, 3)},
    {"task": "train", "loss": 0.5, "epoch": 3},
    {"task": "train", "epoch": 3},
    {"argv": ["--x"], "task": "main"},
    {"overhead": 1.5, "task": "train"},
    {},
]


def test_plain_names_select_as_voir_does():
    select = key_filter(LEAN_KEYS, ("task",))
    for record in RECORDS:
        assert select(record) == voirs_rule(LEAN_KEYS, ("task",), record), record
    assert select({"task": "train", "epoch": 3}) is None
    assert select({"rate": 1.0, "task": "x", "noise": 2}) == {"rate": 1.0, "task": "x"}


def test_patterns_select_as_voir_does():
    for patterns, context in [(("*",), ("task",)), (("r?te", "lo*"), ("t[a]sk",)), (("rate",), ("ta*",))]:
        select = key_filter(patterns, context)
        for record in RECORDS:
            assert select(record) == voirs_rule(patterns, context, record), (patterns, record)
