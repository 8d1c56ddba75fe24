"""Inputs that never crash: the parameter checks of the components, models and definitions.

For every scalar parameter of every component (``hdl/``), reference model (``sim/models/``)
and definition (``fattree/spec/``) that a user sets, and for the checks of
``fattree/params.py``: any value (wrong type, negative, zero, not a power of two, huge, NaN,
text, None, a list) either builds the object or raises ``TypeError``/``ValueError`` whose
message names the parameter; never any other exception. Each case replaces one parameter of a
small valid point, so a failure names the parameter that was not checked.

hypothesis is derandomized with a small ``max_examples`` (CI reproducible, a few seconds).
"""

from __future__ import annotations

import math
import signal
import warnings

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fattree.params import check_int_range, check_positive_int, check_power_of_two

#: As many examples as tests/conftest.py's hypothesis profile says (more with --run-slow).
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: Seconds a constructor may run on an accepted value before it counts as built.
PATIENCE = 2.0


class Built(BaseException):
    """The constructor ran past its checks (a BaseException: no ``except`` of ours takes it)."""


# Values a caller might pass by mistake. Sizes stop at 2**20: a component of 2**64 wires runs
# out of memory building its signals (MemoryError), which no check of ours is meant to stop;
# the command line's ranges keep users far below that (tests/test_fuzz_cli.py).
bad_values = st.one_of(
    st.integers(-(2**20), 2**20),
    st.sampled_from([0, -1, 1, 2, 3, 5, 6, 7, 12, 100, 2**16, 2**20, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1.0, 2.0, 0.5, math.nan, math.inf]),
    st.text(max_size=6),
    st.sampled_from(["8", "", "primary", "immediate", "auto", "fibonacci", "galois"]),
    st.none(),
    st.booleans(),
    st.lists(st.integers(-3, 9), max_size=3),
    st.tuples(st.integers(-3, 9), st.integers(-3, 9)),
    st.just(object()),
)


def _hdl(module: str, name: str):
    def make(**kwargs):
        import importlib

        return getattr(importlib.import_module(f"fattree.hdl.{module}"), name)(**kwargs)

    return make


def _model(module: str, name: str):
    def make(**kwargs):
        import importlib

        return getattr(importlib.import_module(f"fattree.sim.models.{module}"), name)(**kwargs)

    return make


def _spec(module: str, name: str):
    def make(**kwargs):
        import importlib

        return getattr(importlib.import_module(f"fattree.spec.{module}"), name)(**kwargs)

    return make


def _layout():
    from fattree.spec.capacities import TreeLayout

    return TreeLayout(4, (2, 2, 2))


def _online_layout():
    from fattree.spec.capacities import TreeLayout

    return TreeLayout.universal(4)


def _tree():
    from fattree.spec.topology import FatTree

    return FatTree(2, 2)


def _graph():
    from fattree.spec.decomposition import Graph

    return Graph(3, ((0, 1), (1, 2)), (0, 2))


_EP = {"endpoints": 4, "seed": 1, "retry": "immediate", "max_bytes": 2, "timeout": 32}
#: The bidelta network with endpoints also takes a fault: endpoint outputs cut.
_EP_NET = {**_EP, "dead_outputs": (1,)}
#: An endpoint of the 64-node fat-tree (its head depends on its own number).
_EP_NODE = {**_EP, "endpoints": 64, "route": "unit-tree", "node": 5}
_FT = {"seed": 1, "retry": "immediate", "max_bytes": 2}

