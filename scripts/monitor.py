"""``fattree monitor``: read a self-test board's status lines from its serial port.

Each line (``fattree.boards.uart.status_line``) is decoded into its fields; the table shows
them with the rates since the previous line (messages checked per second of host time, and
per cycle when the line has a ``cycles`` field). ``--json`` prints one JSON object per line
instead. ``--fail-on-error`` ends with exit 1 at the first line that reports an error;
``--lines N`` stops after N lines, ``--timeout S`` gives up when no line arrives for S
seconds (exit 1). Lines that do not parse or have no count of checked messages (the first
one is often cut off) are skipped.
"""

from __future__ import annotations

import json
import os
import sys
import time

from ..boards.platforms import UART_BAUD
from ..boards.uart import parse_status_line
from .common import CliError

NAME = "monitor"
HELP = "read a self-test board's UART status lines (messages, errors, latency)"


def add_arguments(parser) -> None:
    parser.add_argument("--port", required=True, help="serial port, e.g. /dev/ttyUSB1")
    parser.add_argument(
        "--baud", type=int, default=UART_BAUD, help=f"bit rate (default {UART_BAUD})"
    )
    parser.add_argument("--lines", type=int, default=None, metavar="N", help="stop after N lines")
    parser.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="S",
        help="give up when no line arrives for S seconds (default 5; 0: wait forever)",
    )
    parser.add_argument(
        "--fail-on-error",
        action="store_true",
        help="exit 1 at the first line with errors (errors > 0 or error 1)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line")


def errors_of(fields: dict[str, int]) -> int:
    """The error count of a status line (the selector's line has a flag ``error``)."""
    return fields.get("errors", fields.get("error", 0))


def checked_of(fields: dict[str, int]) -> int | None:
    return fields.get("checked", fields.get("frames"))


def run(args) -> int:
    try:
        import serial
    except ImportError:  # pragma: no cover - a dependency of the package
        raise CliError("pyserial is not installed: pip install pyserial", code=3) from None
    if args.lines is not None and args.lines < 1:
        raise CliError(f"--lines must be positive, not {args.lines}")
    try:
        port = serial.Serial(args.port, args.baud, timeout=0.2)
    except (serial.SerialException, OSError) as exc:
        errno = getattr(exc, "errno", None)
        reason = os.strerror(errno) if isinstance(errno, int) else str(exc)
        raise CliError(f"cannot open serial port {args.port}: {reason}", code=1) from None
    seen = 0
    previous = None
    buffer = b""
    last_line = time.monotonic()
    if not args.json:
        print(
            f"{'checked':>10} {'msgs/s':>10} {'msgs/cycle':>10} {'rejects':>10} "
            f"{'maxlat':>7} {'errors':>7}"
        )
    with port:
        while args.lines is None or seen < args.lines:
            chunk = port.read(256)
            now = time.monotonic()
            if not chunk:
                if args.timeout and now - last_line > args.timeout:
                    raise CliError(
                        f"no status line on {args.port} for {args.timeout:g} s ({seen} lines read)",
                        code=1,
                    )
                continue
            buffer += chunk
            while b"\n" in buffer and (args.lines is None or seen < args.lines):
                raw, buffer = buffer.split(b"\n", 1)
                try:
                    fields = parse_status_line(raw.decode("ascii"))
                except (UnicodeDecodeError, ValueError):
                    continue
                if checked_of(fields) is None:  # a line's tail, e.g. when opened mid-line
                    continue
                seen += 1
                last_line = now
                row = _row(fields, previous, now)
                previous = (fields, now)
                if args.json:
                    print(json.dumps(row, sort_keys=True), flush=True)
                else:
                    print(_text(row), flush=True)
                if args.fail_on_error and row["errors"]:
                    print(
                        f"fattree monitor: error reported: {row['errors']} "
                        f"after {row['checked']} messages checked",
                        file=sys.stderr,
                    )
                    return 1
    return 0


def _row(fields: dict[str, int], previous, now: float) -> dict:
    row = {"fields": fields, "checked": checked_of(fields), "errors": errors_of(fields)}
    row["rejects"] = fields.get("rejects")
    row["maxlat"] = fields.get("maxlat")
    row["per_second"] = row["per_cycle"] = None
    if previous is not None:
        before, then = previous
        delta = (row["checked"] - checked_of(before)) & 0xFFFFFFFF
        if now > then:
            row["per_second"] = round(delta / (now - then), 1)
        if "cycles" in fields and "cycles" in before:
            cycles = (fields["cycles"] - before["cycles"]) & 0xFFFFFFFF
            if cycles:
                row["per_cycle"] = round(delta / cycles, 4)
    return row


def _text(row: dict) -> str:
    def cell(value, width, fmt=""):
        return f"{'-' if value is None else format(value, fmt):>{width}}"

    return " ".join(
        [
            cell(row["checked"], 10),
            cell(row["per_second"], 10, ".0f"),
            cell(row["per_cycle"], 10, ".4f"),
            cell(row["rejects"], 10),
            cell(row["maxlat"], 7),
            cell(row["errors"], 7),
        ]
    )
