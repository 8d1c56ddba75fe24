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

The package has four parts:

* :mod:`.families`: the family table (:data:`FAMILIES`, :func:`get_family`);
* :mod:`.harness`: the place-and-route harness (:func:`make_harness`);
* :mod:`.reports`: the parsers of Yosys's and nextpnr's output, also used by the board flow;
* :mod:`.flow`: the tool runs (:func:`synthesise`, :class:`SynthResult`, :class:`SynthError`).
"""

from __future__ import annotations

from .families import FAMILIES, LUT_MAPPINGS, NEXTPNR_ROUTERS, Family, get_family
from .flow import SynthError, SynthResult, synthesise

# Private helpers the tests call directly, importable from here as before the split.
from .flow import _run as _run
from .flow import _synth_commands as _synth_commands
from .flow import _yosys_script as _yosys_script
from .harness import HARNESS_TOP, make_harness
from .reports import (
    NextpnrSummary,
    Resources,
    Timing,
    classify_cells,
    failed_in_abc9,
    parse_nextpnr_log,
    parse_nextpnr_report,
    parse_nextpnr_summary,
    parse_nextpnr_utilisation,
    parse_stat,
)

__all__ = [
    "Family",
    "FAMILIES",
    "LUT_MAPPINGS",
    "NEXTPNR_ROUTERS",
    "get_family",
    "HARNESS_TOP",
    "make_harness",
    "Resources",
    "Timing",
    "SynthError",
    "SynthResult",
    "classify_cells",
    "parse_stat",
    "parse_nextpnr_report",
    "parse_nextpnr_log",
    "parse_nextpnr_utilisation",
    "NextpnrSummary",
    "parse_nextpnr_summary",
    "failed_in_abc9",
    "synthesise",
]
