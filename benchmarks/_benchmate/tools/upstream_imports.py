#!/usr/bin/env python3
"""Lists what a tree of benchmark folders imports from ``benchmate``.

Usage: ``python tools/upstream_imports.py BENCHMARKS_DIR [LABEL] > tests/upstream_imports.txt``
(``LABEL`` names the source in the list's header, e.g. ``mila-iqia/milabench@f5a80277``).

Every ``.py`` file under the folder is parsed (never run); folders named ``retired`` at the top
level are left out. Each import of benchmate becomes one line ``MODULE NAME`` (``MODULE`` alone
for ``import benchmate.x``), sorted, without duplicates. benchmate's tests import every line of
the committed list, so that our package keeps offering what Python milabench's benchmarks use.
"""

from __future__ import annotations

import ast
import pathlib
import sys
from typing import Iterable, Iterator

PACKAGE = "benchmate"


def benchmate_imports(tree: ast.AST) -> Iterator[tuple[str, str | None]]:
    """Yields ``(module, name)`` for each name a parsed file imports from benchmate (``name`` is
    None for a plain ``import benchmate.x``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.split(".")[0] == PACKAGE:
                for alias in node.names:
                    yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield alias.name, None


def python_files(root: pathlib.Path, excluded: Iterable[str] = ("retired",)) -> Iterator[pathlib.Path]:
    """The ``.py`` files under ``root``, in a stable order, outside the top-level folders named in
    ``excluded``."""
    skip = set(excluded)
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] not in skip:
            yield path


def scan(root: pathlib.Path, excluded: Iterable[str] = ("retired",)) -> list[str]:
    """The sorted lines ``MODULE NAME`` (or ``MODULE``) of every benchmate import under ``root``.
    A file that does not parse is an error naming it."""
    found: set[str] = set()
    for path in python_files(root, excluded):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError as error:
            raise SystemExit(f"{path}: cannot parse ({error.msg}, line {error.lineno})") from None
        for module, name in benchmate_imports(tree):
            found.add(module if name is None else f"{module} {name}")
    return sorted(found)


def main(argv: list[str]) -> int:
    """Prints the list for the folder named on the command line."""
    if len(argv) not in (1, 2) or not pathlib.Path(argv[0]).is_dir():
        print(__doc__.strip().splitlines()[2].replace("``", ""), file=sys.stderr)
        return 2
    label = argv[1] if len(argv) == 2 else argv[0]
    print(f"# What the benchmarks of {label} import from benchmate")
    print("# (made by tools/upstream_imports.py; one import per line: MODULE [NAME])")
    for line in scan(pathlib.Path(argv[0])):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
