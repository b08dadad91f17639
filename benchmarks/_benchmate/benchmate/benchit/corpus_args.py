"""The command-line helper of MLAgility's (and TurnkeyML's) model corpus, so that its scripts
run under benchit unchanged.

The corpus scripts read their sizes with ``from mlagility.parser import parse`` (``turnkeyml``
in its later versions): ``batch_size, max_seq_length = parse(["batch_size",
"max_seq_length"])`` returns the values of those options from the script's command line
(``benchit bert.py --script-args "--batch_size 4"``), each with its corpus default. When the
real package is not installed, the worker makes this module importable under those names
(:func:`corpus_modules`).
"""

from __future__ import annotations

import argparse
import sys
import types
from typing import Union

#: Every option a corpus script may ask for, with its default; the default's type is the
#: option's type.
DEFAULTS: dict[str, Union[int, float]] = {
    "batch_size": 1,
    "max_seq_length": 128,
    "max_audio_seq_length": 25600,
    "height": 224,
    "num_channels": 3,
    "width": 224,
    "k": 8,
    "alpha": 2.2,
    "out_channels": 16,
    "num_layers": 8,
    "in_channels": 1433,
}


def parse(names: list[str]) -> list[Union[int, float]]:
    """The values of options ``names`` on the script's command line, in the order asked, each
    defaulting to its corpus value. An option outside :data:`DEFAULTS` is a ``KeyError``; an
    option on the command line that was not asked for is argparse's usage error."""
    parser = argparse.ArgumentParser()
    for name in names:
        if name not in DEFAULTS:
            raise KeyError(f"{name} is not an option of the model corpus; the options are "
                           f"{', '.join(DEFAULTS)}")
        default = DEFAULTS[name]
        parser.add_argument(f"--{name}", default=default, type=type(default), nargs="?")
    values = vars(parser.parse_args(sys.argv[1:]))
    return [values[name] for name in names]


#: The packages whose ``parser`` module this one stands in for.
CORPUS_PACKAGES = ("mlagility", "turnkeyml")


def corpus_modules() -> dict[str, types.ModuleType]:
    """``{package: module, package.parser: module}`` for each corpus package, to put in
    ``sys.modules`` for a script when that package is not installed."""
    modules: dict[str, types.ModuleType] = {}
    for package in CORPUS_PACKAGES:
        parser = types.ModuleType(f"{package}.parser", "benchit's stand-in for the corpus "
                                  "helper (benchmate.benchit.corpus_args)")
        parser.parse = parse  # type: ignore[attr-defined]
        root = types.ModuleType(package, "benchit's stand-in: only its parser module")
        root.__path__ = []  # type: ignore[attr-defined]
        root.parser = parser  # type: ignore[attr-defined]
        modules[package] = root
        modules[f"{package}.parser"] = parser
    return modules
