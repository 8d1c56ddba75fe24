"""``fattree verilog``: write a design's Verilog."""

from __future__ import annotations

import sys

from ..designs import DESIGNS, build_dir, elaborate_verilog
from .common import add_design_arguments, emit, resolve_design, writable_file

NAME = "verilog"
HELP = "generate Verilog for a design"


def add_arguments(parser) -> None:
    add_design_arguments(parser, designs=sorted(DESIGNS))
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="output file ('-' for stdout); default build/verilog/<design>/<params>/<design>.v",
    )
    parser.add_argument(
        "--family",
        choices=["ecp5", "ice40"],
        help="let components use this FPGA family's primitives where they have a faster form "
        "(the scheduler's link memories become ECP5 DP16KD block RAMs with their output "
        "register); default: portable Verilog, as simulated",
    )


def run(args) -> int:
    design, params = resolve_design(args)
    if args.output == "-":
        sys.stdout.write(elaborate_verilog(design, params, args.family))
        return 0
    path = args.output or build_dir("verilog", design, params) / f"{design.name}.v"
    path = writable_file(path)
    text = elaborate_verilog(design, params, args.family)
    path.write_text(text)
    emit(
        args,
        {
            "design": design.name,
            "params": params,
            "family": args.family,
            "path": str(path),
            "lines": text.count("\n"),
        },
        f"wrote {path} ({design.name}, {', '.join(f'{k}={v}' for k, v in params.items())})",
    )
    return 0
