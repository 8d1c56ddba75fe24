"""The boards ``fattree build`` knows, the thin top that puts a self-test on one, and the build.

A board entry names its amaranth-boards platform class, the FPGA, the tools its bitstream
needs, and which LED shows each status output of a self-test core (``heartbeat``, ``ok``,
``error``). :class:`fattree.boards.top.BoardTop` is the only code that touches the platform: it
requests those LEDs and wires them to the core, so the core simulates without a platform.
This module imports no Amaranth at load time, so the command line starts fast.

:func:`build_bitstream` runs Amaranth's build plan (Yosys, nextpnr, the packer, all from
YoWASP) in the build folder and reads LUT/FF utilisation and Fmax from nextpnr's log.
Amaranth runs the plan from inside the build folder with relative paths, which is what
YoWASP tools need (they cannot see absolute ``/tmp`` paths).
"""

from __future__ import annotations

import importlib
import math
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Board",
    "BOARDS",
    "get_board",
    "UART_BAUD",
    "blink_log2_for",
    "parse_nextpnr_log",
    "build_bitstream",
    "BuildFailed",
]


@dataclass(frozen=True)
class Board:
    name: str
    #: ``"module:Class"`` of the amaranth-boards platform.
    platform: str
    family: str
    device: str
    #: Status output of the self-test core -> ``(resource, number)`` of its LED.
    leds: dict[str, tuple[str, int]]
    #: Names (``fattree.toolchain.TOOLS``) of the tools the bitstream needs.
    tools: tuple[str, ...]
    #: Extension of the bitstream file Amaranth writes.
    bitstream: str
    #: Attribute of the platform class listing extra resources to add (e.g. a PMOD's LEDs).
    extra_resources: str | None = None
    #: Where each LED is, for the user.
    led_notes: dict[str, str] = field(default_factory=dict)
    #: ``(resource, number)`` of the UART the status line goes to, or None.
    uart: tuple[str, int] | None = None
    #: Where the UART shows up on the host, for the user.
    uart_note: str = ""

    def make_platform(self):
        module, cls = self.platform.split(":")
        platform = getattr(importlib.import_module(module), cls)()
        if self.extra_resources:
            platform.add_resources(getattr(platform, self.extra_resources))
        return platform


BOARDS: dict[str, Board] = {
    b.name: b
    for b in [
        Board(
            name="icebreaker",
            platform="amaranth_boards.icebreaker:ICEBreakerPlatform",
            family="ice40",
            device="iCE40UP5K-SG48",
            # The main board has one red and one green user LED; the heartbeat goes to the
            # break-off LED section (PMOD2), which ships attached.
            leds={"error": ("led_r", 0), "ok": ("led_g", 0), "heartbeat": ("led_g", 1)},
            tools=("yosys", "nextpnr-ice40", "icepack"),
            bitstream="bin",
            extra_resources="break_off_pmod",
            uart=("uart", 0),
            uart_note="the FTDI's second channel (/dev/ttyUSB1 on Linux), 115200 8N1",
            led_notes={
                "error": "red user LED on the main board",
                "ok": "green user LED on the main board",
                "heartbeat": "a green LED of the break-off section (PMOD2 pin 1)",
            },
        ),
        Board(
            name="ulx3s-85f",
            platform="amaranth_boards.ulx3s:ULX3S_85F_Platform",
            family="ecp5",
            device="LFE5U-85F-6BG381C",
            leds={"heartbeat": ("led", 0), "ok": ("led", 1), "error": ("led", 7)},
            tools=("yosys", "nextpnr-ecp5", "ecppack"),
            bitstream="bit",
            uart=("uart", 0),
            uart_note="the FTDI serial port on the US1 connector, 115200 8N1",
            led_notes={
                "heartbeat": "LED 0 (the first of the row of eight)",
                "ok": "LED 1",
                "error": "LED 7 (the last of the row)",
            },
        ),
    ]
}


def get_board(name: str) -> Board:
    try:
        return BOARDS[name]
    except KeyError:
        known = ", ".join(sorted(BOARDS))
        raise ValueError(f"unknown board {name!r}; known boards: {known}") from None


#: Baud rate of the status line.
UART_BAUD = 115200


def blink_log2_for(clock_hz: float, blink_hz: float = 1.0) -> int:
    """``blink_log2`` of a heartbeat that toggles about ``2 * blink_hz`` times a second."""
    return max(1, round(math.log2(clock_hz / (2 * blink_hz))))


class BuildFailed(RuntimeError):
    """A tool of the build plan failed; the message names the log to read."""


_UTIL_RE = re.compile(r"^Info:\s+([A-Za-z0-9_]+):\s+(\d+)\s*/\s*(\d+)\s+\d+%", re.M)
_FMAX_RE = re.compile(
    r"^Info: Max frequency for clock '([^']*)': ([0-9.]+) MHz \((PASS|FAIL) at ([0-9.]+) MHz\)",
    re.M,
)
_ICE40_LC_RE = {
    "lut_only": re.compile(r"^Info:\s+(\d+) LCs used as LUT4 only", re.M),
    "lut_dff": re.compile(r"^Info:\s+(\d+) LCs used as LUT4 and DFF", re.M),
    "dff_only": re.compile(r"^Info:\s+(\d+) LCs used as DFF only", re.M),
}
_ECP5_RE = {
    "luts": re.compile(r"^Info:\s+Total LUT4s:\s+(\d+)\s*/\s*(\d+)", re.M),
    "ffs": re.compile(r"^Info:\s+Total DFFs:\s+(\d+)\s*/\s*(\d+)", re.M),
}


