"""Plumbing shared by the subcommands: errors, output, paths, design/parameter options."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..designs import DESIGNS, PORTS, Design, get_design, parse_params

__all__ = [
    "CliError",
    "add_design_arguments",
    "add_ports_argument",
    "resolve_ports",
    "resolve_design",
    "emit",
    "writable_file",
    "progress",
]


class CliError(Exception):
    """A one-line error for the user; ``main`` prints it and exits with ``code``."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def add_design_arguments(parser, *, designs: list[str] | None = None) -> None:
    parser.add_argument("design", help="design name: " + ", ".join(designs or []))
    add_param_argument(parser)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def add_param_argument(parser) -> None:
    parser.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a design parameter (repeatable), e.g. --param width=8",
    )


def resolve_design(args) -> tuple[Design, dict[str, int]]:
    try:
        design = get_design(args.design)
        return design, parse_params(design, args.param)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def add_ports_argument(parser) -> None:
    axis = sorted(name for name, d in DESIGNS.items() if d.axis)
    parser.add_argument(
        "--ports",
        choices=PORTS,
        default="native",
        help="top-level ports: native (the design's own streams, default) or axis (AXI4-Stream "
        f"names, top <design>_axis, docs/axis.md; designs: {', '.join(axis)})",
    )


def resolve_ports(design, ports: str) -> str:
    """``ports``, or a one-line CliError if the design has no such top."""
    try:
        design.top(ports)
    except ValueError as error:
        raise CliError(str(error)) from None
    return ports


def emit(args, data: dict, text: str) -> None:
    """Print ``data`` as JSON with --json, else the human ``text``."""
    if getattr(args, "json", False):
        json.dump(data, sys.stdout, indent=2, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        print(text)


def writable_file(path: str | Path) -> Path:
    """Create the parent folder and check the file can be written, or raise CliError."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a"):
            pass
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}", code=1) from None
    return path


def writable_dir(path: str | Path) -> Path:
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-probe"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise CliError(f"cannot write to {path}: {exc.strerror or exc}", code=1) from None
    return path


def progress(message: str, *, quiet: bool = False) -> None:
    """Progress for long runs goes to stderr so --json output on stdout stays clean."""
    if not quiet:
        print(message, file=sys.stderr, flush=True)
