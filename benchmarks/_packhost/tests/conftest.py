"""Puts the pack host's folder first on the import path, as milabench does with PYTHONPATH."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@pytest.fixture
def bench_folder(tmp_path):
    """Writes a benchmark folder with ``benchfile.py`` holding ``source`` and a main script."""

    def make(source, scripts=("main.py",)):
        folder = tmp_path / "bench"
        folder.mkdir(exist_ok=True)
        (folder / "benchfile.py").write_text(source)
        for script in scripts:
            (folder / script).write_text("print('hello')\n")
        return folder

    return make
