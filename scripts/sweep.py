"""``fattree sweep``: a grid of synthesis or experiment runs, cached, locally or on Dask.

    fattree sweep synth circuit-tree-paper --param leaves=4,8,16 --param width=1,8 \\
        --family ice40,ecp5 --seeds 1-3 --csv build/sweep.csv --plot build/sweep-plots
    fattree sweep experiment hypercube-routing --option dims=4..6 --option procs=1 \\
        --option procs=4 --seeds 1-3
    fattree sweep synth selector --param width=1,8 --scheduler tcp://10.0.0.1:8786

See docs/synthesis.md ("Sweeps") and :mod:`fattree.sweep`.
"""

from __future__ import annotations

import csv
import json
import math
import sys

from .. import sweep, toolchain
from ..designs import DESIGNS
from ..synthesis import FAMILIES, LUT_MAPPINGS, NEXTPNR_ROUTERS
from .common import CliError, progress, progress_display, writable_dir, writable_file

NAME = "sweep"
HELP = "run a grid of synthesis or experiment jobs, cached, on local cores or a Dask cluster"


def _common(parser) -> None:
    parser.add_argument(
        "--seeds",
        metavar="LIST",
        help="seeds: N, A..B or a comma list of them (synth: nextpnr seeds, default 1; "
        "experiment: the experiment's --seed, default its own)",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help="local processes (default: the cores); ignored with --scheduler",
    )
    parser.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="run the jobs on this Dask distributed scheduler's workers instead",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=1,
        metavar="N",
        help="with --scheduler: times a job that raises is tried again (default 1); a lost "
        "worker's jobs are rerun by the scheduler itself",
    )
    parser.add_argument(
        "--cache",
        default="build/sweep/cache",
        metavar="DIR",
        help="finished jobs by their inputs (default build/sweep/cache)",
    )
    parser.add_argument("--rerun", action="store_true", help="run every job, cached or not")
    parser.add_argument(
        "--build-root",
        default="build/sweep/runs",
        metavar="DIR",
        help="each job builds in DIR/<key>/ (default build/sweep/runs; relative to each "
        "worker's working directory)",
    )
    parser.add_argument("--json", action="store_true", help="print the table and every run as JSON")
    parser.add_argument("--csv", metavar="FILE", help="write the table as CSV")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    devices = ", ".join(FAMILIES)
    p = sub.add_parser(
        "synth",
        help="designs x parameters x families x nextpnr seeds: Fmax and resources",
        description="Synthesise, place and route every point; one row per design, parameters "
        "and family with the median Fmax over the seeds, its range, and the resources.",
    )
    p.add_argument("designs", nargs="+", metavar="DESIGN", help=", ".join(sorted(DESIGNS)))
    p.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="values of a parameter (repeatable); DESIGN.NAME=... for one design only",
    )
    p.add_argument(
        "--family",
        "-f",
        default="ice40",
        metavar="F1,F2",
        help=f"FPGA families, comma-separated: {devices} (default ice40)",
    )
    p.add_argument("--freq", type=float, default=None, metavar="MHZ", help="nextpnr target")
    p.add_argument(
        "--nextpnr-router",
        choices=NEXTPNR_ROUTERS,
        default=None,
        help="nextpnr's router (default nextpnr's own, router1; router2 for large ECP5 points)",
    )
    p.add_argument(
        "--lut-mapping",
        choices=LUT_MAPPINGS,
        default="delay",
        help="Yosys's LUT mapping: delay (the family's script, default) or area (LUT4 only)",
    )
    p.add_argument(
        "--plot",
        metavar="DIR",
        help="write DIR/<design>.png: Fmax and LUTs against size per family (median, min-max)",
    )
    p.add_argument("--x", metavar="PARAM", help="the plots' x axis (default: the first swept)")
    _common(p)
    p = sub.add_parser(
        "experiment",
        help="one experiment over its options' values x seeds",
        description="Run an experiment once per grid point; the table is every run's rows "
        "after its option values and seed.",
    )
    p.add_argument("experiment", metavar="NAME", help="an experiment (fattree experiment --list)")
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="the experiment's --NAME VALUE (or NAME for a flag); repeat a NAME to sweep it",
    )
    _common(p)


def _backend(args):
    if args.scheduler:
        return sweep.DaskCluster(args.scheduler, retries=args.retries)
    return sweep.LocalPool(args.jobs)


