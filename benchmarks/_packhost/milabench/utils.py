"""Small helpers that benchfiles import from ``milabench.utils``."""

from __future__ import annotations

from pathlib import Path


def assemble_options(options):
    """Command-line arguments from a benchmark's ``argv``.

    A list is returned as it is. A mapping gives ``[positionals..., --opt, value, ...]``:
    ``None`` leaves an option out, ``True`` gives a flag (or a positional when the key does
    not start with ``-``), a list value is joined with commas, and the key ``--`` adds its list
    of arguments as they are. ``False`` is refused: the Python tool asks for ``null`` instead.
    """
    if not isinstance(options, dict):
        return list(options)
    positionals = []
    arguments = []
    for key, value in options.items():
        if value is None:
            continue
        if value is True:
            (arguments if key.startswith("-") else positionals).append(key)
        elif key == "--":
            arguments.extend(value)
        elif value is False:
            raise ValueError(f"argument {key}: use null to leave an option out, not false")
        else:
            arguments.append(key)
            if isinstance(value, list):
                arguments.append(",".join(str(v) for v in value))
            else:
                arguments.append(str(value))
    return positionals + arguments


def select_nodes(nodes, n):
    """The first ``n`` nodes (at least one), the main node first."""
    ranked = []
    for node in nodes:
        if node.get("main", False):
            ranked.insert(0, node)
        else:
            ranked.append(node)
    return ranked[: max(1, min(n, len(ranked)))]


def enumerate_rank(nodes):
    """``(rank, node)`` pairs: the main node is rank 0, the others count from 1."""
    rank = 1
    for node in nodes:
        if node.get("main", False):
            yield 0, node
        else:
            yield rank, node
            rank += 1


def relativize(path, working_dir):
    """``path`` relative to ``working_dir`` when it is absolute."""
    path = Path(path)
    return path.relative_to(Path(working_dir)) if path.is_absolute() else path
