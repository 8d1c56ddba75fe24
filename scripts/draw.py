"""``fattree draw``: a picture of a design's network (SVG), drawn from the definitions."""

from __future__ import annotations

import sys
from pathlib import Path

from ..designs import DESIGNS, build_dir
from ..draw import draw
from .common import (
    CliError,
    add_build_root_argument,
    add_design_arguments,
    emit,
    resolve_design,
    writable_file,
)

NAME = "draw"
HELP = "draw a design's network (routers, links, leaves) as SVG"


def add_arguments(parser) -> None:
    add_design_arguments(parser, designs=sorted(DESIGNS))
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE.svg",
        help="output file ('-' for stdout); default <build root>/draw/<design>/<params>.svg",
    )
    add_build_root_argument(parser, where="draw/<design>/<params>.svg, without -o")


def run(args) -> int:
    design, params = resolve_design(args)
    if args.output == "-" and args.json:
        raise CliError("--json and -o - would both write to stdout; give -o FILE.svg")
    if args.output not in (None, "-") and Path(args.output).suffix.lower() != ".svg":
        raise CliError(f"draw writes SVG: -o must name a .svg file or '-', not {args.output!r}")
    try:
        drawing = draw(design.name, params)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.output == "-":
        sys.stdout.write(drawing.svg)
        return 0
    folder = build_dir("draw", design, params, Path(args.build_root))
    path = writable_file(args.output or folder.parent / f"{folder.name}.svg")
    path.write_text(drawing.svg)
    emit(
        args,
        {
            "design": design.name,
            "params": params,
            "path": str(path),
            "leaves": drawing.leaves,
            "routers": drawing.routers,
            "links": drawing.links,
        },
        f"wrote {path} ({design.name}: {drawing.leaves} leaves, {drawing.routers} routers, "
        f"{drawing.links} links)",
    )
    return 0
