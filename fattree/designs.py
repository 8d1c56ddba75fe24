"""The designs the command line knows, and their parameters, named the same way everywhere.

``fattree verilog selector --param width=8``, ``fattree sim selector --param width=8`` and
``fattree synth selector --param width=8`` all read this table. Each entry (:class:`Design`)
is the one record of a design: the parameters it takes with their defaults and ranges, and
every piece of it (definitions, component, model, check, bench, AXI top, soak, board
self-test, proofs, mutant point, drawing, timing diagrams, docs page) named by
``"module:attribute"``; ``fattree designs`` shows them. Heavy imports (Amaranth) happen only
when a design is built.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .params import Param
from .registry import Registry, resolve
from .spec.capacities import LEISERSON_TREE
from .spec.circuit import CIRCUIT_ROUTER, CIRCUIT_TREE
from .spec.circuit_fast import CIRCUIT_TREE_FAST
from .spec.hypercube import HYPERCUBE
from .spec.leiserson_frames import LEISERSON_STREAM, SELECTOR
from .spec.leiserson_online import LEISERSON_ONLINE
from .spec.rn1 import RN1
from .spec.rn1_bidelta import RN1_BIDELTA
from .spec.rn1_endpoint import RN1_BIDELTA_STREAM, RN1_FAT_TREE
from .spec.rn1_hybrid import RN1_HYBRID
from .spec.rn1_tree import RN1_FAT_TREE_NETWORK, RN1_UNIT_TREE
from .spec.scheduler import SCHEDULER

__all__ = [
    "Param",
    "AxisTop",
    "Design",
    "DESIGNS",
    "PIECES",
    "get_design",
    "parse_params",
    "parse_bench_params",
    "build_dir",
    "PORTS",
    "SRC",
    "top_name",
    "elaborate_verilog",
    "verilog_command",
    "verilog_header",
]

#: Port styles of a design's Verilog top: ``native`` (the component's own streams) or
#: ``axis`` (AXI4-Stream names, docs/axis.md), for designs with an :class:`AxisTop`.
PORTS = ("native", "axis")

#: What the Verilog's ``src`` attributes say: ``relative`` (each net's and cell's Python file
#: and line, the file relative to its package: ``fattree/hdl/circuit_router.py:221``) or
#: ``none`` (no ``src`` attributes; ``--no-src``).
SRC = ("relative", "none")


@dataclass(frozen=True)
class AxisTop:
    """A design's AXI4-Stream top (``--ports axis``): its wrapper and the bench that checks it."""

    #: ``"module:Class"`` of the wrapper, built as ``Class(**params)`` with the design's params.
    component: str
    #: cocotb bench module of the wrapper's Verilog.
    bench: str


