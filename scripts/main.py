"""Entry point of the ``fattree`` console script."""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..toolchain import ToolMissing
from . import (
    build,
    designs,
    draw,
    experiment,
    export,
    monitor,
    mutants,
    prove,
    schedule,
    sim,
    soak,
    sweep,
    synth,
    verilog,
    wave,
)
from .common import CliError

SUBCOMMANDS = [
    designs,
    verilog,
    sim,
    soak,
    synth,
    prove,
    mutants,
    build,
    monitor,
    experiment,
    schedule,
    export,
    draw,
    wave,
    sweep,
]


def one_line(text) -> str:
    """``text`` as one line: control characters the user typed (a newline or form feed in a
    file name or a stray argument) are shown escaped, so an error stays one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


class _Parser(argparse.ArgumentParser):
    """argparse echoes stray arguments as they are; keep its error to one line."""

    def error(self, message):
        super().error(one_line(message))


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fattree",
        description="Fat-tree interconnection networks: Verilog, simulation, synthesis, boards.",
    )
    parser.add_argument("--version", action="version", version=f"fattree {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in SUBCOMMANDS:
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args) or 0
    except CliError as exc:
        print(f"fattree {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return exc.code
    except ToolMissing as exc:
        print(f"fattree {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 3
    except (ValueError, TypeError) as exc:
        # Parameter validation in the components and models raises these with a message
        # that names the parameter and the bad value.
        print(f"fattree {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours. Silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"fattree {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
