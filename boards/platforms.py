"""The boards ``fattree build`` knows, the thin top that puts a self-test on one, and the build.

A board entry names its amaranth-boards platform class, the FPGA, the tools its bitstream
needs, and which LED shows each status output of a self-test core (``heartbeat``, ``ok``,
``error``). :class:`fattree.boards.top.BoardTop` is the only code that touches the platform: it
requests those LEDs and wires them to the core, so the core simulates without a platform.
This module imports no Amaranth at load time, so the command line starts fast.

:func:`build_bitstream` runs Amaranth's build plan (Yosys, nextpnr, the packer, all from
YoWASP) in the build folder and reads LUT/FF utilisation and Fmax from nextpnr's log with the
synthesis flow's parser (:func:`fattree.synthesis.reports.parse_nextpnr_summary`). A board's
``family`` is a key of the one family table, :data:`fattree.synthesis.families.FAMILIES`.
Amaranth runs the plan from inside the build folder with relative paths, which is what
YoWASP tools need (they cannot see absolute ``/tmp`` paths).
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..registry import Registry, resolve
from ..synthesis.reports import parse_nextpnr_summary

__all__ = [
    "Board",
    "BOARDS",
    "get_board",
    "discovered_boards",
    "UART_BAUD",
    "blink_log2_for",
    "nextpnr_figures",
    "build_bitstream",
    "BuildFailed",
    "NEXTPNR_ROUTERS",
]


@dataclass(frozen=True)
class Board:
    name: str
    #: ``"module:Class"`` of the amaranth-boards platform.
    platform: str
    #: Key of :data:`fattree.synthesis.families.FAMILIES`.
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
        platform = resolve(self.platform)()
        if self.extra_resources:
            platform.add_resources(getattr(platform, self.extra_resources))
        return platform


BOARDS: Registry[Board] = Registry(
    "board",
    [
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
    ],
)


def get_board(name: str) -> Board:
    """The board named ``name``: one of :data:`BOARDS`, or one found in amaranth-boards
    (:func:`discovered_boards`); ``ValueError`` naming every known one if there is none."""
    if name in BOARDS:
        return BOARDS[name]
    found = discovered_boards()
    if name in found:
        return found[name]
    known = ", ".join(sorted([*BOARDS, *found]))
    raise ValueError(f"unknown board {name!r}; known boards: {known}")


#: amaranth-boards device prefixes -> our family (MachXO parts need another nextpnr).
_FAMILY_OF_DEVICE = {"iCE40": "ice40", "LFE5U": "ecp5"}
_FAMILY_TOOLS = {
    "ice40": (("yosys", "nextpnr-ice40", "icepack"), "bin"),
    "ecp5": (("yosys", "nextpnr-ecp5", "ecppack"), "bit"),
}


def _slug(module: str, cls: str) -> str:
    """A board's name from its amaranth-boards module and class: ``ulx3s``,
    ``ULX3S_12F_Platform`` -> ``ulx3s-12f``; ``icestick``, ``ICEStickPlatform`` -> ``icestick``."""
    base = module.replace("_", "-")
    m = module.replace("_", "").lower()
    v = cls.removesuffix("Platform").replace("_", "").lower()
    if v.startswith(m):
        return f"{base}-{v[len(m) :]}" if v != m else base
    return f"{base}-{v}"


@functools.cache
def discovered_boards() -> dict[str, Board]:
    """Every amaranth-boards platform of the iCE40 and ECP5 families with a clock, at least one
    LED (resource ``led``) and a UART, as a :class:`Board`: the self-test's ``error`` goes to
    the last LED, ``heartbeat`` to the first and ``ok`` to the second, as far as there are
    LEDs; the status line to ``uart`` 0. Boards of :data:`BOARDS` (tuned by hand) are left
    out. Imports amaranth-boards (about a second), so only when asked."""
    import importlib
    import inspect
    import pkgutil

    import amaranth_boards

    curated = {b.platform for b in BOARDS.values()}
    found: dict[str, Board] = {}
    for info in pkgutil.iter_modules(amaranth_boards.__path__):
        try:
            module = importlib.import_module(f"amaranth_boards.{info.name}")
        except Exception:  # a board file that needs something not installed
            continue
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            path = f"amaranth_boards.{info.name}:{cls_name}"
            device = getattr(cls, "device", None)
            if cls.__module__ != module.__name__ or not isinstance(device, str):
                continue
            family = next((f for p, f in _FAMILY_OF_DEVICE.items() if device.startswith(p)), None)
            resources = getattr(cls, "resources", [])
            leds = sorted(r.number for r in resources if r.name == "led")
            uarts = [r for r in resources if r.name == "uart"]
            if (
                family is None
                or path in curated
                or not getattr(cls, "default_clk", None)
                or not leds
                or not uarts
            ):
                continue
            roles = {"error": ("led", leds[-1])}
            if len(leds) >= 2:
                roles["heartbeat"] = ("led", leds[0])
            if len(leds) >= 3:
                roles["ok"] = ("led", leds[1])
            tools, bitstream = _FAMILY_TOOLS[family]
            name = _slug(info.name, cls_name)
            found[name] = Board(
                name=name,
                platform=path,
                family=family,
                device=f"{device}-{getattr(cls, 'package', '')}".rstrip("-"),
                leds=roles,
                tools=tools,
                bitstream=bitstream,
                uart=("uart", 0),
                uart_note="the board's UART 0, 115200 8N1",
                led_notes={role: f"LED {number}" for role, (_, number) in roles.items()},
            )
    return dict(sorted(found.items()))


#: Baud rate of the status line.
UART_BAUD = 115200


def blink_log2_for(clock_hz: float, blink_hz: float = 1.0) -> int:
    """``blink_log2`` of a heartbeat that toggles about ``2 * blink_hz`` times a second."""
    return max(1, round(math.log2(clock_hz / (2 * blink_hz))))


#: nextpnr's routers (``--router``). router2 routes congested ECP5 designs that router1 does
#: not finish (the 64-leaf circuit tree: docs/boards.md).
NEXTPNR_ROUTERS = ("router1", "router2")


class BuildFailed(RuntimeError):
    """A tool of the build plan failed; the message names the log to read."""


def nextpnr_figures(text: str, family: str) -> dict:
    """LUTs, flip-flops, device cells and Fmax of a build, from its nextpnr log (``--log``).

    Returns ``{"luts", "ffs", "lut_capacity", "cells", "fmax_mhz", "target_mhz",
    "timing_pass"}``, ``cells`` being ``{kind: [used, total]}`` for the kinds in use, the rest
    as :func:`fattree.synthesis.reports.parse_nextpnr_summary` reads them (LUT and FF counts
    from the family's packing report, the post-route Fmax, ``timing_pass`` being nextpnr's
    PASS/FAIL verdict); None where the log does not say.
    """
    summary = parse_nextpnr_summary(text, family)
    timing = summary.timing
    return {
        # Only the cell kinds in use: the report lists every kind the device has.
        "cells": {
            bel: [row["used"], row["available"]]
            for bel, row in summary.utilisation.items()
            if row["used"] > 0
        },
        "luts": summary.luts,
        "ffs": summary.ffs,
        "lut_capacity": summary.lut_capacity,
        "fmax_mhz": timing.fmax_mhz if timing else None,
        "target_mhz": timing.target_mhz if timing else None,
        "timing_pass": timing.passed if timing else None,
    }


def build_bitstream(
    top, board: Board, build_dir: Path, name: str, *, nextpnr_router: str | None = None
) -> dict:
    """Synthesise, place, route and pack ``top`` for ``board`` in ``build_dir``.

    Returns the bitstream path and size, the parsed utilisation and Fmax, and the build time
    (elaboration included). The tools' own output goes to ``build_dir/build.log``. Raises
    :class:`BuildFailed` naming the log to read if a tool fails. ``nextpnr_router``
    (``router1``, ``router2``) is passed to nextpnr as ``--router``; None leaves nextpnr's
    default (router1).
    """
    from .. import toolchain

    overrides = {}
    if nextpnr_router is not None:
        if nextpnr_router not in NEXTPNR_ROUTERS:
            known = ", ".join(NEXTPNR_ROUTERS)
            raise ValueError(f"nextpnr_router must be one of {known}, not {nextpnr_router!r}")
        overrides["nextpnr_opts"] = f"--router {nextpnr_router}"
    toolchain.setup_environment()
    platform = board.make_platform()
    build_dir = Path(build_dir)
    started = time.monotonic()
    plan = platform.build(top, name=name, do_build=False, **overrides)
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
        log = root / f"{name}.tim"
        late = _timing_failure(log, board.family)
        reason = _overflow(log) or late or _first_error(console)
        step = "place and route (nextpnr)" if late else _failed_step(root, name)
        raise BuildFailed(
            f"{step} failed (exit {code})" + (f": {reason}" if reason else "") + f"; see {console}"
        )
    bitstream = root / f"{name}.{board.bitstream}"
    if not bitstream.is_file() or bitstream.stat().st_size == 0:
        raise BuildFailed(f"no bitstream was written; see {console}")
    log = root / f"{name}.tim"
    report = nextpnr_figures(log.read_text(errors="replace"), board.family)
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


def _overflow(log: Path) -> str:
    """ "does not fit: 6330 of 5280 ICESTORM_LC (120%)" when nextpnr's utilisation table
    shows a kind of cell used beyond what the device has (the point is too big)."""
    if not log.is_file():
        return ""
    from ..synthesis.reports import parse_nextpnr_utilisation

    over = [
        f"{row['used']} of {row['available']} {bel} ({100 * row['used'] / row['available']:.0f}%)"
        for bel, row in parse_nextpnr_utilisation(log.read_text(errors="replace")).items()
        if row["available"] and row["used"] > row["available"]
    ]
    return "does not fit: " + ", ".join(over) if over else ""


def _timing_failure(log: Path, family: str) -> str:
    """ "timing not met: Fmax 84.96 MHz, 100.00 MHz wanted" when nextpnr's last verdict is FAIL."""
    if not log.is_file():
        return ""
    timing = parse_nextpnr_summary(log.read_text(errors="replace"), family).timing
    if timing is None or timing.passed:
        return ""
    return (
        f"timing not met: Fmax {timing.fmax_mhz:.2f} MHz, {timing.target_mhz:.2f} MHz wanted "
        "(a lower --clock-mhz)"
    )


def _first_error(log: Path, limit: int = 160) -> str:
    """The first ``ERROR:`` line a tool wrote (e.g. nextpnr's "no BELs remaining"), short."""
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("ERROR:"):
            text = line[len("ERROR:") :].strip()
            return text if len(text) <= limit else text[: limit - 3] + "..."
    return ""
