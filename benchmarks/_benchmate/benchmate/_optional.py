"""Imports of the packages a benchmate helper needs only when it is used."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, needed_by: str, install: str | None = None) -> ModuleType:
    """Imports ``module``, or raises an ImportError naming it, the helper that needs it and the
    package to install (``install``, the module's top-level name by default)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        package = install or module.split(".")[0]
        raise ImportError(
            f"{needed_by} needs {package}, which cannot be imported here ({error}); "
            f"install {package} in the benchmark's environment"
        ) from error