#: (name, constructor, a small valid point, parameters fixed to an object rather than fuzzed)
TARGETS = [
    # components
    ("Selector", _hdl("selector", "Selector"), {"width": 4}),
    ("CircuitRouter", _hdl("circuit_router", "CircuitRouter"), {"width": 2, "seed": 1}),
    (
        "NetworkInterface",
        _hdl("network_interface", "NetworkInterface"),
        {"node": 1, "leaves": 4, "width": 1, "length": 1, "retry": "immediate", "seed": 1},
    ),
    (
        "CircuitFatTree",
        _hdl("circuit_tree", "CircuitFatTree"),
        {"leaves": 4, "width": 2, "length": 2, "seed": 1, "retry": "immediate"},
    ),
    (
        "CircuitFastTree",
        _hdl("circuit_fast.tree", "CircuitFastTree"),
        {"leaves": 4, "width": 2, "length": 2, "seed": 1, "window": 2},
    ),
    (
        "CircuitFastRouter",
        _hdl("circuit_fast.router", "CircuitFastRouter"),
        {"leaves": 4, "width": 2, "level": 1, "switch": 1, "seed": 1},
    ),
    (
        "CircuitFastInterface",
        _hdl("circuit_fast.interface", "CircuitFastInterface"),
        {"leaves": 4, "width": 2, "length": 2, "window": 2},
    ),
    (
        "HypercubeNode",
        _hdl("hypercube", "HypercubeNode"),
        {"dim": 2, "procs": 1, "buffers": 1, "data_bits": 8},
    ),
    (
        "HypercubeNetwork",
        _hdl("hypercube", "HypercubeNetwork"),
        {"dim": 2, "procs": 1, "buffers": 1, "data_bits": 8},
    ),
    (
        "LeisersonFatTree",
        _hdl("leiserson_tree", "LeisersonFatTree"),
        {"leaves": 4, "w": 4, "seed": 0},
    ),
    (
        "LeisersonStreamTree",
        _hdl("leiserson_stream", "LeisersonStreamTree"),
        {"leaves": 4, "w": 4, "seed": 0, "data_bits": 8},
    ),
    (
        "LeisersonOnline",
        _hdl("leiserson_online", "LeisersonOnline"),
        {"leaves": 4, "w": 4, "seed": 0, "data_bits": 8, "queue": 4},
    ),
    (
        "OnlineNode",
        lambda **kw: _hdl("leiserson_online", "OnlineNode")(layout=_online_layout(), **kw),
        {"level": 1},
    ),
    (
        "LFSR",
        _hdl("lfsr", "LFSR"),
        {"width": 16, "seed": 1, "kind": "fibonacci", "steps": 1},
    ),
    (
        "RegisteredReadMemory",
        _hdl("registered_memory", "RegisteredReadMemory"),
        {"width": 4, "depth": 8, "init": 0, "form": "portable"},
    ),
    (
        "RN1Router",
        _hdl("rn1.router", "RN1Router"),
        {"mode": "primary", "seed": 1, "priority": "fixed"},
    ),
    ("RN1Bidelta", _hdl("rn1.bidelta", "RN1Bidelta"), {"endpoints": 4, "seed": 1}),
    (
        "RN1Hybrid",
        _hdl("rn1.hybrid", "RN1Hybrid"),
        {"cluster": 12, "stages": 1, "seed": 1, "hierarchy": False},
    ),
    ("hybrid_top", _hdl("rn1.hybrid", "hybrid_top"), {"cluster": 12, "stages": 1, "seed": 1}),
    ("RN1Endpoint", _hdl("rn1.endpoint", "RN1Endpoint"), _EP_NODE),
    ("RN1BideltaStream", _hdl("rn1.bidelta_stream", "RN1BideltaStream"), _EP_NET),
    # Builds the one-stage wiring (fast); elaborating it is what is slow.
    (
        "RN1FatTree",
        _hdl("rn1.fat_tree", "RN1FatTree"),
        {"stages": 1, "seed": 1, "hierarchy": False},
    ),
    (
        "fat_tree_network_top",
        _hdl("rn1.fat_tree", "fat_tree_network_top"),
        {"stages": 1, "seed": 1},
    ),
    ("RN1FatTreeStream", _hdl("rn1.fat_tree", "RN1FatTreeStream"), _FT),
    (
        "LevelWiseScheduler",
        _hdl("scheduler", "LevelWiseScheduler"),
        {"levels": 2, "w": 2, "m": 4, "memory": "portable"},
    ),
    # reference models
    ("SelectorModel", _model("selector", "SelectorModel"), {"width": 4}),
    ("RouterModel", _model("circuit", "RouterModel"), {"seed": 1}),
    (
        "InterfaceModel",
        _model("circuit", "InterfaceModel"),
        {"node": 1, "leaves": 4, "width": 1, "length": 1, "retry": "immediate", "seed": 1},
    ),
    (
        "CircuitTreeModel",
        _model("circuit", "CircuitTreeModel"),
        {"leaves": 4, "width": 2, "length": 2, "seed": 1, "retry": "immediate"},
    ),
    (
        "CircuitFastTreeModel",
        _model("circuit_fast", "CircuitFastTreeModel"),
        {"leaves": 4, "width": 2, "length": 2, "seed": 1, "window": 2},
    ),
    (
        "HypercubeModel",
        _model("hypercube", "HypercubeModel"),
        {"dim": 2, "procs": 1, "buffers": 1, "data_bits": 8},
    ),
    (
        "LeisersonStreamModel",
        lambda **kw: _model("leiserson_stream", "LeisersonStreamModel")(layout=_layout(), **kw),
        {"data_bits": 8},
    ),
    (
        "LeisersonOnlineModel",
        lambda **kw: _model("leiserson_online", "LeisersonOnlineModel")(
            layout=_online_layout(), **kw
        ),
        {"data_bits": 8, "queue": 4},
    ),
    ("RN1Model", _model("rn1", "RN1Model"), {"mode": "primary", "seed": 1, "priority": "fixed"}),
    (
        "RN1BideltaModel",
        _model("rn1", "RN1BideltaModel"),
        {"endpoints": 4, "seed": 1, "random_wiring": True, "dead": (), "dead_links": ()},
    ),
    (
        "RN1PortsModel",
        _model("rn1", "RN1PortsModel"),
        {"mode": "primary", "seed": 1, "disabled_inputs": (), "disabled_outputs": ()},
    ),
    (
        "RN1FatTreeModel",
        _model("rn1", "RN1FatTreeModel"),
        {"stages": 1, "seed": 1, "lfsr_seed": 1, "dispersed": True, "dead": (), "dead_links": ()},
    ),
    ("RN1EndpointModel", _model("rn1_endpoint", "RN1EndpointModel"), _EP_NODE),
    ("RN1BideltaStreamModel", _model("rn1_endpoint", "RN1BideltaStreamModel"), _EP_NET),
    ("RN1FatTreeStreamModel", _model("rn1_endpoint", "RN1FatTreeStreamModel"), _FT),
    ("RN1UnitTreeModel", _model("rn1", "RN1UnitTreeModel"), {"width": 2, "seed": 1}),
    (
        "RN1FatTreeModel",
        _model("rn1", "RN1FatTreeModel"),
        {"stages": 1, "seed": None, "lfsr_seed": 1, "dispersed": True},
    ),
    (
        "RN1HybridModel",
        _model("rn1", "RN1HybridModel"),
        {"cluster": 12, "stages": 1, "seed": 1, "lfsr_seed": 1, "dispersed": True},
    ),
    (
        "SchedulerModel",
        lambda **kw: _model("scheduler", "SchedulerModel")(tree=_tree(), **kw),
        {"algorithm": "level-wise", "failure_mode": "keep", "seed": 0},
    ),
    # Strumpen-Krishnamurthy's analysis (exact computations of sim/models/balls_bins.py)
    ("pr_kij", _model("balls_bins", "pr_kij"), {"k": 1, "i": 1, "j": 0}),
    ("pr_kij_network", _model("balls_bins", "pr_kij_network"), {"n": 4, "k": 1, "i": 1, "j": 0}),
    ("occupancy", _model("balls_bins", "occupancy"), {"m": 4, "b": 3}),
    ("phase_success", _model("balls_bins", "phase_success"), {"m": 3, "b": 4}),
    ("rounds_tail", _model("balls_bins", "rounds_tail"), {"m": 4, "b": 3, "max_rounds": 10}),
    ("proof_rounds", _model("balls_bins", "proof_rounds"), {"n": 16, "m": 4, "eps": 0.1}),
    # definitions
    ("FatTree", _spec("topology", "FatTree"), {"levels": 2, "w": 2}),
    ("GeneralizedFatTree", _spec("scheduler", "GeneralizedFatTree"), {"levels": 2, "m": 4, "w": 2}),
    ("TreeLayout", _spec("capacities", "TreeLayout"), {"leaves": 4, "capacities": (2, 2, 2)}),
    ("leaf_cluster", _spec("rn1_hybrid", "leaf_cluster"), {"nodes": 12, "seed": 1}),
    (
        "hybrid_network",
        _spec("rn1_hybrid", "hybrid_network"),
        {"cluster": 12, "stages": 1, "seed": 1, "lfsr_seed": 1, "dispersed": True},
    ),
    ("hybrid_fat_tree", _spec("rn1_hybrid", "hybrid_fat_tree"), {"cluster": 12, "stages": 2}),
    (
        "LFSRModel",
        _spec("lfsr", "LFSRModel"),
        {"width": 16, "seed": 1, "kind": "fibonacci", "steps": 1},
    ),
    # decomposition trees (Leiserson section V)
    (
        "Graph",
        _spec("decomposition", "Graph"),
        {"vertices": 3, "edges": ((0, 1), (1, 2)), "processors": (0, 2), "coords": None},
    ),
    (
        "DecompositionTree",
        lambda **kw: _spec("decomposition", "DecompositionTree")(graph=_graph(), **kw),
        {"depth": 2, "leaf_of": (0, 1, 3)},
    ),
    ("mesh", _spec("decomposition", "mesh"), {"sides": (2, 3)}),
    ("binary_tree_network", _spec("decomposition", "binary_tree_network"), {"leaves": 4}),
    ("hypercube_graph", _spec("decomposition", "hypercube_graph"), {"dim": 3}),
    (
        "random_graph",
        _spec("decomposition", "random_graph"),
        {"n": 8, "degree": 2.0, "seed": 1, "side": None},
    ),
    (
        "random_mesh_subgraph",
        _spec("decomposition", "random_mesh_subgraph"),
        {"side": 3, "keep": 0.5, "procs": 0.5, "seed": 1},
    ),
]