@dataclass(frozen=True)
class Design:
    """The one record of a design: its parameters and every piece of it, each named by
    ``"module:attribute"`` (or a module, or a path for the docs page).

    The other tables follow from it: the soaks (``fattree.sim.soak.SOAKS``), the mutant
    points (``fattree.mutants.POINTS``) and the drawings (``fattree.draw.DRAWABLE``) are
    built from it; the tables that hold data of their own (``fattree.boards.SELFTESTS``:
    board points; ``fattree.proofs.PROOFS``: properties and depths; ``fattree.waves.DIAGRAMS``)
    keep it, and tests/test_design_record.py checks that their entries and the record name
    the same pieces, both ways, and that every name here resolves.

    Mandatory for every design: ``definitions``, ``component`` and ``docs``; ``model``,
    ``check`` and ``bench`` too, unless the test's list of exceptions says why not (a block
    checked within a bigger design). The rest is None (or empty) where the design has none yet.
    """

    name: str
    summary: str
    #: ``"module:Class"`` of the Amaranth component, built as ``Class(**params)``.
    component: str
    #: Parameters of the component, with defaults and ranges (also what the model takes).
    params: tuple[Param, ...] = ()
    #: cocotb bench module (``fattree.sim.benches.X``), or None if the design has none yet.
    bench: str | None = None
    #: Extra knobs of the bench only (not of the hardware), e.g. message counts.
    bench_params: tuple[Param, ...] = field(default=())
    #: The AXI4-Stream top, or None if the design has none yet.
    axis: AxisTop | None = None
    #: Definitions modules (``fattree.spec.X``) the hardware and the model are both built
    #: from, the design's own first.
    definitions: tuple[str, ...] = ()
    #: The documentation page, relative to the repository (``docs/X.md``).
    docs: str = ""
    #: ``"module:attribute"`` of the reference model (``fattree.sim.models.X``).
    model: str | None = None
    #: ``"module:attribute"`` of the model-vs-RTL comparison (``fattree.sim.checks.X``).
    check: str | None = None
    #: ``"module:Class"`` of the Verilator soak (``fattree.sim.soak.X``; ``fattree soak``).
    soak: str | None = None
    #: ``"module:function"`` of the board self-test core; its board points are in
    #: ``fattree.boards.SELFTESTS`` (``fattree build``).
    selftest: str | None = None
    #: ``"module:function"`` of each property harness of the design or of a block of it; the
    #: properties and depths are in ``fattree.proofs.PROOFS`` (``fattree prove``).
    proofs: tuple[str, ...] = ()
    #: The small parameter point of the mutant run (``fattree mutants``; the defaults where
    #: empty); None: the run takes the defaults, no point chosen.
    mutant_point: dict[str, int | str] | None = field(default=None, compare=False)
    #: ``"module:function"`` drawing the network, ``function(params) -> Drawing``
    #: (``fattree draw``); None for a single block.
    drawing: str | None = None
    #: ``"module:function"`` of each timing-diagram scenario (``fattree.waves.DIAGRAMS``,
    #: ``fattree wave``).
    diagrams: tuple[str, ...] = ()

    def has(self, piece: str) -> bool:
        """Whether the design has ``piece`` (a field named in :data:`PIECES`)."""
        return getattr(self, piece) not in (None, (), "")

    def named(self) -> list[tuple[str, str, str]]:
        """Every piece the record names, as ``(piece, kind, name)``; ``kind`` is ``"attr"``
        (``"module:attribute"``), ``"module"`` or ``"path"`` (relative to the repository)."""
        pieces = [("definitions", "module", m) for m in self.definitions]
        pieces.append(("component", "attr", self.component))
        pieces += [
            (piece, kind, value)
            for piece, kind, value in (
                ("model", "attr", self.model),
                ("check", "attr", self.check),
                ("bench", "module", self.bench),
                ("axis", "attr", self.axis and self.axis.component),
                ("axis bench", "module", self.axis and self.axis.bench),
                ("soak", "attr", self.soak),
                ("selftest", "attr", self.selftest),
                ("drawing", "attr", self.drawing),
            )
            if value
        ]
        pieces += [("proofs", "attr", p) for p in self.proofs]
        pieces += [("diagrams", "attr", d) for d in self.diagrams]
        if self.docs:
            pieces.append(("docs", "path", self.docs))
        return pieces

    def defaults(self) -> dict[str, int | str]:
        return {p.name: p.default for p in self.params}

    def build(self, params: dict[str, int | str], ports: str = "native"):
        return resolve(self.top(ports).component if ports == "axis" else self.component)(**params)

    def top(self, ports: str) -> AxisTop | None:
        """The :class:`AxisTop` for ``ports="axis"`` (None for ``"native"``); ``ValueError``
        in one line if the design has no such top."""
        if ports not in PORTS:
            raise ValueError(f"ports must be one of {', '.join(PORTS)}, not {ports!r}")
        if ports == "native":
            return None
        if self.axis is None:
            known = ", ".join(name for name, d in DESIGNS.items() if d.axis) or "none"
            raise ValueError(
                f"design {self.name} has no AXI-Stream top yet (--ports axis); "
                f"designs with one: {known}"
            )
        return self.axis


#: The pieces of a design, in the order ``fattree designs`` shows them: (field of
#: :class:`Design`, column title, what it is).
PIECES = (
    ("definitions", "spec", "definitions (fattree/spec/)"),
    ("component", "hdl", "Amaranth component (hdl/; fattree verilog, synth)"),
    ("model", "model", "reference model (sim/models/)"),
    ("check", "check", "model-vs-RTL comparison (sim/checks/)"),
    ("bench", "bench", "cocotb bench (sim/benches/; fattree sim)"),
    ("axis", "axis", "AXI4-Stream top and its bench (--ports axis)"),
    ("soak", "soak", "Verilator soak (sim/soak/; fattree soak)"),
    ("selftest", "board", "board self-test core (boards/; fattree build)"),
    ("proofs", "proof", "property harnesses (fattree/proofs/; fattree prove)"),
    ("mutant_point", "mutants", "small point of the mutant run (fattree mutants)"),
    ("drawing", "draw", "picture of the network (fattree draw)"),
    ("diagrams", "wave", "timing-diagram scenarios (fattree wave)"),
    ("docs", "docs", "documentation page (docs/)"),
)


