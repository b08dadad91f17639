"""Deep merge of configuration trees, with the Python milabench's rules."""

from __future__ import annotations


class _Delete:
    """Marks a key to remove when it is merged in."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE = _Delete()


def cleanup(value):
    """``value`` without the keys marked ``DELETE``, at every depth."""
    if isinstance(value, dict):
        return type(value)((k, cleanup(v)) for k, v in value.items() if v is not DELETE)
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(cleanup(v) for v in value)
    return value


def merge(base, update):
    """``update`` merged into ``base``; neither is modified.

    Mappings merge key by key (``update`` wins, ``DELETE`` removes a key); a list replaces a
    list, unless the update is ``{"append": [...]}``; any other value replaces the base.
    """
    if isinstance(base, dict) and isinstance(update, dict):
        merged = type(base)()
        for key, value in base.items():
            if key not in update:
                merged[key] = value
            elif update[key] is not DELETE:
                merged[key] = merge(value, update[key])
        for key, value in update.items():
            if key not in base:
                merged[key] = cleanup(value)
        return merged
    if isinstance(base, list) and isinstance(update, dict):
        if "append" not in update:
            raise TypeError("a list merges with a mapping only through its 'append' key")
        return base + list(update["append"])
    if hasattr(base, "__merge__"):
        return base.__merge__(update)
    return cleanup(update)
