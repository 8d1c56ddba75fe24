"""Synthesis, place and route of any design in :data:`fattree.designs.DESIGNS`.

Two numbers come out of two different netlists, on purpose:

* **Resources** (LUTs, flip-flops, carries, RAMs, the full cell table) are those of the
  component exactly as a user would drop it into a larger design: its own RTLIL through
  ``synth_ice40`` / ``synth_ecp5`` and ``stat -json``. Neither script inserts I/O buffers
  (nextpnr does that, at place and route), so the counts carry no pad cells.
* **Fmax** needs a placed and routed design, and a component's ports usually outnumber the
  package's pins. The component is therefore wrapped in a harness (:func:`make_harness`) with
  five pins (``clk``, ``rst``, ``sdi``, ``load``, ``sdo``): every input bit comes from a
  flip-flop of a shift chain fed by ``sdi``; every output bit is captured in a flip-flop and
  shifted out on ``sdo``. Nothing can be optimised away, and every path through the
  component starts and ends at a flip-flop, so nextpnr's post-route Fmax of ``clk`` is the
  component's register-to-register Fmax (or the harness's own, one LUT deep, if the component
  is faster still; ``critical_path`` says which).

One Yosys run per family makes both netlists (``design -reset`` between them) and one
nextpnr run places and routes the harness. YoWASP tools cannot see absolute ``/tmp`` paths
(their runtime maps ``/tmp`` privately), so both run inside the report folder with relative
file names. Everything they write stays there: see :class:`SynthResult.files`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import toolchain
from .designs import Design, build_dir
from .hdl.target import SynthesisTarget

__all__ = [
    "Family",
    "FAMILIES",
    "get_family",
    "make_harness",
    "Resources",
    "SynthError",
    "SynthResult",
    "classify_cells",
    "parse_stat",
    "parse_nextpnr_report",
    "parse_nextpnr_log",
    "parse_nextpnr_utilisation",
    "failed_in_abc9",
    "synthesise",
]

HARNESS_TOP = "fattree_harness"


class SynthError(RuntimeError):
    """A tool failed; the message says which one and where its log is."""


@dataclass(frozen=True)
class Family:
    """An FPGA family, the part and package we place and route on, and the tools for it."""

    name: str
    #: Yosys synthesis script.
    synth: str
    #: Key in :data:`fattree.toolchain.TOOLS`.
    nextpnr: str
    device: str
    package: str
    board: str
    #: Device and package flags of nextpnr.
    nextpnr_args: tuple[str, ...]
    #: Pin-constraint flag, its "others may float" flag, and the file suffix.
    constraints: tuple[str, str, str]
    #: The board's clock pin, so ``clk`` arrives on a global clock input as it would there.
    clock_pin: str
    #: Default ``--freq`` target in MHz.
    default_freq: float
    #: The synthesis script's LUT mapping with ``abc`` instead of ``abc9``: Yosys commands
    #: run between ``-run :map_luts`` and ``-run map_cells:`` of :attr:`synth`. Used when
    #: ABC9 fails (YoWASP's Yosys stops inside it, without a message, on large designs).
    map_luts_abc: tuple[str, ...] = ()

    def constraint_text(self) -> str:
        if self.name == "ice40":
            return f"set_io clk {self.clock_pin}\n"
        return f'LOCATE COMP "clk" SITE "{self.clock_pin}";\nIOBUF PORT "clk" IO_TYPE=LVCMOS33;\n'


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in [
        Family(
            name="ice40",
            synth="synth_ice40",
            nextpnr="nextpnr-ice40",
            device="iCE40UP5K",
            package="SG48",
            board="iCEBreaker",
            nextpnr_args=("--up5k", "--package", "sg48"),
            constraints=("--pcf", "--pcf-allow-unconstrained", "pcf"),
            # iCEBreaker's 12 MHz oscillator is on pin 35, a global buffer input.
            clock_pin="35",
            default_freq=100.0,
            map_luts_abc=(
                "techmap -map +/ice40/latches_map.v",
                "abc -dress -lut 4",
                "ice40_wrapcarry -unwrap",
                "techmap -map +/ice40/ff_map.v",
                "clean",
                "opt_lut -tech ice40",
            ),
        ),
        Family(
            name="ecp5",
            synth="synth_ecp5",
            nextpnr="nextpnr-ecp5",
            device="LFE5U-85F",
            package="CABGA381",
            board="ULX3S 85F",
            # ULX3S boards carry the slowest speed grade, -6.
            nextpnr_args=("--85k", "--package", "CABGA381", "--speed", "6"),
            constraints=("--lpf", "--lpf-allow-unconstrained", "lpf"),
            # ULX3S's 25 MHz oscillator (clk_25mhz) is on ball G2.
            clock_pin="G2",
            default_freq=150.0,
            # What synth_ecp5 -noabc9 did before synth_lattice replaced it (Yosys 0.70 has
            # no such option): LUT4 .. LUT7, the wide ones from PFU multiplexers.
            map_luts_abc=(
                "techmap -map +/lattice/latches_map.v",
                "abc -dress -lut 4:7",
                "clean",
            ),
        ),
    ]
}


def get_family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        known = ", ".join(FAMILIES)
        raise ValueError(f"unknown family {name!r}; known families: {known}") from None


# ---------------------------------------------------------------------------------------------
# The harness


def _flat_ports(component):
    """``[(name, direction, value)]`` of every port bit group of a wiring.Component."""
    from amaranth.hdl import Value
    from amaranth.lib import wiring

    if not isinstance(component, wiring.Component):
        raise TypeError(
            f"the harness needs an amaranth.lib.wiring.Component, not {type(component).__name__}"
        )
    ports = []
    for path, member, value in component.signature.flatten(component):
        name = "__".join(str(p) for p in path)
        direction = "in" if member.flow == wiring.In else "out"
        ports.append((name, direction, Value.cast(value)))
    return ports


def make_harness(component):
    """Wrap ``component`` between a serial-in shift chain and a serial-out capture register.

    Pins: ``sdi`` feeds a shift chain whose flip-flops drive every input bit of the component;
    every output bit is registered into ``capture`` each cycle; ``load`` copies ``capture``
    into a shift register whose bit 0 is ``sdo``. ``clk`` and ``rst`` are the ``sync``
    domain's, shared with the component. The harness adds at most one LUT (the ``load``
    multiplexer) between flip-flops, so it is not the critical path of any component that has
    logic of its own.
    """
    from amaranth.hdl import Cat, Elaboratable, Module, Signal

    ports = _flat_ports(component)
    inputs = [v for _, d, v in ports if d == "in"]
    outputs = [v for _, d, v in ports if d == "out"]
    n_in = sum(len(v) for v in inputs)
    n_out = sum(len(v) for v in outputs)
    if n_out == 0:
        component._MustUse__silence = True  # never elaborated: say why, not "unused" as well
        raise ValueError("the component has no outputs: nothing of it would survive synthesis")

    class _Harness(Elaboratable):
        def __init__(self):
            self.sdi = Signal()
            self.load = Signal()
            self.sdo = Signal()
            self.dut = component
            self.n_in = n_in
            self.n_out = n_out

        def ports(self):
            return [self.sdi, self.load, self.sdo]

        def elaborate(self, platform):
            m = Module()
            m.submodules.dut = self.dut
            if n_in:
                # Reset-less, so that no chain or capture flip-flop is identical to (and merged
                # with) one of the component's, which all reset with `rst`.
                chain = Signal(n_in, reset_less=True)
                m.d.sync += chain.eq(Cat(self.sdi, chain[:-1]))
                offset = 0
                for value in inputs:
                    m.d.comb += value.eq(chain[offset : offset + len(value)])
                    offset += len(value)
            capture = Signal(n_out, reset_less=True)
            shift = Signal(n_out, reset_less=True)
            m.d.sync += capture.eq(Cat(*outputs))
            with m.If(self.load):
                m.d.sync += shift.eq(capture)
            with m.Else():
                m.d.sync += shift.eq(shift >> 1)
            m.d.comb += self.sdo.eq(shift[0])
            return m

    return _Harness()


# ---------------------------------------------------------------------------------------------
# Reports


@dataclass
class Resources:
    """Cell counts of one synthesised netlist, grouped the way FPGA users count them."""

    luts: int = 0
    ffs: int = 0
    carries: int = 0
    brams: int = 0
    lutrams: int = 0
    dsps: int = 0
    #: Every cell type and its count, as Yosys reports them.
    cells: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.cells.values())

    def as_dict(self) -> dict:
        return {**asdict(self), "total_cells": self.total}


# Cell names of synth_ice40 and synth_ecp5 (Yosys 0.70). TRELLIS_COMB and TRELLIS_RAMW are
# nextpnr's packed names; counted too in case a netlist arrives packed.
_LUT = re.compile(r"^(SB_LUT4|LUT[1-6]|TRELLIS_COMB)$")
_FF = re.compile(r"^(SB_DFF\w*|TRELLIS_FF|FD1[PS]3\w+)$")
_CARRY = re.compile(r"^(SB_CARRY|CCU2[CD])$")
_BRAM = re.compile(r"^(SB_RAM40_4K\w*|SB_SPRAM256KA|DP16KD|PDPW16KD)$")
_LUTRAM = re.compile(r"^(TRELLIS_DPR16X4|TRELLIS_RAMW|DPR16X4\w*)$")
_DSP = re.compile(r"^(SB_MAC16|MULT18X18D|ALU54B)$")


def classify_cells(cells: dict[str, int]) -> Resources:
    """Group a ``{cell type: count}`` table into LUTs, FFs, carries, RAMs and DSPs.

    ``$scopeinfo`` cells, which Yosys leaves behind when it flattens a hierarchy to remember
    the submodule names, are not hardware and are left out of the table.
    """
    cells = {k: v for k, v in cells.items() if k.lstrip("\\") != "$scopeinfo"}
    res = Resources(cells=dict(sorted(cells.items())))
    for name, count in cells.items():
        name = name.lstrip("\\$")
        for attr, pattern in (
            ("luts", _LUT),
            ("ffs", _FF),
            ("carries", _CARRY),
            ("brams", _BRAM),
            ("lutrams", _LUTRAM),
            ("dsps", _DSP),
        ):
            if pattern.match(name):
                setattr(res, attr, getattr(res, attr) + count)
                break
    return res


def parse_stat(text: str, top: str | None = None) -> Resources:
    """Resources from the output of Yosys' ``stat -json``.

    Yosys 0.70 prints no "Number of cells" text line; its JSON has ``modules`` (one entry per
    module, ``num_cells_by_type``) and, for a hierarchy with a top, ``design`` with the
    counts of the whole design. A flattened netlist has one module: its counts are the design's.
    """
    # `tee -o` may capture a line of log text before the JSON object.
    data = json.loads(text[text.index("{") :])
    if "design" in data and "num_cells_by_type" in data["design"]:
        cells = data["design"]["num_cells_by_type"]
    else:
        modules = data.get("modules", {})
        if top is not None:
            key = next((k for k in modules if k.lstrip("\\") == top), None)
            modules = {key: modules[key]} if key is not None else modules
        cells = {}
        for module in modules.values():
            for name, count in module.get("num_cells_by_type", {}).items():
                cells[name] = cells.get(name, 0) + count
    return classify_cells({k.lstrip("\\"): int(v) for k, v in cells.items()})


@dataclass
class Timing:
    #: Post-route Fmax of the clock in MHz, and the clock net's name in nextpnr.
    fmax_mhz: float
    clock: str
    target_mhz: float | None
    #: ``{bel type: {"used": n, "available": m}}`` of the placed harness (empty from a log).
    utilisation: dict[str, dict[str, int]] = field(default_factory=dict)
    source: str = "report"
    #: The clock's critical path: ``{"from", "to", "delay_ns", "logic_levels", "limited_by"}``,
    #: ``limited_by`` being ``"component"`` if the path passes through or ends at a cell of the
    #: component (``dut.`` names in the harness), else ``"harness"``. None when read from a log.
    critical_path: dict | None = None

    @property
    def met(self) -> bool | None:
        return None if self.target_mhz is None else self.fmax_mhz >= self.target_mhz


def parse_nextpnr_report(text: str) -> Timing:
    """Fmax and utilisation from nextpnr's ``--report`` JSON.

    The report has ``fmax: {clock: {"achieved": MHz, "constraint": MHz}}`` and
    ``utilization: {bel type: {"used": n, "available": m}}``. The harness has one clock; with
    more than one, the slowest is returned (it limits the design).
    """
    data = json.loads(text)
    clocks = data.get("fmax") or {}
    if not clocks:
        raise ValueError("the nextpnr report has no clock with a register-to-register path")
    clock = min(clocks, key=lambda c: clocks[c]["achieved"])
    util = {
        bel: {"used": int(v["used"]), "available": int(v["available"])}
        for bel, v in sorted((data.get("utilization") or {}).items())
    }
    return Timing(
        fmax_mhz=round(float(clocks[clock]["achieved"]), 2),
        clock=clock,
        target_mhz=float(clocks[clock]["constraint"]) if "constraint" in clocks[clock] else None,
        utilisation=util,
        source="report",
        critical_path=_critical_path(data.get("critical_paths") or [], clock),
    )


def _critical_path(paths: list[dict], clock: str) -> dict | None:
    """Summary of the clock-to-clock path in nextpnr's ``critical_paths``."""
    for path in paths:
        if path.get("from") != f"posedge {clock}" or path.get("to") != f"posedge {clock}":
            continue
        steps = path.get("path") or []
        if not steps:
            return None
        # Cells are named after the nets they drive, so the input chain's flip-flops may carry
        # the names of the component's input ports: the start cell does not count.
        cells = [step["to"]["cell"] for step in steps if step.get("type") != "clk-to-q"]
        return {
            "from": steps[0]["from"]["cell"],
            "to": steps[-1]["to"]["cell"],
            "delay_ns": round(sum(float(step["delay"]) for step in steps), 3),
            "logic_levels": sum(step.get("type") == "logic" for step in steps),
            "limited_by": "component" if any(c.startswith("dut.") for c in cells) else "harness",
        }
    return None


