"""``fattree mutants``: the mutation score of a design's bench (Yosys ``mutate``;
docs/verification.md)."""

from __future__ import annotations

from pathlib import Path

from ..designs import DESIGNS, get_design, parse_params
from ..mutants import POINTS, run_mutants
from .common import CliError, emit, given_once, progress_display, writable_dir

NAME = "mutants"
HELP = "mutate a design's netlist (Yosys mutate) and count the mutants its bench kills"


def add_arguments(parser) -> None:
    benched = sorted(name for name, d in DESIGNS.items() if d.bench)
    parser.add_argument(
        "design", metavar="DESIGN", help="design with a bench: " + ", ".join(benched)
    )
    parser.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a design parameter (repeatable); default: the design's small mutant point "
        + "; ".join(
            f"{n}: {', '.join(f'{k}={v}' for k, v in p.items()) or 'defaults'}"
            for n, p in POINTS.items()
        ),
    )
    parser.add_argument("--count", type=int, default=50, help="mutants (default 50)")
    parser.add_argument("--seed", type=int, default=1, help="seed of mutate's choice (default 1)")
    parser.add_argument(
        "--jobs", "-j", type=int, default=2, help="simulations in parallel (default 2)"
    )
    parser.add_argument(
        "--lock",
        metavar="FILE",
        help="hold an exclusive lock (flock) on this file for each batch of simulations, so "
        "that other heavy jobs taking the same lock wait for it",
    )
    parser.add_argument(
        "--depth",
        type=int,
        default=12,
        help="cycles from reset the equivalence check searches for a difference (default 12)",
    )
    parser.add_argument(
        "--mutant",
        type=int,
        action="append",
        metavar="K",
        help="run only mutant K of the list (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument(
        "--build-root", default="build/mutants", metavar="DIR", help="where mutants and results go"
    )


def run(args) -> int:
    try:
        design = get_design(args.design)
        if design.bench is None:
            raise ValueError(f"design {design.name} has no cocotb bench to run mutants through")
        point = {k: str(v) for k, v in POINTS.get(design.name, {}).items()}
        given = dict(item.partition("=")[::2] for item in given_once(args.param) if "=" in item)
        items = [f"{k}={v}" for k, v in point.items() if k not in given] + args.param
        params = parse_params(design, items)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    for name, most in (("count", 1000), ("jobs", 64), ("depth", 200)):
        value = getattr(args, name)
        if not 1 <= value <= most:
            raise CliError(f"--{name} must be an integer in 1..{most}, not {value}")
    for k in args.mutant or []:
        if not 1 <= k <= args.count:
            raise CliError(f"--mutant must be in 1..{args.count} (the --count), not {k}")
    root = writable_dir(args.build_root)
    with progress_display(quiet=args.json) as show:
        try:
            report = run_mutants(
                design,
                params,
                count=args.count,
                seed=args.seed,
                root=root,
                jobs=args.jobs,
                lock=Path(args.lock) if args.lock else None,
                depth=args.depth,
                only=args.mutant,
                progress=show,
            )
        except RuntimeError as exc:
            raise CliError(str(exc), code=1) from None
    emit(args, report, _text(report))
    return 0


def _text(report: dict) -> str:
    point = ", ".join(f"{k}={v}" for k, v in report["params"].items())
    score = "n/a" if report["score"] is None else f"{100 * report['score']:.1f} %"
    lines = [
        f"{report['design']} ({point}), {report['count']} mutants (seed {report['seed']}), "
        f"bench on {report['simulator']}:",
        f"  killed {report['killed']}, survived {report['survived']}, equivalent "
        f"{report['equivalent']}, timeout {report['timeout']}, error {report['error']}",
        f"  score {score} = killed / (mutants - equivalent); {report['seconds']:.0f} s",
    ]
    for m in report["mutants"]:
        if m["status"] != "killed":
            lines.append(f"  m{m['index']:03d} {m['status']:10s} {m['description']}")
            lines.append(f"       {m['location']}: {m['why']}")
    return "\n".join(lines)
