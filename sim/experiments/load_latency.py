"""Offered load against accepted throughput and latency on the circuit-switched tree.

``load-latency``: open-loop traffic (:mod:`fattree.sim.circuit_load`: Bernoulli generation
per node and cycle, unbounded source queues, warm-up then a measurement window) for each pattern,
retry strategy and load, **measured on the RTL** (the cocotb module
:mod:`fattree.sim.benches.circuit_tree_load` under Verilator or Icarus, one build per retry
strategy, every point of it in one simulator run) and on the cycle-exact model in pure
Python, on the same draws. Two rows per point, ``rtl`` and ``model``; they should be equal
(the model is cycle-exact), and a note says whether they are. Definitions: docs/circuit_tree.md,
"Load and latency".
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..circuit_load import FIGURES, LOAD_PATTERNS, Point, run_model_point
from . import Experiment, Result, counted

RETRIES = ("immediate", "round", "backoff")
DEFAULT_LOADS = "0.005,0.01,0.02,0.03,0.05,0.1"
DEFAULT_PATTERNS = "random,transpose,bit-reversal,hotspot"


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--leaves", default="8", help="nodes, a power of two 2..64 (default 8)")
    p.add_argument("--width", default="8", help="data wires per link (default 8)")
    p.add_argument("--length", default="2", help="data words per message (default 2)")
    p.add_argument(
        "--loads",
        default=DEFAULT_LOADS,
        help=f"offered loads, messages per node per cycle in (0, 1] (default {DEFAULT_LOADS})",
    )
    p.add_argument(
        "--patterns",
        default=DEFAULT_PATTERNS,
        help=f"comma list of {', '.join(LOAD_PATTERNS)} (default {DEFAULT_PATTERNS})",
    )
    p.add_argument(
        "--retry", default=",".join(RETRIES), help="comma list of immediate, round, backoff"
    )
    p.add_argument("--cycles", default="2000", help="measurement window in cycles (default 2000)")
    p.add_argument(
        "--warmup", default=None, help="warm-up cycles before the window (default cycles / 5)"
    )
    p.add_argument(
        "--stall",
        default="0",
        help="percent of cycles each receiver is not ready, at random (default 0)",
    )
    p.add_argument("--seed", default="1", help="traffic and LFSR seed (default 1)")
    p.add_argument(
        "--simulator", default="verilator", help="verilator or icarus (default verilator)"
    )
    p.add_argument("--model-only", action="store_true", help="skip the RTL: the model alone")
    p.add_argument("--build-root", default=None, help=argparse.SUPPRESS)


def _int(name: str, text: str, lo: int, hi: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"--{name} wants an integer, not {text!r}") from None
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
        raise ValueError(f"--{name} must be {bound}, not {value}")
    return value


def _choices(name: str, text: str, allowed: tuple[str, ...]) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in values if v not in allowed]
    if not values or bad:
        raise ValueError(
            f"--{name} wants a comma list of {', '.join(allowed)}, not {(bad or [text])[0]!r}"
        )
    return list(dict.fromkeys(values))


def _loads(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"--loads wants a comma list of numbers, not {text!r}") from None
    bad = [v for v in values if not 0 < v <= 1]
    if bad:
        raise ValueError(f"--loads must be above 0 and at most 1, not {bad[0]}")
    return values


def options(args) -> dict:
    """The checked options (ValueError with a one-line message for a bad one)."""
    leaves = _int("leaves", args.leaves, 2, 64)
    if leaves & (leaves - 1):
        raise ValueError(f"--leaves must be a power of two, not {leaves}")
    cycles = _int("cycles", args.cycles, 1)
    warmup = cycles // 5 if args.warmup is None else _int("warmup", args.warmup, 0)
    simulator = args.simulator
    if simulator not in ("verilator", "icarus"):
        raise ValueError(f"--simulator must be verilator or icarus, not {simulator!r}")
    return {
        "leaves": leaves,
        "width": _int("width", args.width, 1, 64),
        "length": _int("length", args.length, 1, 64),
        "loads": _loads(args.loads),
        "patterns": _choices("patterns", args.patterns, LOAD_PATTERNS),
        "retry": _choices("retry", args.retry, RETRIES),
        "cycles": cycles,
        "warmup": warmup,
        "stall": _int("stall", args.stall, 0, 99),
        "seed": _int("seed", args.seed, 1, (1 << 16) - 1),
        "simulator": simulator,
        "model_only": bool(args.model_only),
    }


def points(opts: dict) -> list[Point]:
    return [
        Point(pattern, load, opts["warmup"], opts["cycles"], opts["seed"], opts["stall"] / 100)
        for pattern in opts["patterns"]
        for load in opts["loads"]
    ]


def rtl_figures(opts: dict, retry: str, progress, root=None) -> tuple[list[dict], dict]:
    """Every point of one retry strategy on the RTL, in one simulator run."""
    from ..checks.experiment_runs import circuit_tree_bench

    params = {
        "leaves": opts["leaves"],
        "width": opts["width"],
        "length": opts["length"],
        "seed": opts["seed"],
        "retry": retry,
    }
    pts = points(opts)
    progress(f"load-latency: RTL ({opts['simulator']}), retry {retry}, {len(pts)} points")
    result = circuit_tree_bench(
        "fattree.sim.benches.circuit_tree_load",
        params,
        opts["simulator"],
        seed=opts["seed"],
        bench={"points": [p.as_dict() for p in pts]},
        root=root,
    )
    got = result.summary.get("points")
    if not result.passed or got is None or len(got) != len(pts):
        raise RuntimeError(f"the load bench failed (retry {retry}); see {result.log}")
    speed = {
        "build_seconds": result.build_seconds,
        "test_seconds": result.test_seconds,
        "cycles_per_second": result.summary.get("cycles_per_second"),
    }
    return [r["figures"] for r in got], speed


def _run(args, progress) -> Result:
    opts = options(args)
    pts = points(opts)
    leaves, width, length = opts["leaves"], opts["width"], opts["length"]
    columns = ["pattern", "retry", "load", "source", *FIGURES]
    rows = []
    speeds = {}
    differ = []
    for retry in counted(progress, opts["retry"]):
        rtl = None
        if not opts["model_only"]:
            root = Path(args.build_root) if args.build_root else None
            rtl, speeds[retry] = rtl_figures(opts, retry, progress, root)
        for k, point in enumerate(pts):
            progress(f"load-latency: model, retry {retry}, {point.pattern}, load {point.load}")
            model = run_model_point(leaves, width, length, opts["seed"], retry, point)
            head = [point.pattern, retry, point.load]
            if rtl is not None:
                rows.append([*head, "rtl", *(rtl[k][f] for f in FIGURES)])
                if rtl[k] != model:
                    differ.append(f"{point.pattern}/{retry}/{point.load}")
            rows.append([*head, "model", *(model[f] for f in FIGURES)])
    notes = [
        "load, offered, accepted: messages per node per cycle (every node in the denominator);"
        " latencies in cycles, offer -> rx handshake (mean, p50, p99, max) and tx handshake ->"
        " rx handshake (net_*); messages delivered in the window; wait_max: the longest tx"
        " handshake -> rx handshake, messages still in flight at the window's end counted by"
        " their age; worst_share: the worst-served source's deliveries over the mean's",
    ]
    if not opts["model_only"]:
        notes.append(
            "RTL and model figures are equal at every point"
            if not differ
            else f"RTL and model differ at {', '.join(differ)}"
        )
    return Result(
        "load-latency",
        {k: v for k, v in opts.items()},
        columns,
        rows,
        notes,
        extra={"rtl_equals_model": None if opts["model_only"] else not differ, "rtl": speeds},
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    col = {c: i for i, c in enumerate(result.columns)}
    patterns = list(dict.fromkeys(r[col["pattern"]] for r in result.rows))
    fig, axes = plt.subplots(2, len(patterns), figsize=(3.2 * len(patterns), 6), squeeze=False)
    for j, pattern in enumerate(patterns):
        top, bottom = axes[0][j], axes[1][j]
        retries = list(
            dict.fromkeys(r[col["retry"]] for r in result.rows if r[col["pattern"]] == pattern)
        )
        for retry in retries:
            for source, style in (("rtl", "o-"), ("model", "x--")):
                rows = [
                    r
                    for r in result.rows
                    if r[col["pattern"]] == pattern
                    and r[col["retry"]] == retry
                    and r[col["source"]] == source
                ]
                if not rows:
                    continue
                load = [r[col["load"]] for r in rows]
                label = f"{retry} ({source})"
                top.plot(load, [r[col["accepted"]] for r in rows], style, label=label, ms=4)
                lat = [r[col["mean"]] for r in rows]
                bottom.plot(load, lat, style, label=label, ms=4)
        top.set_title(pattern)
        top.set_xscale("log")
        bottom.set_xscale("log")
        bottom.set_yscale("log")
        bottom.set_xlabel("offered load (messages / node / cycle)")
        if j == 0:
            top.set_ylabel("accepted (messages / node / cycle)")
            bottom.set_ylabel("mean latency (cycles)")
        top.grid(alpha=0.3)
        bottom.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    p = result.params
    fig.suptitle(
        f"circuit tree, {p['leaves']} leaves, width {p['width']}, length {p['length']}: "
        f"window {p['cycles']} cycles"
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        "load-latency",
        "circuit tree: offered load vs accepted throughput and latency, RTL (cocotb) and model",
        _args,
        _run,
        _plot,
    )
]