_UTIL_LINE = re.compile(r"^Info:\s+([A-Za-z0-9_$]+):\s+(\d+)/\s*(\d+)\s+\d+%$")


def parse_nextpnr_utilisation(text: str) -> dict[str, dict[str, int]]:
    """The last "Device utilisation" table of a nextpnr log, ``{bel: {"used", "available"}}``.

    nextpnr prints it after packing, before placement, so it is there even when placement
    fails for lack of room (used > available tells by how much).
    """
    table: dict[str, dict[str, int]] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if line.rstrip().endswith("Device utilisation:"):
            table = {}
            for row in lines:
                match = _UTIL_LINE.match(row.rstrip())
                if not match:
                    break
                bel, used, available = match.groups()
                table[bel] = {"used": int(used), "available": int(available)}
    return table


_FMAX_LINE = re.compile(
    r"Max frequency for clock\s+'([^']+)':\s*([0-9.]+)\s*MHz"
    r"(?:\s*\((?:PASS|FAIL) at ([0-9.]+) MHz\))?"
)


def parse_nextpnr_log(text: str) -> Timing:
    """Fmax from the *last* "Max frequency for clock" line of a nextpnr log (the post-route
    one; earlier ones are estimates after placement). The fallback when there is no report."""
    matches = _FMAX_LINE.findall(text)
    if not matches:
        raise ValueError("the nextpnr log has no 'Max frequency for clock' line")
    # The last block of lines is post-route; take its slowest clock.
    last_names = {}
    for clock, fmax, target in matches:
        last_names[clock] = (float(fmax), float(target) if target else None)
    clock = min(last_names, key=lambda c: last_names[c][0])
    fmax, target = last_names[clock]
    return Timing(fmax_mhz=round(fmax, 2), clock=clock, target_mhz=target, source="log")


