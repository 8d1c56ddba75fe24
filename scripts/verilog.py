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


def run(args) -> int:
    design, params = resolve_design(args)
    if args.output == "-":
        sys.stdout.write(elaborate_verilog(design, params))
        return 0
    path = args.output or build_dir("verilog", design, params) / f"{design.name}.v"
    path = writable_file(path)
    text = elaborate_verilog(design, params)
    path.write_text(text)
    emit(
        args,
        {"design": design.name, "params": params, "path": str(path), "lines": text.count("\n")},
        f"wrote {path} ({design.name}, {', '.join(f'{k}={v}' for k, v in params.items())})",
    )
    return 0
