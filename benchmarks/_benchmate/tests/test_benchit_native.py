"""Building discovery's C front: compiled once per interpreter and cached, and a clear reason
when it cannot be built (the worker then runs the Python wrapper and says so)."""

from __future__ import annotations

import gc
import inspect
import math
import os
import pathlib
import time
import weakref
from typing import Iterator

import pytest

from benchmate.benchit import native


@pytest.fixture(autouse=True)
def fresh(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pathlib.Path]:
    """An empty cache folder, and no answer remembered from another test."""
    folder = tmp_path / "native"
    monkeypatch.setenv("BENCHMATE_NATIVE_DIR", str(folder))
    monkeypatch.delenv("BENCHMATE_DISCOVERY", raising=False)
    native.fronts.cache_clear()
    yield folder
    native.fronts.cache_clear()


def with_compiler(monkeypatch: pytest.MonkeyPatch, compiler: str | None) -> None:
    """Make ``sysconfig`` name ``compiler`` as this Python's C compiler."""
    real = native.sysconfig.get_config_var
    monkeypatch.setattr(native.sysconfig, "get_config_var",
                        lambda name: compiler if name == "CC" else real(name))


def test_the_front_is_compiled_once_then_loaded_from_the_cache(
        fresh: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fronts, hot_path = native.fronts()
    assert hot_path == "c" and fronts.CallFront.__name__ == "CallFront"
    (built,) = fresh.glob("*/_callfront*")
    assert not list(fresh.glob("*/.building-*"))
    native.fronts.cache_clear()
    with_compiler(monkeypatch, "/nonexistent/cc")  # a second build would fail
    assert native.fronts()[1] == "c"
    assert built.exists()


def test_without_a_compiler_the_reason_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    with_compiler(monkeypatch, None)
    assert native.fronts() == (
        None, "python (the C hot path is unavailable: this Python has no C compiler or headers "
              "configured)")


def test_a_failing_compiler_is_named_and_leaves_nothing(
        fresh: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_compiler(monkeypatch, "/nonexistent/cc -pthread")
    fronts, hot_path = native.fronts()
    assert fronts is None and hot_path.startswith("python (") and "/nonexistent/cc" in hot_path
    assert not [name for _, _, names in os.walk(fresh) for name in names]
    native.fronts.cache_clear()
    with_compiler(monkeypatch, "false")
    assert native.fronts()[1] == "python (the C hot path is unavailable: false failed: 1)"


def test_the_python_wrapper_can_be_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHMATE_DISCOVERY", "python")
    assert native.fronts() == (None, "python (asked by BENCHMATE_DISCOVERY=python)")


# -- the front's own logic, with stand-ins for torch (these run without torch) ---------------

class StandInTensor:
    """What the front reads of a tensor: its ``shape`` and ``dtype``."""

    def __init__(self, *shape: int) -> None:
        self.shape = shape
        self.dtype = "float32"


class StandInSite:
    """A discovery site: the module's weak reference and the counters the front adds to."""

    def __init__(self, module: object) -> None:
        self.module = weakref.ref(module)
        self.counts = self
        self.executed = 0
        self.seconds = 0.0


class Front:
    """A CallFront installed as ``__call__`` of a stand-in module class, with a Python wrapper
    that records the calls handed to it, and the parts of discovery the front asks: ``_resolve``
    (answers ``resolution(module)``, no site by default), ``_blocked`` and the listener."""

    def __init__(self, max_depth: int = 0) -> None:
        fronts, hot_path = native.fronts()
        assert hot_path == "c", hot_path
        self.handed: list[tuple] = []
        self.resolved: list[tuple] = []
        self.blocked: list[tuple] = []
        self.told: list[tuple] = []
        self.stack: list = []
        self.sites: dict = {}
        self.describe_at = math.inf
        self.resolution = lambda module: (None, None)
        self.listener = self

        def wrapper(module: object, *args: object, **kwargs: object) -> object:
            self.handed.append((args, kwargs))
            return module._call_impl(*args, **kwargs)

        class Module:
            _compiled_call_impl = None

            def _call_impl(module, *args: object, **kwargs: object) -> object:  # noqa: N805
                return args[0] if args else None

        self.front = fronts.CallFront(wrapper, self.stack, self.sites, max_depth, StandInTensor,
                                      None, {"_is_compiling_flag": False}, time.perf_counter,
                                      self)
        Module.__call__ = self.front
        self.Module = Module

    @property
    def _describe_at(self) -> float:
        """When the front must ask for descriptions (never, here)."""
        return self.describe_at

    def _resolve(self, module: object, args: tuple, kwargs: dict, signature: tuple,
                 caller: object) -> tuple:
        """Discovery's resolution of a top-level call on no known site."""
        assert kwargs == {} and caller.f_code.co_filename == __file__
        self.resolved.append(args)
        return self.resolution(module)

    def _blocked(self, module: object, args: tuple, kwargs: dict) -> object:
        """Discovery's untracked call."""
        self.blocked.append(args)
        return module._call_impl(*args, **kwargs)

    def first_call_done(self, call: object) -> None:
        """The listener hears a first call returned."""
        self.told.append(("done", call))

    def first_call_failed(self, call: object) -> None:
        """The listener hears a first call raised."""
        self.told.append(("failed", call))

    def register(self, module: object, tensor: StandInTensor) -> StandInSite:
        """A known top-level site of ``module`` called on tensors like ``tensor``."""
        site = StandInSite(module)
        self.sites[(None, id(module), (tensor.shape, tensor.dtype))] = site
        return site


def test_the_front_counts_known_sites_and_hands_over_the_rest() -> None:
    harness = Front()
    model, other = harness.Module(), harness.Module()
    small, large = StandInTensor(1, 4), StandInTensor(3, 4)
    site, other_site = harness.register(model, small), harness.register(other, small)
    for _ in range(5):
        assert model(small) is small
        model(StandInTensor(1, 4))
        other(small)
    model(large)  # no site for that shape: discovery resolves it (here: no site)
    model(small, small)  # another signature
    model(value=small)  # keywords: the wrapper decides
    model("not a tensor")
    harness.front.flush()
    assert (site.executed, other_site.executed) == (10, 5)
    assert site.seconds > 0 and other_site.seconds > 0
    assert harness.resolved == harness.blocked == [(large,), (small, small)]
    assert harness.handed == [((), {"value": small}), (("not a tensor",), {})]
    harness.front.flush()  # nothing held twice
    assert (site.executed, other_site.executed) == (10, 5)


def test_the_front_hands_over_the_calls_of_a_dead_modules_site() -> None:
    """A site is filed under its module's id, which a new module may take once the old one is
    gone: its calls are not the dead module's, whether the front remembers the dead module's site
    as its last one or finds it in the sites."""
    harness = Front()
    tensor = StandInTensor(2)
    model = harness.Module()
    site = harness.register(model, tensor)
    model(tensor)  # counted, and now the front's last site
    del model
    gc.collect()
    # The allocator usually gives a new module the dead one's address.
    newcomers = [harness.Module() for _ in range(200)]
    for module in newcomers:
        module(tensor)
    # Filed under a live module's id, whatever the allocator did.
    harness.sites[(None, id(newcomers[0]), (tensor.shape, tensor.dtype))] = site
    newcomers[0](tensor)
    harness.front.flush()
    assert site.executed == 1
    assert len(harness.resolved) == 201


def test_a_call_in_progress_when_the_front_is_flushed_is_counted_on_its_site() -> None:
    """Discovery flushes the front as it pauses to build a model first called inside a tracked
    forward; that tracked call must still be counted when it returns."""
    harness = Front()
    tensor = StandInTensor(2)
    model = harness.Module()
    site = harness.register(model, tensor)
    model(tensor)
    model(tensor)
    harness.Module._call_impl = lambda module, value: harness.front.flush()
    model(tensor)
    assert site.executed == 3
    harness.front.flush()
    assert site.executed == 3


def test_calls_deeper_than_max_depth_go_straight_to_the_module() -> None:
    harness = Front(max_depth=0)
    model = harness.Module()
    harness.stack.append(None)  # inside a tracked call
    tensor = StandInTensor(2)
    assert model(tensor) is tensor
    assert harness.handed == []


# -- the init front, with stand-ins ------------------------------------------------------------

class InitHarness:
    """An InitFront installed as ``__init__`` of a stand-in module base class, treating this file
    as the script; ``made`` records the arguments the original ``__init__`` received."""

    def __init__(self, script: str = __file__) -> None:
        fronts, hot_path = native.fronts()
        assert hot_path == "c", hot_path
        self.locations: dict = {}
        self.made: list[tuple] = []
        made = self.made

        class Base:
            def __init__(module, *args: object, **kwargs: object) -> None:  # noqa: N805
                if kwargs.get("fail"):
                    raise ValueError("cannot make this module")
                made.append((args, kwargs))

        self.front = fronts.InitFront(Base.__init__, script, self.locations)
        Base.__init__ = self.front
        self.Base = Base

    def location(self, module: object) -> tuple | None:
        """Where the front filed ``module``, if it did (and its entry points at it)."""
        entry = self.locations.get(id(module))
        if entry is None:
            return None
        assert entry[0]() is module
        return entry[1]


def line_of(text: str) -> int:
    """The line of this file that ends with ``text`` (once)."""
    lines = pathlib.Path(__file__).read_text().splitlines()
    (number,) = [index for index, line in enumerate(lines, start=1) if line.endswith(text)]
    return number


def test_the_init_front_files_the_script_line_outside_the_modules_own_constructors() -> None:
    harness = InitHarness()

    class Layer(harness.Base):
        def __init__(self, size: int) -> None:
            super().__init__(size, scale=2)
            self.size = size

    class Net(harness.Base):
        def __init__(self) -> None:
            harness.Base.__init__(self)  # the older spelling reaches the front too
            self.layer = Layer(3)  # marker: layer made in Net

    class WideNet(Net):
        def __init__(self) -> None:
            super().__init__()

    net = WideNet()  # marker: net made
    plain = harness.Base()  # marker: plain made
    assert harness.location(net) == (__file__, line_of("# marker: net made"))
    assert harness.location(net.layer) == (__file__, line_of("# marker: layer made in Net"))
    assert harness.location(plain) == (__file__, line_of("# marker: plain made"))
    assert harness.made == [((), {}), ((3,), {"scale": 2}), ((), {})]
    assert harness.Base.__init__ is harness.front


def test_the_init_front_shows_the_original_to_introspection() -> None:
    harness = InitHarness()

    class NoInit(harness.Base):
        """Takes its constructor from the base."""

    original = harness.front.__wrapped__
    assert original.__name__ == harness.front.__name__ == "__init__"
    assert harness.front.__qualname__ == original.__qualname__
    signature = inspect.signature(original)
    unbound = signature.replace(parameters=list(signature.parameters.values())[1:])
    assert inspect.signature(harness.Base.__init__) == signature
    assert inspect.signature(NoInit) == inspect.signature(NoInit().__init__) == unbound
    assert str(unbound).startswith("(*args")


def test_the_init_front_looks_through_library_frames_and_files_nothing_without_the_script(
) -> None:
    harness = InitHarness()
    library: dict = {}
    exec(compile("def make(kind):\n    return kind()\n", "/library/factory.py", "exec"), library)
    module = library["make"](harness.Base)  # marker: made through a library
    assert harness.location(module) == (__file__, line_of("# marker: made through a library"))
    elsewhere = InitHarness(script="/nonexistent/script.py")
    assert elsewhere.location(elsewhere.Base()) is None and elsewhere.locations == {}


def test_a_location_goes_with_its_module_and_failures_file_nothing() -> None:
    harness = InitHarness()

    class Comparable(harness.Base):
        """Defines ``__eq__``, so its instances cannot be hashed."""

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Comparable)

    module = Comparable()
    assert harness.location(module) is not None
    del module
    gc.collect()
    assert harness.locations == {}
    with pytest.raises(ValueError, match="cannot make this module"):
        harness.Base(fail=True)
    assert harness.locations == {}


def test_the_front_tracks_calls_on_the_sites_discovery_resolves() -> None:
    """A first call the listener asked for is told how its forward ended; the site resolved is
    the front's last site, so the next call needs no resolution."""
    harness = Front()
    tensor = StandInTensor(2)
    model = harness.Module()
    site = StandInSite(model)
    harness.resolution = lambda module: (site, "the first call")
    assert model(tensor) is tensor
    harness.resolution = lambda module: pytest.fail("the last site needs no resolution")
    model(tensor)
    assert harness.told == [("done", "the first call")]
    harness.front.flush()
    assert site.executed == 2 and harness.resolved == [(tensor,)]
    assert harness.stack == []


def test_a_failing_first_call_is_told_and_raises() -> None:
    harness = Front()
    model = harness.Module()
    harness.resolution = lambda module: (StandInSite(module), "the first call")
    harness.Module._call_impl = lambda module, value: 1 / 0
    with pytest.raises(ZeroDivisionError):
        model(StandInTensor(2))
    assert harness.told == [("failed", "the first call")] and harness.stack == []


def test_a_front_flushed_while_resolving_counts_its_calls_on_their_sites() -> None:
    """Discovery uninstalls the front (and installs a new one) to build a model at its first
    call: the front that took the call must not hold counts no one would flush."""
    harness = Front()
    tensor = StandInTensor(2)
    model = harness.Module()
    site = harness.register(model, StandInTensor(5))
    other = StandInSite(model)

    def resolve_and_flush(module: object) -> tuple:
        harness.front.flush()
        return other, None

    model(StandInTensor(5))  # the last site, with one call held
    harness.resolution = resolve_and_flush
    model(tensor)
    assert (site.executed, other.executed) == (1, 1)
    model(StandInTensor(5))  # a registered site: counted there
    assert site.executed == 2


# -- the first call's helpers, with stand-ins ------------------------------------------------

def test_dropping_when_dead_removes_the_entry_with_its_module() -> None:
    fronts, _ = native.fronts()

    class Thing:
        pass

    thing, entries = Thing(), {}
    key = ("parent", id(thing))
    entries[key] = fronts.dropping_when_dead(entries, key, thing)
    assert entries[key]() is thing
    del thing
    gc.collect()
    assert entries == {}


class StandInParameter:
    """A parameter with ``elements`` elements."""

    def __init__(self, elements: int) -> None:
        self.elements = elements

    def numel(self) -> int:
        """How many elements."""
        return self.elements


class StandInLazyParameter:
    """A lazy parameter, not made yet: asking its size fails, as torch's does."""

    def numel(self) -> int:
        """Fails."""
        raise ValueError("not made yet")


class StandInModule:
    """What the search reads of a module: ``_parameters`` and ``_modules``."""

    def __init__(self, parameters: tuple = (), children: tuple = ()) -> None:
        self._parameters = dict(enumerate(parameters))
        self._modules = dict(enumerate(children))


def test_has_parameters_searches_the_whole_tree_for_a_parameter_with_elements() -> None:
    fronts, _ = native.fronts()

    def has(module: StandInModule) -> bool:
        return fronts.has_parameters(StandInLazyParameter, module)

    assert has(StandInModule()) is False
    assert has(StandInModule((None, StandInParameter(0), StandInLazyParameter()),
                             (None, StandInModule()))) is False
    deep = StandInModule((StandInParameter(3),))
    assert has(StandInModule((), (StandInModule(), StandInModule((), (None, deep))))) is True
