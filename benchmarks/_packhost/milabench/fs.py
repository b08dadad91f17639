"""``XPath``: the path type benchfiles use, with the file helpers of the Python milabench."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import tempfile
import urllib.request
from pathlib import Path
from urllib.parse import urlparse


class XPath(type(Path())):
    """A concrete ``pathlib`` path with the helpers benchfiles call during install."""

    def __len__(self):
        return len(str(self))

    def open(self, mode="r", buffering=-1, encoding=None, errors=None, newline=None):
        """Like ``Path.open``, in UTF-8 for text unless told otherwise."""
        if encoding is None and "b" not in mode:
            encoding = "utf-8"
        return super().open(mode, buffering, encoding, errors, newline)

    def prepend_lines(self, *lines):
        """Writes ``lines`` at the start of this file."""
        self.write_text("".join(f"{line}\n" for line in lines) + self.read_text())

    def append_lines(self, *lines):
        """Writes ``lines`` at the end of this file."""
        self.write_text(self.read_text() + "".join(f"{line}\n" for line in lines))

    def copy(self, path):
        """Copies this file or folder tree to ``path``, making its parent folders."""
        path = XPath(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.is_dir():
            shutil.copytree(self, path)
        else:
            shutil.copy(self, path)

    def rm(self):
        """Removes this file or folder tree, if it exists."""
        if self.is_dir() and not self.is_symlink():
            shutil.rmtree(self)
        elif self.exists() or self.is_symlink():
            self.unlink()

    def sub(self, pattern, replacement):
        """Replaces every match of the regular expression ``pattern`` in this file."""
        self.write_text(re.sub(pattern, str(replacement), self.read_text()))

    def merge_into(self, dest, manifest="*", move=False, readonly=False):
        """Copies (or moves) the files under this folder that ``manifest`` selects into ``dest``.

        ``manifest`` holds one pattern a line, in the style of ``.gitignore``: a pattern with a
        slash is anchored at this folder, a pattern ending in a slash selects a folder's whole
        tree, ``!pattern`` takes a selection back. It may also be a path to such a file.
        """
        if isinstance(manifest, Path):
            manifest = manifest.read_text() if manifest.exists() else ""
        patterns = [p.strip() for p in manifest.splitlines()]
        patterns = [p for p in patterns if p and not p.startswith("#")]
        dest = XPath(dest)
        for root, _dirs, files in os.walk(self):
            for name in files:
                source = XPath(root) / name
                relative = source.relative_to(self).as_posix()
                if not _selected(relative, patterns):
                    continue
                target = dest / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.exists() and readonly:
                    os.chmod(target, os.stat(target).st_mode | 0o200)
                if move:
                    shutil.move(source, target)
                else:
                    shutil.copy2(source, target)
                if readonly:
                    os.chmod(target, os.stat(target).st_mode & 0o555)

    def download(self, url, dest=None):
        """Downloads ``url`` into this folder (as ``dest``, else the URL's last part)."""
        name = dest or urlparse(url).path.rsplit("/", 1)[-1]
        with urllib.request.urlopen(url) as response, (self / name).open("wb") as out:
            shutil.copyfileobj(response, out)

    def clone_subtree(self, remote, commit, subtree=None, dest=None):
        """Fetches ``commit`` of the git repository ``remote`` and puts its tree (or only the
        folder ``subtree`` of it) at ``dest`` (this path by default), which must not exist."""
        dest = self if dest is None else (dest if Path(dest).is_absolute() else self / dest)
        dest = XPath(dest)
        scratch = XPath(tempfile.mkdtemp())
        try:
            _git(scratch, "init", "-q")
            _git(scratch, "remote", "add", "origin", str(remote))
            _git(scratch, "fetch", "-q", "--depth", "1", "origin", str(commit))
            if subtree is not None:
                _git(scratch, "sparse-checkout", "set", str(subtree))
            _git(scratch, "checkout", "-q", "FETCH_HEAD")
            source = scratch / subtree if subtree is not None else scratch
            if subtree is None:
                shutil.rmtree(scratch / ".git")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(source), str(dest))
        finally:
            if scratch.exists():
                shutil.rmtree(scratch)
        return dest


def _git(cwd, *args):
    """Runs git in ``cwd``; a failure says which command and why."""
    try:
        subprocess.run(["git", *args], cwd=cwd, check=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise RuntimeError("git is not installed: a benchfile clones a repository") from None
    except subprocess.CalledProcessError as error:
        raise RuntimeError(f"`git {' '.join(args)}` failed with status {error.returncode}") from None


def _matches(relative, pattern):
    """Whether the file at ``relative`` (POSIX, from the root) matches one manifest pattern.

    A folder that matches selects every file below it; a pattern ending in ``/`` matches
    folders only.
    """
    folders_only = pattern.endswith("/")
    body = pattern.strip("/")
    parts = relative.split("/")
    if "/" in body or pattern.startswith("/"):
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    else:
        candidates = parts
    if folders_only:
        candidates = candidates[:-1]
    return any(fnmatch.fnmatchcase(candidate, body) for candidate in candidates)


def _selected(relative, patterns):
    """Whether the manifest selects the file at ``relative``: the last matching pattern wins."""
    chosen = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if _matches(relative, pattern[1:] if negated else pattern):
            chosen = not negated
    return chosen
