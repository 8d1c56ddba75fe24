"""Strumpen and Krishnamurthy (2005), Lemma 1: the probability that two messages collide.

``collision-probability``: Lemma 1's closed form against the network's routing rule (exact
enumeration for small n, Monte Carlo with 95 % intervals above).
"""

from __future__ import annotations

import argparse

import numpy as np

from ..models.collision import bins, pr_c2, pr_c2_bounds, pr_c2_exact, pr_c2_monte_carlo
from . import Experiment, Result, counted, positive_int, save_plot
from .circuit_tree_rounds import lg_n_list


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_n_list,
        default=lg_n_list("2..12"),
        help="lg n values, A..B or a comma list (default 2..12; up to 20 is quick)",
    )
    p.add_argument(
        "--exact-max",
        type=int,
        default=4,
        metavar="LG",
        help="enumerate exactly up to lg n = LG (default 4; 5 takes ~30 s)",
    )
    p.add_argument(
        "--samples",
        type=positive_int,
        default=200_000,
        help="Monte Carlo pairs per size (default 200000)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows = []
    disagree = []
    for h in counted(progress, args.sizes):
        n = 2**h
        progress(f"collision-probability: n = 2^{h}")
        formula = pr_c2(n)
        lo, hi = pr_c2_bounds(n)
        if h <= args.exact_max:
            measured, low, high, method = (*(pr_c2_exact(n),) * 3, "exact")
        else:
            est = pr_c2_monte_carlo(n, args.samples, rng)
            measured, low, high, method = est.value, est.low, est.high, f"mc {args.samples}"
        ok = (abs(measured - formula) < 1e-12) if method == "exact" else low <= formula <= high
        if not ok:
            disagree.append(n)
        rows.append(
            [
                n,
                formula,
                measured,
                low,
                high,
                method,
                lo,
                hi,
                bins(n),
                1 / formula if formula > 0 else float("inf"),
            ]
        )
    notes = [
        "formula: Lemma 1; measured: the network's routing rule (up port = random bit XOR "
        "entry port; collision = a shared downstream wire in the round)",
        "bounds lg n/3n .. lg n/2n from Lemma 1; b = 2n/lg n bins (Corollary 1)",
    ]
    if disagree:
        notes.append(f"formula outside the measured interval at n = {disagree}")
    return Result(
        "collision-probability",
        {
            "sizes": args.sizes,
            "exact_max": args.exact_max,
            "samples": args.samples,
            "seed": args.seed,
        },
        [
            "n",
            "formula",
            "measured",
            "ci_low",
            "ci_high",
            "method",
            "bound_lo",
            "bound_hi",
            "bins",
            "1/Pr",
        ],
        rows,
        notes,
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    n = [r[0] for r in result.rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(n, [r[1] for r in result.rows], "-", label="Lemma 1")
    ax.errorbar(
        n,
        [r[2] for r in result.rows],
        yerr=[[r[2] - r[3] for r in result.rows], [r[4] - r[2] for r in result.rows]],
        fmt="o",
        ms=3,
        label="network (measured)",
    )
    ax.loglog(n, [r[6] for r in result.rows], ":", label="lg n / 3n")
    ax.loglog(n, [r[7] for r in result.rows], ":", label="lg n / 2n")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n")
    ax.set_ylabel("Pr[C2]")
    ax.legend()
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "collision-probability",
        "Strumpen-Krishnamurthy Lemma 1: Pr[C2] formula vs the network (exact / Monte Carlo)",
        _args,
        _run,
        _plot,
    ),
]
