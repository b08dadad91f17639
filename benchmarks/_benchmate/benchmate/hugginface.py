"""Downloads from the Hugging Face Hub for ``prepare.py`` scripts (the module name keeps Python
milabench's spelling, which its benchmarks import)."""

from __future__ import annotations

from typing import Any

from ._optional import require

# Files a model snapshot leaves out unless told: git metadata, documentation, ONNX exports.
DEFAULT_IGNORE = ["*.git*", "*.md", "*.txt", "*.onnx"]


def download_hf_model(
    model_id: str,
    token: str | None = None,
    cache_dir: str | None = None,
    ignore_patterns: list[str] | None = None,
) -> str:
    """Downloads a model repository into the Hub cache (``HF_HOME``, or ``cache_dir``) without
    the files matching ``ignore_patterns`` (:data:`DEFAULT_IGNORE` by default), and returns the
    local folder."""
    hub = require("huggingface_hub", "benchmate.hugginface.download_hf_model")
    options: dict[str, Any] = {
        "repo_id": model_id,
        "ignore_patterns": DEFAULT_IGNORE if ignore_patterns is None else ignore_patterns,
    }
    if cache_dir:
        options["cache_dir"] = cache_dir
    if token:
        options["token"] = token
    print(f"Downloading {model_id}...")
    path = hub.snapshot_download(**options)
    print(f"Model is available at {path}")
    return path


def download_hf_dataset(
    dataset_name: str, split: str | None = None, name: str | None = None, token: str | None = None
) -> bool:
    """Loads a dataset (one ``split`` of it when given, the configuration ``name`` when given)
    so that it lands in the ``datasets`` cache, prints where its files are, and returns True."""
    datasets = require("datasets", "benchmate.hugginface.download_hf_dataset")
    options: dict[str, Any] = {}
    if split:
        options["split"] = split
    if token:
        options["token"] = token
    print(f"Downloading dataset: {dataset_name}" + (f" (split: {split})" if split else ""))
    dataset = datasets.load_dataset(dataset_name, name=name, **options)
    for line in cache_locations(dataset):
        print(line)
    return True


def cache_locations(dataset: Any) -> list[str]:
    """Lines saying where a loaded dataset's files are cached: ``Cached at: FILE`` for a
    dataset, ``Cached at (split S): FILE`` for each split of a dataset dictionary."""
    files = getattr(dataset, "cache_files", None)
    if isinstance(files, dict):
        return [
            f"Cached at (split {split}): {_filename(entry)}"
            for split, entries in files.items()
            for entry in entries
        ]
    if isinstance(files, list):
        return [f"Cached at: {_filename(entry)}" for entry in files]
    return ["Could not determine local cache location for this dataset object."]


def _filename(entry: Any) -> Any:
    return entry.get("filename", entry) if isinstance(entry, dict) else entry
