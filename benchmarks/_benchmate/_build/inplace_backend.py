"""A dependency-free PEP 517 / PEP 660 build backend for pure-Python packages.

It reads ``name`` and ``version`` from ``[project]`` in ``pyproject.toml`` and packs the folder
named like the project. ``build_editable`` produces a wheel holding only a ``.pth`` file that puts
this source folder on ``sys.path``, so edits are seen without reinstalling.
"""

import base64
import hashlib
import os
import re
import zipfile

_HERE = os.getcwd()


def _project():
    """``name``, ``version``, ``requires-python`` and ``scripts`` (a dict) of ``[project]``."""
    with open(os.path.join(_HERE, "pyproject.toml"), "rb") as f:
        text = f.read().decode("utf-8")
    try:
        import tomllib

        project = tomllib.loads(text)["project"]
    except ImportError:  # Python 3.10: the keys we need, by pattern.
        project = _string_keys(text, "[project]")
        project["scripts"] = _string_keys(text, "[project.scripts]")
    project.setdefault("scripts", {})
    return project


def _string_keys(text, header):
    """The ``key = "value"`` lines of the TOML table ``header`` (empty when it is absent)."""
    if header not in text:
        return {}
    section = text.split(header, 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^\s*([\w.-]+)\s*=\s*"([^"]*)"', section, re.M))


def _dist(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    return "\n".join(lines) + "\n"


def _entry_points(scripts):
    """``entry_points.txt``: the console scripts, which the installer turns into commands."""
    lines = ["[console_scripts]"] + [f"{name} = {target}" for name, target in sorted(scripts.items())]
    return "\n".join(lines) + "\n"


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, files):
    project = _project()
    dist = _dist(project["name"])
    version = project["version"]
    info = f"{dist}-{version}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = _metadata(project).encode()
    if project["scripts"]:
        files[f"{info}/entry_points.txt"] = _entry_points(project["scripts"]).encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: inplace_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [_record_line(path, data) for path, data in sorted(files.items())]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    filename = f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w") as whl:
        for path, data in files.items():
            whl.writestr(zipfile.ZipInfo(path, (1980, 1, 1, 0, 0, 0)), data)
    return filename


def _package_files():
    package = _dist(_project()["name"])
    files = {}
    for root, dirs, names in os.walk(os.path.join(_HERE, package)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith(".pyc"):
                continue
            full = os.path.join(root, n)
            with open(full, "rb") as f:
                files[os.path.relpath(full, _HERE).replace(os.sep, "/")] = f.read()
    return files


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    pth = (_HERE + "\n").encode()
    return _write_wheel(wheel_directory, {f"__editable__.{_dist(_project()['name'])}.pth": pth})


def build_sdist(sdist_directory, config_settings=None):
    import tarfile

    project = _project()
    base = f"{_dist(project['name'])}-{project['version']}"
    filename = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tar:
        for rel in ["pyproject.toml", "_build/inplace_backend.py", *_package_files()]:
            tar.add(os.path.join(_HERE, rel), arcname=f"{base}/{rel}")
    return filename