def backpressure(default: int) -> Param:
    """The bench knob of every design with receive streams: how often receivers stall."""
    return Param(
        "backpressure",
        default,
        "percent of cycles each receiver is not ready, at random (0 = always ready)",
        lo=0,
        hi=99,
    )


#: Every design by name, a read-only mapping of :class:`Design` records whose failed
#: lookups name the known designs (``fattree designs`` lists them).
DESIGNS: Registry[Design] = Registry(
    "design",
    [
        Design(
            name="selector",
            summary="Leiserson's selector: per-wire branch M bits, address bit stripped",
            component="fattree.hdl.selector:Selector",
            params=SELECTOR.params,
            bench="fattree.sim.benches.selector",
            definitions=("fattree.spec.leiserson_frames",),
            model="fattree.sim.models.selector:SelectorModel",
            check="fattree.sim.checks.selector:SelectorCheck",
            selftest="fattree.boards.selector_selftest:selftest",
            mutant_point={"width": 4},
            docs="docs/selector.md",
        ),
        Design(
            name="circuit-tree-paper",
            summary="Strumpen-Krishnamurthy circuit-switched fat tree of four-port routers, with"
            " the paper's protocol and timing (one message in flight per node)",
            component="fattree.hdl.circuit_tree:CircuitFatTree",
            params=CIRCUIT_TREE.params,
            bench="fattree.sim.benches.circuit_tree",
            axis=AxisTop(
                "fattree.hdl.axis:CircuitTreeAxis", "fattree.sim.benches.circuit_tree_axis"
            ),
            bench_params=(backpressure(30),),
            definitions=("fattree.spec.circuit", "fattree.spec.faults"),
            model="fattree.sim.models.circuit:CircuitTreeModel",
            check="fattree.sim.checks.circuit_tree:CircuitTreeCheck",
            soak="fattree.sim.soak.circuit_tree:CircuitTreeSoak",
            selftest="fattree.boards.circuit_selftest:circuit_tree_selftest",
            proofs=(
                "fattree.proofs.circuit_tree:harness",
                "fattree.proofs.network_interface:harness",
            ),
            mutant_point={"leaves": 4, "width": 2, "length": 2},
            drawing="fattree.draw:circuit_tree_picture",
            diagrams=("fattree.wave_scenarios:circuit_tree_reject",),
            docs="docs/circuit_tree.md",
        ),
        Design(
            name="circuit-tree",
            summary="circuit-switched fat tree that carries traffic: the paper's tree with one"
            " cycle per hop, circuits held while a message passes, heads acknowledged over a"
            " fixed-delay mirror and resent from a window of messages in flight",
            component="fattree.hdl.circuit_fast.tree:CircuitFastTree",
            params=CIRCUIT_TREE_FAST.params,
            bench="fattree.sim.benches.circuit_tree",
            axis=AxisTop(
                "fattree.hdl.axis:CircuitTreeFastAxis", "fattree.sim.benches.circuit_tree_axis"
            ),
            bench_params=(backpressure(30),),
            definitions=(
                "fattree.spec.circuit_fast",
                "fattree.spec.topology",
                "fattree.spec.faults",
            ),
            model="fattree.sim.models.circuit_fast:CircuitFastTreeModel",
            check="fattree.sim.checks.circuit_tree:CircuitTreeCheck",
            selftest="fattree.boards.circuit_fast_selftest:circuit_tree_fast_selftest",
            soak="fattree.sim.soak.circuit_tree_fast:CircuitTreeFastSoak",
            proofs=(
                "fattree.proofs.circuit_fast_tree:harness",
                "fattree.proofs.circuit_fast_router:harness",
            ),
            mutant_point={"leaves": 4, "width": 2, "length": 2, "window": 8},
            drawing="fattree.draw:circuit_tree_fast_picture",
            diagrams=("fattree.wave_scenarios:circuit_tree_drop",),
            docs="docs/circuit_tree_fast.md",
        ),
        Design(
            name="circuit-router",
            summary="one four-port router of the circuit tree (its cost per router)",
            component="fattree.hdl.circuit_router:CircuitRouter",
            params=CIRCUIT_ROUTER.params,
            definitions=("fattree.spec.circuit",),
            model="fattree.sim.models.circuit:RouterModel",
            proofs=("fattree.proofs.circuit_router:harness",),
            docs="docs/circuit_tree.md",
        ),
        Design(
            name="scheduler",
            summary="Ding's pipelined level-wise P_h scheduler for FT(l, w), one request/clock",
            component="fattree.hdl.scheduler:LevelWiseScheduler",
            params=SCHEDULER.params,
            bench="fattree.sim.benches.scheduler",
            axis=AxisTop("fattree.hdl.axis:scheduler_axis", "fattree.sim.benches.scheduler_axis"),
            definitions=("fattree.spec.scheduler", "fattree.spec.topology"),
            model="fattree.sim.models.scheduler:SchedulerModel",
            check="fattree.sim.checks.scheduler:ResultCheck",
            soak="fattree.sim.soak.scheduler:SchedulerSoak",
            selftest="fattree.boards.scheduler_selftest:scheduler_selftest",
            proofs=("fattree.proofs.scheduler:harness",),
            mutant_point={"levels": 2, "w": 2, "memory": "portable"},
            drawing="fattree.draw:scheduler_picture",
            docs="docs/scheduler.md",
        ),
        Design(
            name="leiserson-tree",
            summary="Leiserson universal fat-tree: selectors, Pippenger concentrator switches",
            component="fattree.hdl.leiserson_tree:leiserson_tree",
            params=LEISERSON_TREE.params,
            bench="fattree.sim.benches.leiserson_tree",
            definitions=(
                "fattree.spec.capacities",
                "fattree.spec.concentrator_graph",
                "fattree.spec.leiserson_frames",
            ),
            model="fattree.sim.models.leiserson_tree:LeisersonTreeModel",
            check="fattree.sim.checks.leiserson_tree:LeisersonTreeCheck",
            soak="fattree.sim.soak.leiserson_tree:LeisersonTreeSoak",
            selftest="fattree.boards.leiserson_selftest:leiserson_selftest",
            proofs=(
                "fattree.proofs.concentrator:harness",
                "fattree.proofs.concentrator:cascade_harness",
                "fattree.proofs.leiserson_node:harness",
            ),
            mutant_point={"leaves": 4},
            drawing="fattree.draw:leiserson_tree_picture",
            docs="docs/leiserson.md",
        ),
        Design(
            name="leiserson-stream",
            summary="the Leiserson fat-tree behind stream ports: messages in, delivery cycles, out",
            component="fattree.hdl.leiserson_stream:leiserson_stream_tree",
            params=LEISERSON_STREAM.params,
            bench="fattree.sim.benches.leiserson_stream",
            axis=AxisTop(
                "fattree.hdl.axis:leiserson_stream_axis",
                "fattree.sim.benches.leiserson_stream_axis",
            ),
            bench_params=(backpressure(30),),
            definitions=("fattree.spec.leiserson_frames", "fattree.spec.capacities"),
            model="fattree.sim.models.leiserson_stream:LeisersonStreamModel",
            check="fattree.sim.checks.leiserson_stream:LeisersonStreamCheck",
            diagrams=("fattree.wave_scenarios:leiserson_stream_cycle",),
            docs="docs/leiserson.md",
        ),
        Design(
            name="leiserson-online",
            summary="the Leiserson fat-tree on-line: switches set in hardware, acks, resends",
            component="fattree.hdl.leiserson_online:leiserson_online",
            params=LEISERSON_ONLINE.params,
            bench="fattree.sim.benches.leiserson_online",
            bench_params=(backpressure(30),),
            definitions=("fattree.spec.leiserson_online", "fattree.spec.capacities"),
            model="fattree.sim.models.leiserson_online:LeisersonOnlineModel",
            check="fattree.sim.checks.leiserson_online:LeisersonOnlineCheck",
            selftest="fattree.boards.leiserson_online_selftest:online_selftest",
            docs="docs/leiserson.md",
        ),
        Design(
            name="rn1",
            summary="DeHon's RN1 router: 8x8 byte channels, radix 4 dilation 2 (or 2 x 4x4), turns",
            component="fattree.hdl.rn1.router:RN1Router",
            params=RN1.params,
            bench="fattree.sim.benches.rn1",
            definitions=("fattree.spec.rn1",),
            model="fattree.sim.models.rn1:RN1Model",
            check="fattree.sim.checks.rn1:RN1Check",
            proofs=("fattree.proofs.rn1:harness",),
            mutant_point={},
            docs="docs/dehon.md",
        ),
        Design(
            name="rn1-bidelta",
            summary="Transit bidelta network of RN1 routers: log4 N stages, random wiring",
            component="fattree.hdl.rn1.bidelta:RN1Bidelta",
            params=RN1_BIDELTA.params,
            bench="fattree.sim.benches.rn1_bidelta",
            definitions=("fattree.spec.rn1_bidelta", "fattree.spec.rn1"),
            model="fattree.sim.models.rn1:RN1BideltaModel",
            check="fattree.sim.checks.rn1:RN1Check",
            soak="fattree.sim.soak.rn1_bidelta:RN1BideltaSoak",
            docs="docs/dehon.md",
        ),
        Design(
            name="rn1-bidelta-stream",
            summary="rn1-bidelta with an endpoint per node: message streams in and out, retries",
            component="fattree.hdl.rn1.bidelta_stream:RN1BideltaStream",
            params=RN1_BIDELTA_STREAM.params,
            bench="fattree.sim.benches.rn1_stream",
            bench_params=(backpressure(20),),
            axis=AxisTop(
                "fattree.hdl.rn1.axis:rn1_bidelta_stream_axis",
                "fattree.sim.benches.rn1_stream_axis",
            ),
            definitions=("fattree.spec.rn1_endpoint", "fattree.spec.rn1_bidelta"),
            model="fattree.sim.models.rn1_endpoint:RN1BideltaStreamModel",
            check="fattree.sim.checks.rn1_endpoint:StreamCheck",
            soak="fattree.sim.soak.rn1_stream:RN1BideltaStreamSoak",
            selftest="fattree.boards.rn1_selftest:rn1_selftest",
            mutant_point={"endpoints": 4, "max_bytes": 2, "retry": "backoff", "timeout": 5},
            docs="docs/dehon.md",
        ),
        Design(
            name="rn1-unit-tree",
            summary="DeHon unit tree of RN1: 64 subtrees, 3 down layers + 1 up, crossovers",
            component="fattree.hdl.rn1.unit_tree:RN1UnitTree",
            params=RN1_UNIT_TREE.params,
            bench="fattree.sim.benches.rn1_unit_tree",
            definitions=("fattree.spec.rn1_tree", "fattree.spec.rn1"),
            model="fattree.sim.models.rn1:RN1UnitTreeModel",
            check="fattree.sim.checks.rn1:RN1Check",
            docs="docs/dehon.md",
        ),
        Design(
            name="rn1-fat-tree",
            summary="DeHon's 64-node fat-tree (2-wide unit tree, 52 RN1) with an endpoint per node",
            component="fattree.hdl.rn1.fat_tree:fat_tree_stream_top",
            params=RN1_FAT_TREE.params,
            bench="fattree.sim.benches.rn1_stream",
            bench_params=(backpressure(20),),
            axis=AxisTop(
                "fattree.hdl.rn1.axis:rn1_fat_tree_axis",
                "fattree.sim.benches.rn1_stream_axis",
            ),
            definitions=("fattree.spec.rn1_tree", "fattree.spec.rn1_endpoint"),
            model="fattree.sim.models.rn1_endpoint:RN1FatTreeStreamModel",
            check="fattree.sim.checks.rn1_endpoint:StreamCheck",
            selftest="fattree.boards.rn1_selftest:rn1_fat_tree_selftest",
            docs="docs/dehon.md",
        ),
        Design(
            name="rn1-fat-tree-network",
            summary="DeHon's fat-tree of 1-2 unit-tree stages (64 / 4096 nodes), no endpoints",
            component="fattree.hdl.rn1.fat_tree:fat_tree_network_top",
            params=RN1_FAT_TREE_NETWORK.params,
            bench="fattree.sim.benches.rn1_fat_tree_network",
            definitions=("fattree.spec.rn1_tree", "fattree.spec.rn1"),
            model="fattree.sim.models.rn1:RN1FatTreeModel",
            check="fattree.sim.checks.rn1:network_phase",
            docs="docs/dehon.md",
        ),
        Design(
            name="rn1-hybrid",
            summary="DeHon's hybrid fat-tree: bidelta leaf clusters under 8-wide unit trees",
            component="fattree.hdl.rn1.hybrid:hybrid_top",
            params=RN1_HYBRID.params,
            bench="fattree.sim.benches.rn1_fat_tree_network",
            definitions=(
                "fattree.spec.rn1_hybrid",
                "fattree.spec.rn1_tree",
                "fattree.spec.rn1_bidelta",
            ),
            model="fattree.sim.models.rn1:RN1HybridModel",
            check="fattree.sim.checks.rn1:network_phase",
            docs="docs/dehon.md",
        ),
        Design(
            name="hypercube",
            summary="the Connection Machine hypercube: route, buffer, refer, deliver; 2^dim nodes",
            component="fattree.hdl.hypercube:hypercube",
            params=HYPERCUBE.params,
            bench="fattree.sim.benches.hypercube",
            bench_params=(backpressure(20),),
            definitions=("fattree.spec.hypercube",),
            model="fattree.sim.models.hypercube:HypercubeModel",
            check="fattree.sim.checks.hypercube:HypercubeCheck",
            soak="fattree.sim.soak.hypercube:HypercubeSoak",
            selftest="fattree.boards.hypercube_selftest:hypercube_selftest",
            proofs=("fattree.proofs.hypercube:harness",),
            mutant_point={"dim": 2},
            docs="docs/hypercube.md",
        ),
    ],
)