def _grid(args) -> list:
    seeds = sweep.parse_seeds(args.seeds) if args.seeds is not None else None
    if args.kind == "synth":
        if args.freq is not None and not (math.isfinite(args.freq) and args.freq > 0):
            raise CliError(f"--freq must be a positive number of MHz, not {args.freq:g}")
        families = [f.strip() for f in args.family.split(",")]
        jobs = sweep.synth_grid(
            args.designs,
            args.param,
            families,
            seeds or [1],
            args.freq,
            args.nextpnr_router,
            args.lut_mapping,
        )
        for job in jobs:  # before any run, not after the sweep
            if args.x is not None and args.x not in dict(job.params):
                raise CliError(f"--x {args.x}: {job.name} has no parameter {args.x!r}")
        return jobs
    return sweep.experiment_grid(args.experiment, args.option, seeds)


def _done_line(record) -> str:
    where = f"{record.seconds:.1f} s on {record.worker}"
    if not record.ok:
        return f"{record.job.label()}: FAILED: {record.error}"
    r = record.result
    if record.job.kind == "synth":
        fmax = "no Fmax" if r["fmax_mhz"] is None else f"{r['fmax_mhz']:.1f} MHz"
        return f"{record.job.label()}: {fmax}, {r['resources']['luts']} LUTs ({where})"
    return f"{record.job.label()}: {len(r['rows'])} rows ({where})"


def run(args) -> int:
    try:
        backend = _backend(args)
        jobs = _grid(args)
    except sweep.SweepError as exc:
        raise CliError(str(exc)) from None
    plot_dir = writable_dir(args.plot) if getattr(args, "plot", None) else None
    csv_file = writable_file(args.csv) if args.csv else None
    # Every optional tool the sweep will need, before any job runs.
    toolchain.require(
        *(["matplotlib"] if plot_dir is not None else []),
        *(["distributed"] if getattr(args, "scheduler", None) else []),
    )
    cache = sweep.Cache(writable_dir(args.cache))
    quiet = args.json or args.quiet
    with progress_display(quiet) as show:

        def start(missing: int, cached: int) -> None:
            show(f"{len(jobs)} jobs: {cached} cached, {missing} to run on {backend.describe()}")
            show.total(missing)

        def finished(record) -> None:
            show(_done_line(record))
            show.advance()

        try:
            result = sweep.run_sweep(
                jobs,
                backend=backend,
                cache=cache,
                build_root=args.build_root,
                rerun=args.rerun,
                on_start=start,
                on_record=finished,
            )
        except sweep.SweepError as exc:
            raise CliError(str(exc), code=1) from None
    records = result.records
    if args.kind == "synth":
        columns, rows = sweep.synth_table(records)
    else:
        columns, rows = sweep.experiment_table(records)
    if csv_file is not None:
        with open(csv_file, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(columns)
            writer.writerows(["" if c is None else c for c in row] for row in rows)
        progress(f"wrote {csv_file}", quiet=quiet)
    if plot_dir is not None:
        try:
            for path in sweep.plot_synth(records, plot_dir, args.x):
                progress(f"wrote {path}", quiet=quiet)
        except sweep.SweepError as exc:
            raise CliError(str(exc)) from None
    summary = (
        f"{len(records)} jobs, {result.cached} from the cache, {result.ran} run on "
        f"{result.backend}, {len(result.failed)} failed, {result.seconds:g} s"
        + (
            f", {len(result.drifted)} on another source (see the warnings)"
            if result.drifted
            else ""
        )
    )
    if args.json:
        data = {
            "kind": args.kind,
            "columns": columns,
            "rows": rows,
            "runs": [r.as_dict() for r in records],
            "jobs": len(records),
            "cached": result.cached,
            "ran": result.ran,
            "failed": len(result.failed),
            "drifted": len(result.drifted),
            "seconds": result.seconds,
            "backend": result.backend,
        }
        json.dump(data, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(sweep.markdown(columns, rows))
        print(summary)
    for record in result.drifted:
        # Kept, and cached under what it ran; the table may mix two versions of the code.
        print(
            f"fattree sweep: warning: {record.job.label()} ran on another source or tools "
            f"than at submission ({record.drift})",
            file=sys.stderr,
        )
    if result.failed:
        # Every failure on its own line; the table above holds the jobs that finished.
        for record in result.failed:
            print(f"fattree sweep: {_done_line(record)}", file=sys.stderr)
        raise CliError(f"{len(result.failed)} of {len(records)} jobs failed", code=1)
    return 0