# ---------------------------------------------------------------------------------------------
# The flow


@dataclass
class SynthResult:
    design: str
    params: dict[str, int]
    family: Family
    top: str
    seed: int
    freq_mhz: float
    #: The component alone (what it costs inside a larger design).
    core: Resources
    #: The harness netlist before place and route (component + shift chains).
    harness: Resources
    #: Input and output bits the harness shifts in and out.
    harness_bits: dict[str, int]
    #: None when place and route failed (typically: the harness does not fit the part).
    timing: Timing | None
    directory: Path
    files: dict[str, Path]
    seconds: dict[str, float]
    #: nextpnr's error, one line, when place and route failed; the resources are still valid.
    pnr_error: str | None = None
    #: nextpnr's "Device utilisation" table, read from its log (also when it failed).
    placed: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Which synthesis ran: the family's script, or it with ``abc`` mapping the LUTs.
    synth_script: str = ""
    #: Why ABC9 was given up (Yosys's failure), when ``abc`` mapped the LUTs instead.
    abc9_error: str | None = None

    def as_dict(self) -> dict:
        f = self.family
        t = self.timing
        return {
            "design": self.design,
            "params": self.params,
            "family": f.name,
            "device": f.device,
            "package": f.package,
            "board": f.board,
            "top": self.top,
            "seed": self.seed,
            "resources": self.core.as_dict(),
            "harness": {
                **self.harness.as_dict(),
                "input_bits": self.harness_bits["in"],
                "output_bits": self.harness_bits["out"],
                "utilisation": t.utilisation if t and t.utilisation else self.placed,
            },
            "fmax_mhz": t.fmax_mhz if t else None,
            "target_mhz": self.freq_mhz,
            "timing_met": t.fmax_mhz >= self.freq_mhz if t else None,
            "clock": t.clock if t else None,
            "critical_path": t.critical_path if t else None,
            "fmax_source": t.source if t else None,
            "pnr_error": self.pnr_error,
            "synth_script": self.synth_script,
            "abc9_error": self.abc9_error,
            "directory": str(self.directory),
            "files": {k: str(v) for k, v in self.files.items()},
            "seconds": self.seconds,
        }


