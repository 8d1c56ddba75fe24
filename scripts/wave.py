"""``fattree wave``: a timing diagram (WaveDrom SVG) drawn from a real simulation trace."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..waves import DIAGRAMS, render_svg, trace, wavejson
from .common import CliError, emit, writable_file

NAME = "wave"
HELP = "draw a protocol timing diagram (WaveDrom SVG) from an RTL simulation trace"


def add_arguments(parser) -> None:
    parser.add_argument(
        "diagram",
        nargs="?",
        choices=sorted(DIAGRAMS),
        metavar="DIAGRAM",
        help="diagram name: " + ", ".join(sorted(DIAGRAMS)),
    )
    parser.add_argument("--list", action="store_true", help="list the diagrams and exit")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE.svg",
        help="output file ('-' for stdout); default build/wave/<diagram>.svg",
    )
    parser.add_argument(
        "--wavejson", action="store_true", help="write the WaveDrom source (JSON), not the SVG"
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument(
        "--build-root", default="build/wave", metavar="DIR", help="where the VCD goes"
    )


def run(args) -> int:
    if args.list or args.diagram is None:
        if args.diagram is None and not args.list:
            raise CliError("give a diagram name or --list")
        for name, d in sorted(DIAGRAMS.items()):
            print(f"{name}: {d.summary}")
        return 0
    suffix = ".json" if args.wavejson else ".svg"
    if args.output not in (None, "-") and Path(args.output).suffix.lower() != suffix:
        raise CliError(f"-o must name a {suffix} file or '-', not {args.output!r}")
    if args.output == "-" and args.json:
        raise CliError("--json and -o - would both write to stdout; give -o FILE")
    recorded = trace(args.diagram, args.build_root)
    source = wavejson(recorded)
    text = json.dumps(source, indent=1) if args.wavejson else render_svg(source)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    path = writable_file(args.output or Path(args.build_root) / f"{args.diagram}{suffix}")
    path.write_text(text)
    cycles = max(len(v) for v in recorded.rows.values())
    emit(
        args,
        {"diagram": args.diagram, "path": str(path), "cycles": cycles, "rows": recorded.rows},
        f"wrote {path} ({args.diagram}: {len(recorded.rows)} signals over {cycles} cycles)",
    )
    return 0