def get_design(name: str) -> Design:
    """The design named ``name``; ``ValueError`` naming the known ones if there is none."""
    return DESIGNS.get_or_raise(name)


_PARAM_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$")


def parse_params(design: Design, items: list[str] | None) -> dict[str, int | str]:
    """``["width=8", ...]`` -> ``{"width": 8}``, defaults filled in, every value checked."""
    return _parse_values(design, design.params, items, "--param", "parameter")


def parse_bench_params(design: Design, items: list[str] | None) -> dict[str, int | str]:
    """The same for the bench-only knobs (``fattree sim --bench-param backpressure=50``)."""
    return _parse_values(design, design.bench_params, items, "--bench-param", "bench parameter")


def _parse_values(design, params, items, option: str, kind: str) -> dict[str, int | str]:
    values = {p.name: p.default for p in params}
    by_name = {p.name: p for p in params}
    for item in items or []:
        match = _PARAM_RE.match(item)
        if not match:
            raise ValueError(f"{option} wants NAME=VALUE, not {item!r}")
        name, text = match.groups()
        if name not in by_name:
            known = ", ".join(by_name) or "none"
            raise ValueError(f"design {design.name} has no {kind} {name!r}; its {kind}s: {known}")
        values[name] = by_name[name].parse(text)
    return values


