"""Parsers of what Yosys and nextpnr write: cell counts, Fmax, utilisation, where Yosys stopped.

* :func:`parse_stat` (with :func:`classify_cells`): Yosys's ``stat -json``, as
  :class:`Resources`;
* :func:`parse_nextpnr_report`: nextpnr's ``--report`` JSON, as :class:`Timing`;
* :func:`parse_nextpnr_log`: the post-route Fmax lines of a nextpnr log, as :class:`Timing`;
* :func:`parse_nextpnr_utilisation`: the "Device utilisation" table of a nextpnr log;
* :func:`parse_nextpnr_summary`: all a nextpnr log says (the two above, and the family's LUT
  and flip-flop counts), as :class:`NextpnrSummary`: what ``fattree build`` reports;
* :func:`failed_in_abc9`: whether a Yosys log ends inside an ABC9 pass.

Nothing here runs a tool or imports Amaranth; the board flow reads its logs with the same
parsers as ``fattree synth``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from .families import Family, get_family

__all__ = [
    "Resources",
    "classify_cells",
    "parse_stat",
    "Timing",
    "parse_nextpnr_report",
    "parse_nextpnr_utilisation",
    "parse_nextpnr_log",
    "NextpnrSummary",
    "parse_nextpnr_summary",
    "failed_in_abc9",
]


# ---------------------------------------------------------------------------------------------
# Yosys: cell counts


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


# ---------------------------------------------------------------------------------------------
# nextpnr: Fmax and utilisation


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
    #: nextpnr's own verdict on the target (its "PASS"/"FAIL" at the target), when read from a
    #: log line that has one; None from a report.
    passed: bool | None = None

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
    r"(?:\s*\((PASS|FAIL) at ([0-9.]+) MHz\))?"
)


def parse_nextpnr_log(text: str) -> Timing:
    """Fmax from the *last* "Max frequency for clock" line of a nextpnr log (the post-route
    one; earlier ones are estimates after placement). The fallback when there is no report."""
    matches = _FMAX_LINE.findall(text)
    if not matches:
        raise ValueError("the nextpnr log has no 'Max frequency for clock' line")
    # The last block of lines is post-route; take its slowest clock.
    last_names = {}
    for clock, fmax, verdict, target in matches:
        last_names[clock] = (
            float(fmax),
            float(target) if target else None,
            verdict == "PASS" if verdict else None,
        )
    clock = min(last_names, key=lambda c: last_names[c][0])
    fmax, target, passed = last_names[clock]
    return Timing(
        fmax_mhz=round(fmax, 2), clock=clock, target_mhz=target, source="log", passed=passed
    )


# ---------------------------------------------------------------------------------------------
# nextpnr: everything a log says, for the board flow


@dataclass
class NextpnrSummary:
    """What a nextpnr log (``--log``) says about a placed and routed design."""

    #: The "Device utilisation" table, every bel type: ``{bel: {"used": n, "available": m}}``.
    utilisation: dict[str, dict[str, int]]
    #: LUT4s and flip-flops of the design and the part's LUT4s, from the family's packing
    #: report (see :func:`parse_nextpnr_summary`); None when the log has none.
    luts: int | None
    ffs: int | None
    lut_capacity: int | None
    #: Post-route Fmax (:func:`parse_nextpnr_log`); None when the log has no Fmax line.
    timing: Timing | None


_ICE40_LC = {
    "lut_only": re.compile(r"^Info:\s+(\d+) LCs used as LUT4 only", re.M),
    "lut_dff": re.compile(r"^Info:\s+(\d+) LCs used as LUT4 and DFF", re.M),
    "dff_only": re.compile(r"^Info:\s+(\d+) LCs used as DFF only", re.M),
}
_ECP5_TOTAL = {
    "luts": re.compile(r"^Info:\s+Total LUT4s:\s+(\d+)\s*/\s*(\d+)", re.M),
    "ffs": re.compile(r"^Info:\s+Total DFFs:\s+(\d+)\s*/\s*(\d+)", re.M),
}


def _ice40_logic(text: str, utilisation: dict) -> tuple[int | None, int | None, int | None]:
    """From the LUT-FF packing report: a logic cell holds one LUT4 and one DFF."""
    luts = ffs = capacity = None
    if any(regex.search(text) for regex in _ICE40_LC.values()):
        counts = {}
        for key, regex in _ICE40_LC.items():
            found = regex.findall(text)
            counts[key] = int(found[-1]) if found else 0
        luts = counts["lut_only"] + counts["lut_dff"]
        ffs = counts["lut_dff"] + counts["dff_only"]
    if "ICESTORM_LC" in utilisation:
        capacity = utilisation["ICESTORM_LC"]["available"]
    return luts, ffs, capacity


def _ecp5_logic(text: str, utilisation: dict) -> tuple[int | None, int | None, int | None]:
    """From the logic utilisation report before packing."""
    found = {key: regex.findall(text) for key, regex in _ECP5_TOTAL.items()}
    luts = int(found["luts"][-1][0]) if found["luts"] else None
    ffs = int(found["ffs"][-1][0]) if found["ffs"] else None
    capacity = int(found["luts"][-1][1]) if found["luts"] else None
    return luts, ffs, capacity


#: How each family's nextpnr log counts LUTs and flip-flops (keys of ``FAMILIES``).
_LOGIC: dict[str, Callable[[str, dict], tuple[int | None, int | None, int | None]]] = {
    "ice40": _ice40_logic,
    "ecp5": _ecp5_logic,
}


def parse_nextpnr_summary(text: str, family: str | Family) -> NextpnrSummary:
    """Utilisation, LUT and flip-flop counts and post-route Fmax from a nextpnr log.

    ``family`` (a key of :data:`~fattree.synthesis.families.FAMILIES`) says where its LUT and
    FF counts are: iCE40 counts come from the LUT-FF packing report (a logic cell holds one
    LUT4 and one DFF: LUTs are the cells used as "LUT4 only" and "LUT4 and DFF"), the
    capacity is ``ICESTORM_LC``'s; ECP5 counts and capacity from the logic utilisation report
    before packing ("Total LUT4s", "Total DFFs"). The last report of each kind wins.
    """
    fam = family if isinstance(family, Family) else get_family(family)
    utilisation = parse_nextpnr_utilisation(text)
    luts, ffs, capacity = _LOGIC[fam.name](text, utilisation)
    try:
        timing = parse_nextpnr_log(text)
    except ValueError:
        timing = None
    return NextpnrSummary(
        utilisation=utilisation, luts=luts, ffs=ffs, lut_capacity=capacity, timing=timing
    )


# ---------------------------------------------------------------------------------------------
# Yosys: where it stopped


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
