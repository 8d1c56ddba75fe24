"""Strumpen and Krishnamurthy (2005), Fig. 3 in full: the collision models compared.

``model-ratios``: Models I and II, min/mean/max, the ratios of the means and of the maxima
and their means over n; Model I's exact mean beside the sampled one.
"""

from __future__ import annotations

import argparse

import numpy as np

from ..models.collision import model_one_rounds, model_two_rounds
from . import Experiment, Result, counted, positive_int, save_plot
from .circuit_tree_rounds import lg_n_list, message_points, min_mean_max, model_one_exact_mean


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_n_list,
        default=lg_n_list("4..12"),
        help="lg n values (default 4..12; the paper's Fig. 3 is 4..20)",
    )
    p.add_argument(
        "--messages",
        choices=["n/8", "n", "both"],
        default="both",
        help="m = n/8, m = n, or both (default both)",
    )
    p.add_argument("--trials", type=positive_int, default=20, help="trials per point (default 20)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _ratio_summary(rows, col: int) -> dict:
    values = [r[col] for r in rows]
    return {
        "mean": float(np.mean(values)),
        "min": float(min(values)),
        "max": float(max(values)),
        "std": float(np.std(values)),
    }


def _run(args, progress) -> Result:
    points = message_points(args.sizes, args.messages)
    if not points:
        raise ValueError("no size has m = n/8 >= 1: --messages n/8 needs n >= 8 (--sizes 3..)")
    rng = np.random.default_rng(args.seed)
    rows = []
    for n, m in counted(progress, points):
        progress(f"model-ratios: n = {n}, m = {m}")
        one = [model_one_rounds(n, m, rng) for _ in range(args.trials)]
        two = [model_two_rounds(n, m, rng) for _ in range(args.trials)]
        i_stats, ii_stats = min_mean_max(one), min_mean_max(two)
        rows.append(
            [
                n,
                m,
                *i_stats,
                model_one_exact_mean(n, m),
                *ii_stats,
                i_stats[1] / ii_stats[1],
                i_stats[2] / ii_stats[2],
            ]
        )
    ratios = {}
    notes = [
        f"b = 2n/lg n collision bins; {args.trials} trials per point; min/mean/max; "
        "I_exact: Model I's expected rounds from its exact distribution (Markov chain)",
        "I/II: ratio of the mean rounds; Imax/IImax: ratio of the maxima (Fig. 3)",
    ]
    for label, pick in (("n/8", lambda r: r[1] * 8 == r[0]), ("n", lambda r: r[1] == r[0])):
        group = [r for r in rows if pick(r)]
        if not group:
            continue
        ratios[label] = {"I/II": _ratio_summary(group, 9), "Imax/IImax": _ratio_summary(group, 10)}
        for key, summary in ratios[label].items():
            notes.append(
                f"m = {label}: {key} mean over n {summary['mean']:.3f} "
                f"(min {summary['min']:.3f}, max {summary['max']:.3f}, sd {summary['std']:.3f})"
            )
    return Result(
        "model-ratios",
        {
            "sizes": args.sizes,
            "messages": args.messages,
            "trials": args.trials,
            "seed": args.seed,
        },
        [
            "n",
            "m",
            "I_min",
            "I_mean",
            "I_max",
            "I_exact",
            "II_min",
            "II_mean",
            "II_max",
            "I/II",
            "Imax/IImax",
        ],
        rows,
        notes,
        {"ratios": ratios},
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    groups = {}
    for r in result.rows:
        groups.setdefault("m = n" if r[1] == r[0] else "m = n/8", []).append(r)
    fig, axes = plt.subplots(2, len(groups), figsize=(6 * len(groups), 7), squeeze=False)
    for col, (title, rs) in enumerate(groups.items()):
        ax, bx = axes[0][col], axes[1][col]
        x = [r[0] for r in rs]
        for lo, mean, hi, label in ((2, 3, 4, "Model I"), (6, 7, 8, "Model II")):
            ax.errorbar(
                x,
                [r[mean] for r in rs],
                yerr=[[r[mean] - r[lo] for r in rs], [r[hi] - r[mean] for r in rs]],
                fmt="o-",
                ms=3,
                capsize=2,
                label=label,
            )
        exact = [(xv, r[5]) for xv, r in zip(x, rs, strict=True) if r[5] is not None]
        if exact:
            ax.plot(*zip(*exact, strict=True), "k:", label="Model I, exact mean")
        ax.set_title(title)
        ax.set_ylabel("delivery rounds")
        ax.legend()
        for c, label in ((9, "I/II (means)"), (10, "Imax/IImax")):
            line = bx.plot(x, [r[c] for r in rs], "o-", ms=3, label=label)[0]
            bx.axhline(np.mean([r[c] for r in rs]), color=line.get_color(), ls="--")
        bx.set_ylabel("ratio (dashed: mean over n)")
        bx.legend()
        for a in (ax, bx):
            a.set_xscale("log", base=2)
            a.set_xlabel("n")
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "model-ratios",
        "Strumpen-Krishnamurthy Fig. 3 in full: Models I and II, ratios of means and maxima",
        _args,
        _run,
        _plot,
    ),
]