def parse_nextpnr_log(text: str, family: str) -> dict:
    """LUTs, flip-flops, device cells and Fmax from a nextpnr log (``--log``).

    Returns ``{"luts", "ffs", "lut_capacity", "cells", "fmax_mhz", "target_mhz",
    "timing_pass"}``, ``cells`` being ``{kind: [used, total]}`` for the kinds in use; the
    post-route (last) Fmax report wins. iCE40 LUT and FF
    counts come from the LUT-FF packing report (a logic cell holds one LUT4 and one DFF);
    ECP5 counts from the logic utilisation report before packing.
    """
    every = {name: [int(used), int(total)] for name, used, total in _UTIL_RE.findall(text)}
    # Only the cell kinds in use: the report lists every kind the device has.
    cells = {name: counts for name, counts in every.items() if counts[0] > 0}
    result: dict = {"cells": cells, "luts": None, "ffs": None, "lut_capacity": None}
    if family == "ice40":
        counts = {}
        for key, regex in _ICE40_LC_RE.items():
            found = regex.findall(text)
            counts[key] = int(found[-1]) if found else 0
        if any(_ICE40_LC_RE[k].search(text) for k in _ICE40_LC_RE):
            result["luts"] = counts["lut_only"] + counts["lut_dff"]
            result["ffs"] = counts["lut_dff"] + counts["dff_only"]
        if "ICESTORM_LC" in every:
            result["lut_capacity"] = every["ICESTORM_LC"][1]
    elif family == "ecp5":
        for key, regex in _ECP5_RE.items():
            found = regex.findall(text)
            if found:
                used, total = found[-1]
                result[key] = int(used)
                if key == "luts":
                    result["lut_capacity"] = int(total)
    else:
        raise ValueError(f"family must be 'ice40' or 'ecp5', not {family!r}")
    fmax = _FMAX_RE.findall(text)
    if fmax:
        _, mhz, verdict, target = fmax[-1]
        result.update(fmax_mhz=float(mhz), target_mhz=float(target), timing_pass=verdict == "PASS")
    else:
        result.update(fmax_mhz=None, target_mhz=None, timing_pass=None)
    return result


def build_bitstream(top, board: Board, build_dir: Path, name: str) -> dict:
    """Synthesise, place, route and pack ``top`` for ``board`` in ``build_dir``.

    Returns the bitstream path and size, the parsed utilisation and Fmax, and the build time
    (elaboration included). The tools' own output goes to ``build_dir/build.log``. Raises
    :class:`BuildFailed` naming the log to read if a tool fails.
    """
    from .. import toolchain

    toolchain.setup_environment()
    platform = board.make_platform()
    build_dir = Path(build_dir)
    started = time.monotonic()
    plan = platform.build(top, name=name, do_build=False)
    plan.extract(str(build_dir))
    root = build_dir
    console = root / "build.log"
    # Run the plan's script ourselves (as Amaranth's execute_local does: from the build
    # folder, relative paths) so the tools' chatter lands in a log, not on the terminal.
    with open(console, "w") as out:
        code = subprocess.call(
            ["sh", f"{plan.script}.sh"],
            cwd=root,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )
    seconds = time.monotonic() - started
    if code != 0:
        reason = _first_error(console)
        raise BuildFailed(
            f"{_failed_step(root, name)} failed (exit {code})"
            + (f": {reason}" if reason else "")
            + f"; see {console}"
        )
    bitstream = root / f"{name}.{board.bitstream}"
    if not bitstream.is_file() or bitstream.stat().st_size == 0:
        raise BuildFailed(f"no bitstream was written; see {console}")
    log = root / f"{name}.tim"
    report = parse_nextpnr_log(log.read_text(errors="replace"), board.family)
    return {
        "bitstream": str(bitstream),
        "bytes": bitstream.stat().st_size,
        "seconds": round(seconds, 2),
        "nextpnr_log": str(log),
        **report,
    }


def _failed_step(root: Path, name: str) -> str:
    """Which tool failed, judged by the files the plan got to write."""
    if not (root / f"{name}.json").exists():
        return "synthesis (yosys)"
    if not (root / f"{name}.tim").exists() or not any(
        (root / f"{name}.{ext}").exists() for ext in ("asc", "config")
    ):
        return "place and route (nextpnr)"
    return "bitstream packing"


def _first_error(log: Path, limit: int = 160) -> str:
    """The first ``ERROR:`` line a tool wrote (e.g. nextpnr's "no BELs remaining"), short."""
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("ERROR:"):
            text = line[len("ERROR:") :].strip()
            return text if len(text) <= limit else text[: limit - 3] + "..."
    return ""
