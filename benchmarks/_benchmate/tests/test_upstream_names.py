"""Every name Python milabench's benchmarks import from benchmate can be imported from ours
(the committed list, made by tools/upstream_imports.py), and the scanner that makes the list."""

import importlib
import importlib.util
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "tools"))

import upstream_imports  # noqa: E402

# Names that import an optional package when they are first used: without it, the import must
# fail with an ImportError naming the package.
NEEDS = {("benchmate.progress", "tqdm"): "tqdm"}


def committed_imports():
    lines = (HERE / "upstream_imports.txt").read_text().splitlines()
    return [tuple(line.split()) for line in lines if line and not line.startswith("#")]


def import_name(module, name=None):
    """What ``from module import name`` (or ``import module``) gives."""
    loaded = importlib.import_module(module)
    if name is None:
        return loaded
    if hasattr(loaded, name):
        return getattr(loaded, name)
    return importlib.import_module(f"{module}.{name}")


def test_the_list_is_not_empty():
    assert len(committed_imports()) >= 20
    assert ("benchmate.monitor", "bench_monitor") in committed_imports()


@pytest.mark.parametrize("entry", committed_imports(), ids=" ".join)
def test_each_name_imports(entry):
    package = NEEDS.get(entry)
    if package is not None and importlib.util.find_spec(package) is None:
        with pytest.raises(ImportError, match=f"needs {package}"):
            import_name(*entry)
        return
    value = import_name(*entry)
    assert callable(value), f"{' '.join(entry)} is {value!r}"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_scanner_finds_every_form_of_import(tmp_path):
    write(
        tmp_path / "a" / "main.py",
        "from benchmate.monitor import (\n    bench_monitor,\n    setupvoir as sv,\n)\nimport os\n",
    )
    write(
        tmp_path / "a" / "voirfile.py",
        "def f():\n    from benchmate.observer import BenchObserver\n    import benchmate.toggles\n",
    )
    write(
        tmp_path / "b" / "deep" / "x.py",
        "from benchmate import metrics\nfrom .benchmate import nope\nfrom benchmatex import no\n",
    )
    write(tmp_path / "retired" / "old.py", "from benchmate.gone import something\n")
    write(tmp_path / "b" / "notes.txt", "from benchmate.text import ignored\n")
    assert upstream_imports.scan(tmp_path) == [
        "benchmate metrics",
        "benchmate.monitor bench_monitor",
        "benchmate.monitor setupvoir",
        "benchmate.observer BenchObserver",
        "benchmate.toggles",
    ]
    assert "benchmate.gone something" in upstream_imports.scan(tmp_path, excluded=())


def test_the_scanner_names_a_file_it_cannot_parse(tmp_path):
    write(tmp_path / "a" / "broken.py", "from benchmate.x import (\n")
    with pytest.raises(SystemExit, match="broken.py: cannot parse"):
        upstream_imports.scan(tmp_path)


def test_the_scanner_prints_the_list_with_its_header(tmp_path, capsys):
    write(tmp_path / "a" / "main.py", "from benchmate.ux import long_action\n")
    assert upstream_imports.main([str(tmp_path), "somewhere@1234"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "# What the benchmarks of somewhere@1234 import from benchmate",
        "# (made by tools/upstream_imports.py; one import per line: MODULE [NAME])",
        "benchmate.ux long_action",
    ]
    assert upstream_imports.main([str(tmp_path / "missing")]) == 2