def param_slug(params: dict[str, int | str]) -> str:
    # An empty text parameter (no faults) leaves the folder name as it was; a text one's
    # separators (":", ",", "/") are not folder names.
    return (
        "-".join(
            f"{k}{re.sub(r'[^A-Za-z0-9.=_+]', '_', str(v))}"
            for k, v in sorted(params.items())
            if v != ""
        )
        or "default"
    )


def build_dir(
    kind: str, design: Design, params: dict[str, int | str], root: Path | None = None
) -> Path:
    """``build/<kind>/<design>/<params>/``: one folder per design and parameter set."""
    return (root or Path("build")) / kind / design.name / param_slug(params)


def top_name(design: Design, ports: str = "native") -> str:
    """Verilog top module name: the design's (``circuit_tree``), ``_axis`` added for the
    AXI4-Stream top."""
    return design.name.replace("-", "_") + ("_axis" if ports == "axis" else "")


def elaborate_verilog(
    design: Design,
    params: dict[str, int | str],
    family: str | None = None,
    ports: str = "native",
    src: str = "relative",
) -> str:
    """Verilog text of the design, top module named after it (:func:`top_name`).

    ``ports="axis"`` gives the design's AXI4-Stream top (:class:`AxisTop`; docs/axis.md).
    ``family`` (``"ecp5"``, ``"ice40"``) lets components use that family's primitives where
    they have a faster form (see :mod:`fattree.hdl.target`); None gives portable Verilog.
    ``src`` (:data:`SRC`) says what the ``src`` attributes hold: files relative to their
    package, or nothing. The text is lint-clean (:mod:`fattree.verilog_output`; the waivers
    of what is not are :func:`fattree.verilog_output.waiver_file`). What a user gets has
    :func:`verilog_header` before it.
    """
    from amaranth.back import verilog

    from . import toolchain
    from .hdl.rn1.modules import with_shared_modules
    from .hdl.target import SynthesisTarget
    from .verilog_output import drop_sources, relative_sources, tidy
    from .verilog_sharing import share_modules

    design.top(ports)  # the one-line error before any work
    if src not in SRC:
        raise ValueError(f"src must be one of {', '.join(SRC)}, not {src!r}")
    toolchain.setup_environment()
    platform = SynthesisTarget(family) if family else None
    component = design.build(params, ports)
    # RN1 networks in their hierarchical form write their own structural Verilog over shared
    # router modules (hdl/rn1/modules.py): two unit-tree stages have 156 672 input bits, an
    # Amaranth top at most 65 536.
    own = getattr(component, "structural_verilog", None)
    text = own(top_name(design, ports)) if own is not None else None
    if text is None:
        text = verilog.convert(
            component, name=top_name(design, ports), platform=platform, emit_src=src != "none"
        )
        # A network placed in its hierarchical form inside the design (rn1-fat-tree):
        # its shared router modules, once each.
        text = with_shared_modules(text)
    # Identical modules (a tree's interfaces, a Leiserson tree's selectors) written once.
    text = share_modules(tidy(text))
    return drop_sources(text) if src == "none" else relative_sources(text, source_roots())


