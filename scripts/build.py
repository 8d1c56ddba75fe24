"""``fattree build``: a self-testing bitstream for a real board.

The bitstream runs the design against on-chip pseudo-random traffic and an on-chip checker
(for the networks: the reference model's expected trace replayed from block RAM) and shows
the verdict on the board's LEDs (see ``docs/boards.md``). It is written to
``build/boards/<board>/<design>/<params>/`` (with the options, ``-fault`` and ``-nouart``
appended for those variants), next to the tools' logs; the command reports utilisation and
Fmax from nextpnr's log. A status line (counters, errors) goes out on the board's UART.
``--simulate CYCLES`` runs the self-test core and its UART in amaranth.sim instead and
decodes the status lines; ``--clock-mhz`` clocks the design from the PLL; ``--program``
programs the board.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import toolchain
from ..boards import SELFTESTS, get_selftest
from ..boards.platforms import (
    BOARDS,
    NEXTPNR_ROUTERS,
    BuildFailed,
    blink_log2_for,
    build_bitstream,
    discovered_boards,
    get_board,
)
from ..designs import build_dir, get_design, param_slug, parse_params
from ..spec.traffic import PATTERNS
from .common import (
    CliError,
    add_param_argument,
    emit,
    given_once,
    progress_display,
    writable_dir,
)

NAME = "build"
HELP = "build a self-testing bitstream for an FPGA board"

# Program commands to suggest, by board family.
_PROGRAM_HINT = {
    "ice40": "iceprog {path}",
    # openFPGALoader finds the cable itself; the ULX3S needs its board name.
    "ecp5": "openFPGALoader {path}",
    "ulx3s": "openFPGALoader --board ulx3s {path}",
}


def add_arguments(parser) -> None:
    designs = ", ".join(sorted(SELFTESTS))
    parser.add_argument(
        "design",
        nargs="?",
        default="selector",
        help=f"design to self-test (default selector; designs with a self-test: {designs})",
    )
    parser.add_argument(
        "--board",
        default="icebreaker",
        help="target board: "
        + ", ".join(BOARDS)
        + " (tuned; default icebreaker), or any iCE40/ECP5 board of amaranth-boards with a "
        "clock, an LED and a UART (--list-boards)",
    )
    parser.add_argument(
        "--list-boards",
        action="store_true",
        help="list the boards (tuned ones and those found in amaranth-boards) and exit",
    )
    add_param_argument(parser)
    parser.add_argument(
        "--inject-fault",
        action="store_true",
        help="flip one checked bit every ~3 s (with --simulate: ~4 times): errors must rise",
    )
    parser.add_argument(
        "--no-uart",
        action="store_true",
        help="leave out the UART status line (counters; ~170 iCE40 LUTs for the selector)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the on-chip traffic")
    parser.add_argument(
        "--pattern",
        default=None,
        help="traffic of a network self-test: random (default); circuit-tree-paper: "
        + ", ".join(PATTERNS[1:])
        + "; leiserson-tree: permutation, bit-reversal",
    )
    parser.add_argument(
        "--inject-cycles",
        type=int,
        default=None,
        metavar="N",
        help="cycles of each replayed run in which a network self-test starts new messages",
    )
    parser.add_argument(
        "--requests",
        type=int,
        default=None,
        metavar="N",
        help="SCHEDULE commands per replayed run of the scheduler self-test",
    )
    parser.add_argument(
        "--clock-mhz",
        type=_clock_mhz,
        default=None,
        metavar="F|max",
        help="clock the self-test from the board's PLL at the highest frequency <= F MHz; "
        "'max': build at the oscillator, then from the PLL just under the Fmax nextpnr found, "
        "lower until timing is met (default: the board's oscillator, no PLL)",
    )
    parser.add_argument(
        "--nextpnr-router",
        choices=NEXTPNR_ROUTERS,
        default=None,
        help="nextpnr's router (--router; default nextpnr's own, router1); router2 routes "
        "large ECP5 points that router1 does not finish",
    )
    parser.add_argument(
        "--simulate",
        type=int,
        default=None,
        metavar="CYCLES",
        help="no bitstream: simulate the self-test core and its UART for CYCLES cycles, decode "
        "the status lines and report messages checked and errors",
    )
    parser.add_argument(
        "--build-root",
        default="build",
        metavar="DIR",
        help="root of the build tree (default build)",
    )
    parser.add_argument(
        "--program",
        action="store_true",
        help="program the board after the build (iceprog for iCE40, openFPGALoader for ECP5)",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(args) -> int:
    if args.list_boards:
        return _list_boards(args)
    try:
        board = get_board(args.board)
        design = get_design(args.design)
        selftest = get_selftest(design.name)
        # The design's defaults, then the self-test's point for this board, then the user's.
        points = selftest.defaults_for(board.name, board.family)
        board_items = [f"{k}={v}" for k, v in points.items()]
        params = parse_params(design, board_items + given_once(args.param))
        options = {}
        if args.pattern is not None:
            options["pattern"] = args.pattern
        if args.inject_cycles is not None:
            options["inject_cycles"] = args.inject_cycles
        if args.requests is not None:
            options["requests"] = args.requests
        if args.simulate is not None:
            if args.simulate < 1:
                raise ValueError(
                    f"--simulate wants a positive number of cycles, not {args.simulate}"
                )
            return _simulate(args, board, design, selftest, params, options)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.clock_mhz == "max":
        data = _fastest(args, board, design, selftest, params, options)
    else:
        data = _build(args, board, design, selftest, params, options, args.clock_mhz)
    if args.program:
        data["programmed"] = _program(board, data["program"])
    emit(args, data, _text(data))
    return 0


def _build(args, board, design, selftest, params, options, clock_mhz) -> dict:
    """One bitstream at ``clock_mhz`` from the PLL (None: the oscillator); its report."""
    toolchain.require(*board.tools)
    out = build_dir(f"boards/{board.name}", design, params, Path(args.build_root))
    # Variants of the same parameters get their own folders, so no build overwrites another.
    suffix = "".join(f"-{k.replace('_', '')}{v}" for k, v in sorted(options.items()))
    suffix += f"-{clock_mhz:g}mhz" if clock_mhz else ""
    suffix += ("-fault" if args.inject_fault else "") + ("-nouart" if args.no_uart else "")
    router = args.nextpnr_router
    suffix += f"-{router}" if router else ""
    if suffix:
        out = out.with_name(param_slug(params) + suffix)
    writable_dir(out)  # before the core exists: an error leaves no unelaborated core behind
    try:
        oscillator_hz = board.make_platform().default_clk_frequency
        pll = None
        clock_hz = oscillator_hz
        if clock_mhz:
            from ..boards.clocks import pll_plan

            pll = pll_plan(board.family, oscillator_hz, clock_mhz * 1e6)
            clock_hz = pll.f_out
        blink_log2 = blink_log2_for(clock_hz)
        # The heartbeat toggles every ~0.7 s. A fault every 4 toggles (~2.8 s at 12 MHz, ~2.7 s
        # at 25 MHz): the user sees the green LED first, then the sticky red one for good.
        fault_log2 = blink_log2 + 2 if args.inject_fault else None
        core = selftest.build(
            params, seed=args.seed, blink_log2=blink_log2, fault_log2=fault_log2, **options
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None

    name = f"{design.name.replace('-', '_')}_selftest"
    from ..boards.top import BoardTop

    try:
        with progress_display(args.json) as show:
            show(f"building {name} for {board.name} ({board.device}) in {out} ...")
            top = BoardTop(core, board, uart=not args.no_uart, pll=pll)
            # Only a chosen router is passed on: the default build is today's, unchanged.
            extra = {"nextpnr_router": router} if router else {}
            result = build_bitstream(top, board, out, name, **extra)
    except BuildFailed as exc:
        raise CliError(str(exc), code=1) from None

    data = {
        "design": design.name,
        "board": board.name,
        "device": board.device,
        "params": params,
        "seed": args.seed,
        "inject_fault": args.inject_fault,
        "clock_mhz": clock_hz / 1e6,
        "oscillator_mhz": oscillator_hz / 1e6,
        "pll": dict(pll.params) if pll else None,
        "nextpnr_router": router,
        "build_dir": str(out),
        "leds": {
            role: board.led_notes.get(role, f"{r} {n}") for role, (r, n) in board.leds.items()
        },
        "uart": board.uart_note if top.uart else None,
        "program": _PROGRAM_HINT[
            "ulx3s" if board.name.startswith("ulx3s") else board.family
        ].format(path=result["bitstream"]),
        **_describe(core),
        **result,
    }
    return data


#: How far under nextpnr's Fmax ``--clock-mhz max`` aims (seeds move Fmax by up to 10 %).
_MARGIN = 0.95


def _fastest(args, board, design, selftest, params, options, tries: int = 3) -> dict:
    """``--clock-mhz max``: the oscillator build first, then from the PLL 5 % under the Fmax
    nextpnr reported, lower after a miss, higher after a hit whose Fmax allows it (at most
    ``tries`` PLL builds). The report of the fastest build that met timing, with
    ``clock_search`` listing every attempt."""
    import re

    data = _build(args, board, design, selftest, params, options, None)
    search = [{"target_mhz": data["clock_mhz"], "fmax_mhz": data["fmax_mhz"], "met": True}]
    target = round(data["fmax_mhz"] * _MARGIN, 1)
    missed: set[float] = set()
    for _ in range(tries):
        while _pll_mhz(board, data, target) in missed:
            target = round(target * _MARGIN, 1)  # the PLL makes a clock that already missed
        if target <= data["clock_mhz"] * 1.01:
            break  # no faster clock worth a build
        try:
            faster = _build(args, board, design, selftest, params, options, target)
        except CliError as exc:
            late = re.search(r"timing not met: Fmax ([0-9.]+) MHz", str(exc))
            if late is None:
                raise
            fmax = float(late.group(1))
            missed.add(_pll_mhz(board, data, target))
            search.append({"target_mhz": target, "fmax_mhz": fmax, "met": False})
            target = round(min(target, fmax) * _MARGIN, 1)
            continue
        search.append({"target_mhz": target, "fmax_mhz": faster["fmax_mhz"], "met": True})
        data = faster
        target = round(faster["fmax_mhz"] * _MARGIN, 1)  # placement differs: try higher
    data["clock_search"] = search
    return data


def _pll_mhz(board, data: dict, target_mhz: float) -> float:
    """The clock the PLL makes for ``target_mhz`` (the highest it can, not above)."""
    if board is None:  # the tests' stand-in builds: the target itself
        return target_mhz
    from ..boards.clocks import pll_plan

    return pll_plan(board.family, data["oscillator_mhz"] * 1e6, target_mhz * 1e6).f_out / 1e6


def _clock_mhz(text: str):
    """``--clock-mhz``: a frequency in MHz, or ``max``."""
    if text == "max":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants MHz or 'max', not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"wants a positive frequency, not {text!r}")
    return value


def _program(board, command: str) -> bool:
    """Run the program command if its tool is installed; else a one-line error naming it."""
    import shlex
    import shutil
    import subprocess

    argv = shlex.split(command)
    if shutil.which(argv[0]) is None:
        raise CliError(f"{argv[0]} not found; program the board with: {command}", code=3)
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        raise CliError(f"{command} failed (exit {done.returncode}): {last[0]}", code=1)
    return True


def _describe(core) -> dict:
    """What a network self-test's harness says about its run (replay memory, messages)."""
    harness = getattr(core, "harness", None)
    describe = getattr(harness, "describe", None)
    return {"selftest": describe()} if describe else {}