def _synth_commands(family: Family, top: str, abc9: bool, json_out: str = "") -> list[str]:
    """The synthesis of ``top``: the family's script, or with ``abc9=False`` the same script
    around :attr:`Family.map_luts_abc` in place of its ``map_luts`` step."""
    json_flag = f" -json {json_out}" if json_out else ""
    if abc9:
        return [f"{family.synth} -top {top}{json_flag}"]
    if not family.map_luts_abc:
        raise ValueError(f"family {family.name} has no LUT mapping without ABC9")
    return [
        f"{family.synth} -top {top} -run :map_luts",
        *family.map_luts_abc,
        f"{family.synth} -top {top}{json_flag} -run map_cells:",
    ]


def _yosys_script(family: Family, top: str, abc9: bool = True) -> str:
    # stat -json goes to a file through `tee -q -o`, so the log keeps only the human text.
    return "\n".join(
        [
            "# core: the component alone, as a user would drop it into a design",
            f"read_rtlil {top}.il",
            f"hierarchy -top {top}",
            *_synth_commands(family, top, abc9),
            "tee -q -o core.stat.json stat -json",
            "tee -o core.stat.txt stat",
            "design -reset",
            "# harness: the component between shift chains, for place and route",
            f"read_rtlil {HARNESS_TOP}.il",
            f"hierarchy -top {HARNESS_TOP}",
            *_synth_commands(family, HARNESS_TOP, abc9, f"{HARNESS_TOP}.json"),
            "tee -q -o harness.stat.json stat -json",
            "",
        ]
    )