def source_roots() -> list[tuple[str, str]]:
    """Where the Python files that make Verilog live, as :func:`relative_sources` takes them:
    the package's folders (the checkout's ``hdl/`` is ``fattree/hdl`` in an editable install),
    Amaranth's, and every folder of the import path (site-packages, for the rest)."""
    import importlib.util
    import sys

    roots = []
    for package in ("fattree", "fattree.hdl", "fattree.sim", "fattree.boards", "amaranth"):
        spec = importlib.util.find_spec(package)
        for folder in (spec and spec.submodule_search_locations) or ():
            roots.append((folder, package.replace(".", "/")))
    return roots + [(folder, "") for folder in sys.path if folder]


def verilog_command(
    design: Design,
    params: dict[str, int | str],
    family: str | None = None,
    ports: str = "native",
    src: str = "relative",
) -> str:
    """The ``fattree verilog`` command that writes this Verilog again, byte for byte (add
    ``-o FILE`` to choose the file): every parameter given, so a later default cannot change
    it, but an empty text, which only a default can be (``-p name=`` is no value)."""
    words = ["fattree", "verilog", design.name]
    for p in design.params:
        if params[p.name] != "":
            words += ["-p", f"{p.name}={params[p.name]}"]
    if family:
        words += ["--family", family]
    if ports != "native":
        words += ["--ports", ports]
    if src == "none":
        words.append("--no-src")
    return shlex.join(words)


