"""``fattree verilog``: write a design's Verilog."""

from __future__ import annotations

import sys
from pathlib import Path

from ..designs import DESIGNS, build_dir, elaborate_verilog, verilog_header
from ..verilog_output import waiver_file, waiver_path
from .common import (
    CliError,
    add_build_root_argument,
    add_design_arguments,
    add_ports_argument,
    emit,
    resolve_design,
    resolve_ports,
    writable_file,
)

NAME = "verilog"
HELP = "generate Verilog for a design"


def add_arguments(parser) -> None:
    add_design_arguments(parser, designs=sorted(DESIGNS))
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="output file ('-' for stdout); default <build root>/verilog/<design>/<params>/"
        "<design>.v; Verilator's lint waivers go beside it (<design>.vlt)",
    )
    parser.add_argument(
        "--family",
        choices=["ecp5", "ice40"],
        help="let components use this FPGA family's primitives where they have a faster form "
        "(the scheduler's link memories become ECP5 DP16KD block RAMs with their output "
        "register); default: portable Verilog, as simulated",
    )
    add_ports_argument(parser)
    add_src_argument(parser)
    add_build_root_argument(parser, where="verilog/<design>/<params>/, without -o")


def add_src_argument(parser) -> None:
    """``--no-src``, the same on ``fattree verilog`` and ``fattree export``."""
    parser.add_argument(
        "--no-src",
        dest="src",
        action="store_const",
        const="none",
        default="relative",
        help="leave out the src attributes (each net's Python file and line; by default "
        "named relative to its package, e.g. fattree/hdl/circuit_router.py:221)",
    )


def verilog_text(design, params: dict, family: str | None, ports: str, src: str) -> str:
    """The file a user gets: the header (version, design, parameters, the command that writes
    it again) and the Verilog."""
    header = verilog_header(design, params, family, ports, src)
    return header + elaborate_verilog(design, params, family, ports, src=src)


def run(args) -> int:
    design, params = resolve_design(args)
    ports = resolve_ports(design, args.ports)
    if args.output == "-" and args.json:
        raise CliError("--json and -o - would both write to stdout; give -o FILE.v")
    if args.output == "-":
        sys.stdout.write(verilog_text(design, params, args.family, ports, args.src))
        return 0
    suffix = "-axis" if ports == "axis" else ""
    folder = build_dir("verilog", design, params, Path(args.build_root))
    path = args.output or folder / f"{design.name}{suffix}.v"
    path = writable_file(path)
    text = verilog_text(design, params, args.family, ports, args.src)
    path.write_text(text)
    waivers = writable_file(waiver_path(path))
    waivers.write_text(waiver_file(path.name))
    emit(
        args,
        {
            "design": design.name,
            "params": params,
            "family": args.family,
            "ports": ports,
            "path": str(path),
            "waivers": str(waivers),
            "lines": text.count("\n"),
        },
        f"wrote {path} and its lint waivers {waivers.name} ({design.name}, "
        f"{', '.join(f'{k}={v}' for k, v in params.items())})",
    )
    return 0