def _simulate(args, board, design, selftest, params, options) -> int:
    """``--simulate CYCLES``: the board's self-test core and its status line's UART in
    amaranth.sim (a fast UART: 2 cycles per bit, a line as soon as the last one is out),
    the serial line decoded back into status lines."""
    from ..boards.selftest import simulate_status

    cycles = args.simulate
    # A fault about four times in the run (the board's is every ~3 s: too rare here).
    fault_log2 = max(1, (cycles // 4).bit_length() - 1) if args.inject_fault else None
    core = selftest.build(params, seed=args.seed, blink_log2=8, fault_log2=fault_log2, **options)
    with progress_display(args.json) as show:
        show(f"simulating the {design.name} self-test for {board.name}, {cycles} cycles ...")
        result = simulate_status(core, cycles)
    lines = result["lines"]
    last = lines[-1] if lines else {}
    checked = last.get("checked", last.get("frames"))
    errors = last.get("errors", last.get("error"))
    data = {
        "design": design.name,
        "board": board.name,
        "params": params,
        "seed": args.seed,
        "inject_fault": args.inject_fault,
        "fault_log2": fault_log2,
        "simulated_cycles": cycles,
        "lines": len(lines),
        "last_line": last,
        "checked": checked,
        "errors": errors,
        **_describe(core),
    }
    if not lines:
        raise CliError(
            f"no complete status line in {cycles} cycles; simulate at least "
            f"{result['first_line_at']}",
            code=1,
        )
    verdict = "PASS" if (errors > 0) == bool(args.inject_fault) else "FAIL"
    data["verdict"] = verdict
    text = "\n".join(
        [
            f"simulated {cycles} cycles of the {design.name} self-test ({board.name} point: "
            + ", ".join(f"{k}={v}" for k, v in params.items())
            + ")"
            + (", fault injected" if args.inject_fault else ""),
            f"  {len(lines)} status lines decoded from the UART; the last:",
            "  " + " ".join(f"{k} {v}" for k, v in last.items()),
            f"  checked {checked}, errors {errors}: {verdict}"
            + (" (the injected fault must be caught)" if args.inject_fault else ""),
        ]
    )
    emit(args, data, text)
    return 0 if verdict == "PASS" else 1


def _text(d: dict) -> str:
    share = ""
    if d["luts"] is not None and d["lut_capacity"]:
        share = f" ({100 * d['luts'] / d['lut_capacity']:.1f}% of {d['lut_capacity']} LUTs)"
    fmax = "Fmax not reported"
    if d["fmax_mhz"] is not None:
        verdict = "PASS" if d["timing_pass"] else "FAIL"
        fmax = f"Fmax {d['fmax_mhz']:.1f} MHz ({verdict} at {d['target_mhz']:.0f} MHz)"
    params = ", ".join(f"{k}={v}" for k, v in d["params"].items())
    lines = [
        f"wrote {d['bitstream']} ({d['bytes']} bytes) in {d['seconds']:.1f} s",
        f"  {d['design']} ({params}) self-test on {d['board']} ({d['device']})"
        + (", fault injected" if d["inject_fault"] else ""),
        f"  {d['luts']} LUTs, {d['ffs']} FFs{share}, {fmax}",
        f"  clock {d['clock_mhz']:.2f} MHz "
        + (
            f"from the PLL ({d['oscillator_mhz']:g} MHz oscillator)"
            if d["pll"]
            else "(the board's oscillator)"
        ),
        "  LEDs: " + "; ".join(f"{role}: {where}" for role, where in d["leds"].items()),
        f"  UART status line: {d['uart']}" if d["uart"] else "  no UART status line",
        f"  program: {d['program']}",
    ]
    if d.get("clock_search"):
        steps = [
            f"{t['target_mhz']:g} MHz {'met' if t['met'] else 'missed'} (Fmax {t['fmax_mhz']:g})"
            for t in d["clock_search"]
        ]
        lines.insert(5, "  clock search: " + " -> ".join(steps))
    return "\n".join(lines)


def _list_boards(args) -> int:
    """Every board ``--board`` takes: the tuned ones, then those found in amaranth-boards."""
    rows = []
    for board, source in [(b, "tuned") for b in BOARDS.values()] + [
        (b, "amaranth-boards") for b in discovered_boards().values()
    ]:
        clock = board.make_platform().default_clk_frequency
        rows.append(
            {
                "board": board.name,
                "source": source,
                "device": board.device,
                "family": board.family,
                "clock_mhz": round(clock / 1e6, 3),
                "leds": {role: f"{r}{n}" for role, (r, n) in board.leds.items()},
                "uart": bool(board.uart),
                "platform": board.platform,
            }
        )
    lines = [f"{'board':24s} {'device':22s} {'clock':>9s}  LEDs (heartbeat, ok, error)  source"]
    for r in rows:
        leds = ", ".join(r["leds"].get(k, "-") for k in ("heartbeat", "ok", "error"))
        head = f"{r['board']:24s} {r['device']:22s} {r['clock_mhz']:6.2f} MHz"
        lines.append(f"{head}  {leds:28s} {r['source']}")
    emit(args, {"boards": rows}, "\n".join(lines))
    return 0