CASES = [(name, param) for name, _make, point in TARGETS for param in point]
MAKERS = {name: (make, point) for name, make, point in TARGETS}


def build(name: str, param: str, value):
    """Build ``name`` at its valid point with ``param = value``: the exception it raised, or
    None if it was built (or still running after :data:`PATIENCE` seconds)."""
    make, point = MAKERS[name]

    def interrupted(_signum, frame):
        # Not from inside hypothesis' own callbacks (its gc hook would swallow it).
        if frame is not None and "hypothesis" in frame.f_code.co_filename:
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            return
        raise Built

    old = signal.signal(signal.SIGALRM, interrupted)
    signal.setitimer(signal.ITIMER_REAL, PATIENCE)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Amaranth's unused-elaboratable warnings
            make(**{**point, param: value})
    except Built:
        return None
    except Exception as exc:
        return exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return None


def test_every_valid_point_builds():
    for name, _make, point in TARGETS:
        assert build(name, next(iter(point)), point[next(iter(point))]) is None, name


@FUZZ
@given(case=st.sampled_from(CASES), value=bad_values)
@example(case=("Selector", "width"), value=0)
@example(case=("CircuitFatTree", "leaves"), value=3)
@example(case=("CircuitFatTree", "retry"), value="never")
@example(case=("HypercubeModel", "dim"), value=-1)
@example(case=("LFSRModel", "width"), value=1.5)
@example(case=("FatTree", "levels"), value=True)
@example(case=("TreeLayout", "capacities"), value=(1, 2))
@example(case=("RegisteredReadMemory", "width"), value=None)  # found: an unnamed TypeError
@example(case=("RegisteredReadMemory", "depth"), value=2.0)  # found: an unnamed TypeError
@example(case=("RegisteredReadMemory", "init"), value="8")  # found: an unnamed TypeError
@example(case=("LeisersonStreamModel", "data_bits"), value="8")  # found: an unnamed TypeError
@example(case=("RN1UnitTreeModel", "width"), value=2.0)  # found: range(2.0) failed
@example(case=("RN1UnitTreeModel", "seed"), value=0.5)  # found: unchecked, failed deep inside
@example(case=("RouterModel", "seed"), value=[1, 2])  # found: "unhashable type: 'list'"
@example(case=("InterfaceModel", "length"), value="")  # found in CI: unchecked
@example(case=("RN1Endpoint", "route"), value=["unit-tree"])  # a list is not a rule
@example(case=("RN1EndpointModel", "node"), value=64)
def test_bad_parameters_raise_a_named_type_or_value_error(case, value):
    name, param = case
    error = build(name, param, value)
    if error is None:
        return  # a value it takes
    assert isinstance(error, TypeError | ValueError), (
        f"{name}({param}={value!r}) raised {type(error).__name__}: {error}"
    )
    assert param in str(error), f"{name}({param}={value!r}): {error!r} does not name {param}"


