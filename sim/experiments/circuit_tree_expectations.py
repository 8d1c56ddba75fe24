"""Strumpen and Krishnamurthy (2005), equations (3)-(5): empty bins, delivered and
rejected messages in one round.

``sk-expectations``: ``E[b_e]``, ``E[D]``, ``E[R]`` against sampled collision tosses (z
against the exact variance), beside the bounds with ``e^(-m/b)`` and the network's first
round.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from ..models.balls_bins import (
    bounds_3_to_5,
    expected_delivered,
    expected_empty,
    expected_rejected,
    toss,
    var_empty,
)
from ..models.collision import bins
from . import Experiment, Result, counted, lg_sizes, save_plot
from .circuit_tree_sampling import CHECK_Z, network_first_round, trial_count


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(2, 20),
        default=lg_sizes(2, 20)("6,10"),
        help="lg n values (default 6,10); b = 2n/lg n bins",
    )
    p.add_argument(
        "--trials", type=trial_count(1), default=20000, help="tosses per point (default 20000)"
    )
    p.add_argument(
        "--network-trials",
        type=trial_count(0),
        default=200,
        metavar="T",
        help="first rounds on the network per point (default 200; 0 = none)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _messages(n: int, b: int) -> list[int]:
    return sorted({m for m in (max(2, b // 4), b // 2, b, 2 * b, n // 2, n) if 2 <= m <= n})


def _run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows, worst = [], 0.0
    points = [(2**h, m) for h in args.sizes for m in _messages(2**h, bins(2**h))]
    for n, m in counted(progress, points):
        b = bins(n)
        progress(f"sk-expectations: n = {n}, m = {m}, b = {b}")
        delivered = toss(m, b, args.trials, rng)
        mean = float(delivered.mean())
        z = (mean - expected_delivered(m, b)) / math.sqrt(var_empty(m, b) / args.trials)
        worst = max(worst, abs(z))
        be, bd, br = bounds_3_to_5(m, b)
        net = None
        if args.network_trials:
            net = float(network_first_round(n, m, args.network_trials, rng).mean())
        rows.append(
            [
                n,
                b,
                m,
                expected_empty(m, b),
                be,
                b - mean,
                expected_delivered(m, b),
                bd,
                mean,
                expected_rejected(m, b),
                br,
                m - mean,
                z,
                net,
            ]
        )
    notes = [
        f"exact: equations (3)-(5) with b = round(2n/lg n); bound: the paper's e^(-m/b) forms; "
        f"sim: {args.trials} collision tosses per row (D = b - b_e and R = m - D in every toss, "
        "so one z covers all three)",
        f"z = (sim E[D] - exact) / sqrt(Var[b_e]/trials); largest |z| = {worst:.2f} "
        f"({'within' if worst < CHECK_Z else 'BEYOND'} {CHECK_Z}, two-sided 0.1 %)",
        "net_D: messages delivered in the first round of the round-based network "
        f"({args.network_trials} trials), beside Model I's E[D] (the approximation, not a check)",
    ]
    return Result(
        "sk-expectations",
        {
            "sizes": args.sizes,
            "trials": args.trials,
            "network_trials": args.network_trials,
            "seed": args.seed,
        },
        [
            "n",
            "b",
            "m",
            "E[b_e]",
            "be_bound",
            "sim_b_e",
            "E[D]",
            "D_bound",
            "sim_D",
            "E[R]",
            "R_bound",
            "sim_R",
            "z",
            "net_D",
        ],
        rows,
        notes,
        {"max_abs_z": worst},
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for n in sorted({r[0] for r in result.rows}):
        rs = [r for r in result.rows if r[0] == n]
        x = [r[2] / r[1] for r in rs]
        (line,) = ax.plot(x, [r[6] / r[1] for r in rs], "-", label=f"E[D]/b, n = {n}")
        ax.plot(x, [r[7] / r[1] for r in rs], ":", color=line.get_color())
        ax.plot(x, [r[8] / r[1] for r in rs], "o", ms=4, color=line.get_color())
        if rs[0][13] is not None:
            ax.plot(x, [r[13] / r[1] for r in rs], "s", ms=4, mfc="none", color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_xlabel("m / b")
    ax.set_ylabel("delivered / b (line exact, dotted bound, o sim, square network)")
    ax.legend()
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "sk-expectations",
        "Strumpen-Krishnamurthy eqs. (3)-(5): E[b_e], E[D], E[R] vs sampled tosses",
        _args,
        _run,
        _plot,
    )
]