def verilog_header(
    design: Design,
    params: dict[str, int | str],
    family: str | None = None,
    ports: str = "native",
    src: str = "relative",
) -> str:
    """The comment block at the top of every Verilog file ``fattree verilog`` and ``fattree
    export`` write: the fattree version, the design, every parameter, the ports, the family,
    what the ``src`` attributes hold and the command that writes the file again. No date:
    the same request gives the same bytes."""
    summary = textwrap.wrap(design.summary, 88, initial_indent="  ", subsequent_indent="  ")
    width = max((len(p.name) for p in design.params), default=0)
    lines = [
        f"Generated by fattree {__version__}: regenerate with the command below, do not edit.",
        f"Design: {design.name}, top module {top_name(design, ports)}",
        *summary,
        f"Parameters (fattree designs {design.name} says what each is):",
    ]
    for p in design.params:
        value = params[p.name]
        shown = '""' if value == "" else str(value)
        lines.append(f"  {p.name:<{width}} = {shown}" + ("  (default)" * (value == p.default)))
    if not design.params:
        lines.append("  none")
    lines += [
        "Ports: native (the design's own port names)"
        if ports == "native"
        else "Ports: axis (AXI4-Stream names, docs/axis.md)",
        f"Family: {family} (its primitives where they are faster)"
        if family
        else "Family: portable (no FPGA primitives)",
        "Source locations: none (--no-src)"
        if src == "none"
        else "Source locations: src attributes, each file relative to its package",
        f"Command: {verilog_command(design, params, family, ports, src)}",
    ]
    return "".join(f"// {line}".rstrip() + "\n" for line in lines) + "\n"