_HEADER = re.compile(r"^((?:\d+\.)+) Executing (.+?)\.?$")


def failed_in_abc9(log: str) -> bool:
    """Whether a Yosys log ends inside an ABC9 pass (the last section header, or one of the
    headers it is nested in, says ``Executing ABC9 pass``)."""
    headers = [m.groups() for m in map(_HEADER.match, log.splitlines()) if m]
    if not headers:
        return False
    last = headers[-1][0]
    # The enclosing sections of "3.46.3." are "3.46." and "3.".
    enclosing = {last[: i + 1] for i, ch in enumerate(last) if ch == "."}
    return any(
        number in enclosing and text.upper().startswith("ABC9 PASS") for number, text in headers
    )


def _first_run(exe: str) -> bool:
    """Whether YoWASP has not yet compiled ``exe`` (the run then takes ~30 s longer)."""
    try:
        import platformdirs  # yowasp-runtime's own dependency, used for the same path
    except ImportError:
        return False
    default = platformdirs.user_cache_dir("YoWASP", appauthor=False)
    package = exe.removeprefix("yowasp-").replace("-", "_")
    return not (Path(os.environ.get("YOWASP_CACHE_DIR", default)) / f"yowasp_{package}").exists()


def _cold(exe: str) -> str:
    return (
        " (first run: compiling the tool's WebAssembly, about a minute)" if _first_run(exe) else ""
    )