# -- fattree/params.py ---------------------------------------------------------------------------

anything = st.one_of(bad_values, st.integers(), st.sampled_from([2**64, -(2**64), 2**1000]))


@FUZZ
@given(value=anything, lo=st.integers(-5, 5), span=st.none() | st.integers(0, 10))
@example(value=True, lo=0, span=None)
@example(value=2**64, lo=1, span=3)
def test_params_checks(value, lo, span):
    hi = None if span is None else lo + span
    is_int = isinstance(value, int) and not isinstance(value, bool)
    for check, ok in (
        (lambda: check_positive_int("size", value), is_int and value >= 1),
        (
            lambda: check_int_range("size", value, lo, hi),
            is_int and lo <= value and (hi is None or value <= hi),
        ),
        (
            lambda: check_power_of_two("size", value, 2),
            is_int and value >= 2 and value & (value - 1) == 0,
        ),
    ):
        if ok:
            assert check() == value
            continue
        with pytest.raises((TypeError, ValueError)) as raised:
            check()
        # Named, with the bad value, on one line.
        assert str(raised.value).startswith("size must be ")
        assert "\n" not in str(raised.value)
        if not is_int:
            assert raised.type is TypeError


#: Components and models of the design record that are not fuzzed here, and why.
NOT_FUZZED = {
    "RN1UnitTree": "elaborates 64 subtrees (~s per build); its model is fuzzed",
    "LeisersonTreeModel": "takes a TreeLayout (fuzzed), no parameter of its own",
}
#: Factories without a return annotation, and the class they build.
BUILDS = {"leiserson_stream_tree": "LeisersonStreamTree"}


def _fuzzed_as(path: str) -> set[str]:
    """The names under which the object the record names as ``path`` may be fuzzed: its own,
    and for a factory function the class it builds (its return annotation)."""
    import inspect
    import typing

    from fattree.registry import resolve

    target = resolve(path)
    names = {target.__name__}
    if inspect.isfunction(target):
        built = typing.get_type_hints(target).get("return")
        names.add(built.__name__ if inspect.isclass(built) else BUILDS.get(target.__name__, ""))
    return names - {""}


def test_targets_cover_the_designs():
    # Every design's component and model, as the design record names them, is fuzzed here.
    from fattree.designs import DESIGNS

    fuzzed = set(MAKERS) | set(NOT_FUZZED)
    for design in DESIGNS.values():
        for piece in (design.component, design.model):
            if piece is not None:
                assert _fuzzed_as(piece) & fuzzed, f"{design.name}: {piece} not fuzzed"


# Accepted parameters and stubbed-out commands build components nobody elaborates
# (see tests/conftest.py).
pytestmark = pytest.mark.usefixtures("built_but_unused")
