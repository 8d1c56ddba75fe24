"""``fattree experiment``: reproduce the papers' tables and figures."""

from __future__ import annotations

import csv
import sys

from .. import toolchain
from ..sim.experiments import registry
from .common import CliError, emit, progress, progress_display, writable_file

NAME = "experiment"
HELP = "run an experiment from the papers (tables, --json, --csv, --plot)"


def add_arguments(parser) -> None:
    parser.add_argument("--list", action="store_true", help="list the experiments")
    sub = parser.add_subparsers(dest="experiment", metavar="NAME")
    for experiment in registry().values():
        p = sub.add_parser(experiment.name, help=experiment.summary, description=experiment.summary)
        experiment.add_arguments(p)
        p.add_argument("--json", action="store_true", help="print machine-readable JSON")
        p.add_argument("--plot", metavar="FILE", help="write a plot (.png or .svg)")
        p.add_argument("--csv", metavar="FILE", help="write the table as CSV (columns, rows)")
        p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def write_csv(result, path) -> None:
    """The result's table as CSV: a header of its columns, then its rows (None is empty)."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(result.columns)
        writer.writerows(["" if c is None else c for c in row] for row in result.rows)


def _tools(args, plot) -> list[str]:
    """The optional tools this run needs, checked before it computes anything: matplotlib for
    a plot, cocotb and the simulator for an experiment's RTL half. (numba, for the compiled
    simulators, is checked when their first kernel is called, at the start of the work.)"""
    needs = ["matplotlib"] if plot is not None else []
    # The RTL half runs by default (unless --model-only) or on request (--rtl).
    rtl = args.rtl if hasattr(args, "rtl") else not getattr(args, "model_only", False)
    simulator = getattr(args, "simulator", None)
    if rtl and simulator in toolchain.TOOLS:
        needs += ["cocotb", simulator]
    return needs


def run(args) -> int:
    experiments = registry()
    if args.list or not args.experiment:
        for experiment in experiments.values():
            print(f"{experiment.name:24} {experiment.summary}")
        if not experiments:
            print("no experiments yet")
        return 0
    experiment = experiments[args.experiment]
    plot = None
    if args.plot:
        if experiment.plot is None:
            raise CliError(f"experiment {experiment.name} has no plot")
        if not args.plot.endswith((".png", ".svg", ".pdf")):
            raise CliError(f"--plot wants a .png, .svg or .pdf file, not {args.plot!r}")
        plot = writable_file(args.plot)
    csv_file = writable_file(args.csv) if getattr(args, "csv", None) else None
    toolchain.require(*_tools(args, plot))
    quiet = args.json or args.quiet
    with progress_display(quiet) as show:
        # ``show`` is the experiment's ``progress(str)`` callback; on a terminal it also
        # offers ``show.total(n)`` and ``show.advance()`` for a bar with an ETA.
        result = experiment.run(args, show)
    if plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        experiment.plot(result, str(plot))
        progress(f"wrote {plot}", quiet=quiet)
    if csv_file is not None:
        write_csv(result, csv_file)
        progress(f"wrote {csv_file}", quiet=quiet)
    emit(args, result.as_dict(), result.table())
    sys.stdout.flush()
    return 0