def _run(argv: list[str], cwd: Path, tool: str, log: Path) -> None:
    exe = shutil.which(argv[0])
    if exe is None:  # require() was called first; this guards a PATH changed in between
        raise toolchain.ToolMissing(f"{argv[0]} not found")
    proc = subprocess.run([exe, *argv[1:]], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        output = (proc.stderr + proc.stdout).splitlines()
        lines = [ln for ln in output if "ERROR" in ln]
        if lines:
            reason = lines[-1].strip()
        else:
            # A WebAssembly trap (memory, stack) prints no ERROR line: give its last words.
            tail = " / ".join(ln.strip() for ln in output[-3:] if ln.strip())
            reason = f"exit status {proc.returncode}" + (f": {tail}" if tail else "")
        raise SynthError(f"{tool} failed: {reason} (log: {log})")


def synthesise(
    design: Design,
    params: dict[str, int],
    family: str | Family = "ice40",
    *,
    root: Path | None = None,
    seed: int = 1,
    freq_mhz: float | None = None,
    progress=None,
) -> SynthResult:
    """Synthesise ``design`` for ``family``, place and route its harness, parse the reports.

    Parameters
    ----------
    design, params
        An entry of :data:`fattree.designs.DESIGNS` and its parameter values.
    family : str or Family
        ``"ice40"`` (iCE40UP5K-SG48) or ``"ecp5"`` (LFE5U-85F-6 CABGA381).
    root : Path
        Folder under which ``<family>/<design>/<params>/`` is made; default ``build/synth``.
    seed : int
        nextpnr's placement seed.
    freq_mhz : float
        nextpnr's target frequency; default :attr:`Family.default_freq`.
    progress : callable
        Called with a line of text before each tool run.
    """
    from amaranth.back import rtlil

    fam = family if isinstance(family, Family) else get_family(family)
    freq = float(freq_mhz if freq_mhz is not None else fam.default_freq)
    toolchain.require("yosys", fam.nextpnr)
    say = progress or (lambda _: None)

    out = build_dir(fam.name, design, params, root or Path("build") / "synth")
    out.mkdir(parents=True, exist_ok=True)
    top = design.name.replace("-", "_")
    seconds = {}

    t0 = time.monotonic()
    # Components that have a faster vendor-specific form choose it from the family.
    target = SynthesisTarget(fam.name)
    (out / f"{top}.il").write_text(rtlil.convert(design.build(params), name=top, platform=target))
    harness = make_harness(design.build(params))
    (out / f"{HARNESS_TOP}.il").write_text(
        rtlil.convert(harness, name=HARNESS_TOP, ports=harness.ports(), platform=target)
    )
    ys = out / "synth.ys"
    ys.write_text(_yosys_script(fam, top))
    seconds["export"] = round(time.monotonic() - t0, 2)

    files = {
        "rtlil": out / f"{top}.il",
        "harness_rtlil": out / f"{HARNESS_TOP}.il",
        "yosys_script": ys,
        "yosys_log": out / "yosys.log",
        "core_stat": out / "core.stat.json",
        "core_stat_text": out / "core.stat.txt",
        "harness_stat": out / "harness.stat.json",
        "harness_netlist": out / f"{HARNESS_TOP}.json",
        "constraints": out / f"{HARNESS_TOP}.{fam.constraints[2]}",
        "nextpnr_log": out / "nextpnr.log",
        "nextpnr_report": out / "nextpnr.report.json",
    }
    for key in ("core_stat", "harness_stat", "harness_netlist", "nextpnr_log", "nextpnr_report"):
        files[key].unlink(missing_ok=True)  # a stale file must not pass for this run's
    (out / "yosys.abc9.log").unlink(missing_ok=True)

    yosys = toolchain.TOOLS["yosys"].exe
    say(f"yosys {fam.synth}: {design.name} and its harness ({files['yosys_log']}){_cold(yosys)}")
    t0 = time.monotonic()
    script = fam.synth
    abc9_error = None
    try:
        _run(
            [yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"],
            out,
            "yosys",
            files["yosys_log"],
        )
    except SynthError as exc:
        log = files["yosys_log"].read_text() if files["yosys_log"].exists() else ""
        if not (fam.map_luts_abc and failed_in_abc9(log)):
            raise
        # Map LUTs with ABC instead; keep the failed log next to the new one.
        abc9_error = str(exc)
        files["yosys_log"].replace(out / "yosys.abc9.log")
        files["yosys_abc9_log"] = out / "yosys.abc9.log"
        script = f"{fam.synth}, abc instead of abc9"
        ys = files["yosys_script"] = out / "synth_abc.ys"
        ys.write_text(_yosys_script(fam, top, abc9=False))
        say(f"yosys stopped inside ABC9; again with abc ({files['yosys_log']})")
        _run(
            [yosys, "-q", "-l", "yosys.log", "-s", ys.name],
            out,
            "yosys",
            files["yosys_log"],
        )
    seconds["yosys"] = round(time.monotonic() - t0, 2)
    core = parse_stat(files["core_stat"].read_text(), top)
    harness_res = parse_stat(files["harness_stat"].read_text(), HARNESS_TOP)

    files["constraints"].write_text(fam.constraint_text())
    flag, allow, suffix = fam.constraints
    nextpnr = toolchain.TOOLS[fam.nextpnr].exe
    say(
        f"nextpnr {fam.device}-{fam.package} at {freq:g} MHz, seed {seed} "
        f"({files['nextpnr_log']}){_cold(nextpnr)}"
    )
    t0 = time.monotonic()
    pnr_error = None
    try:
        _run(
            [
                nextpnr,
                "-q",
                *fam.nextpnr_args,
                "--json",
                f"{HARNESS_TOP}.json",
                flag,
                f"{HARNESS_TOP}.{suffix}",
                allow,
                "--freq",
                f"{freq:g}",
                "--seed",
                str(seed),
                # Report the Fmax reached even when it falls short of the target.
                "--timing-allow-fail",
                "--report",
                "nextpnr.report.json",
                "--log",
                "nextpnr.log",
            ],
            out,
            fam.nextpnr,
            files["nextpnr_log"],
        )
    except SynthError as exc:
        # Keep the resources: the usual cause is a harness that does not fit the part.
        pnr_error = str(exc)
    seconds["nextpnr"] = round(time.monotonic() - t0, 2)
    log = files["nextpnr_log"].read_text() if files["nextpnr_log"].exists() else ""
    timing = None
    if pnr_error is None:
        if files["nextpnr_report"].exists():
            timing = parse_nextpnr_report(files["nextpnr_report"].read_text())
        else:
            timing = parse_nextpnr_log(log)

    return SynthResult(
        design=design.name,
        params=dict(params),
        family=fam,
        top=top,
        seed=seed,
        freq_mhz=freq,
        core=core,
        harness=harness_res,
        harness_bits={"in": harness.n_in, "out": harness.n_out},
        timing=timing,
        directory=out,
        files=files,
        seconds=seconds,
        pnr_error=pnr_error,
        placed=parse_nextpnr_utilisation(log),
        synth_script=script,
        abc9_error=abc9_error,
    )
