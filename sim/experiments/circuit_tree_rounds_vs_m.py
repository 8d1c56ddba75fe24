"""Strumpen and Krishnamurthy (2005), Fig. 5: delivery rounds against the number of messages.

``rounds-vs-m``: Fig. 5 for any n (64 and 2^20 in the paper), every m or powers of two: the
Phase II fit ``c1 lg m + c2``, the Phase I term ``m lg n / 2n``, the paper's fit.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from ..fast.circuit_rounds import random_traffic
from ..models.collision import model_one_rounds
from . import Experiment, Result, counted, positive_int, save_plot
from .circuit_tree_rounds import (
    least_squares,
    lg_n_list,
    min_mean_max,
    model_one_exact_mean,
    network_rounds,
    paper_fit,
)


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_n_list,
        default=lg_n_list("6"),
        help="lg n values, one panel each (default 6, n = 64; the paper shows 6 and 20)",
    )
    p.add_argument(
        "--m-points",
        choices=["auto", "pow2", "all"],
        default="auto",
        help="m = 1 .. n every one (all), powers of two (pow2), or all up to n = 256 and "
        "powers of two above (auto, the default)",
    )
    p.add_argument("--trials", type=positive_int, default=10, help="trials per point (default 10)")
    p.add_argument(
        "--payload",
        type=positive_int,
        default=None,
        help="data words per message in the network (default: circuits held to the end "
        "of the round)",
    )
    p.add_argument("--no-network", action="store_true", help="Model I only (faster)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


#: ``--m-points all`` up to n = 2^12 (4096 points a size).
ALL_M_MAX = 12


def phase_boundary(n: int) -> float:
    """Section 6: Phase I for ``m > 2n / lg n`` (more balls than bins), Phase II below."""
    return 2 * n / math.log2(n)


def _message_counts(h: int, mode: str) -> list[int]:
    if mode == "all" or (mode == "auto" and h <= 8):
        return list(range(1, 2**h + 1))
    return [2**k for k in range(h + 1)]


def _fits(n: int, rows: list) -> dict:
    """The paper's reading of Fig. 5, in numbers, for one n."""
    boundary = phase_boundary(n)
    fits: dict = {"n": n, "boundary": boundary}
    for label, mean in (("I", 4), ("net", 8)):
        if rows[0][mean] is None:
            continue
        two = [r for r in rows if 2 <= r[1] <= boundary]
        if len(two) >= 2:
            lgm = [math.log2(r[1]) for r in two]
            (c1, c2), worst = least_squares([lgm, [1.0] * len(two)], [r[mean] for r in two])
            fits[f"phase2_{label}"] = {
                "c1": c1,
                "c2": c2,
                "max_residual": worst,
                "points": len(two),
            }
        many = [r for r in rows if r[1] >= 2]
        if len(many) >= 3:
            cols = [
                [math.log2(r[1]) for r in many],
                [r[1] * math.log2(n) / (2 * n) for r in many],
                [1.0] * len(many),
            ]
            (a, b, c), worst = least_squares(cols, [r[mean] for r in many])
            fits[f"sum_{label}"] = {"lg_m": a, "m_lg_n_2n": b, "one": c, "max_residual": worst}
        fit_dev = [r[mean] - r[12] for r in rows]
        fits[f"paper_fit_{label}"] = {
            "max_over": float(max(fit_dev)),
            "max_under": float(-min(fit_dev)),
        }
        over = [r for r in rows if r[1] >= 2 and r[mean] > math.log2(r[1])]
        fits[f"above_lg_m_{label}"] = [r[1] for r in over]
    return fits


def _run(args, progress) -> Result:
    if args.m_points == "all" and max(args.sizes) > ALL_M_MAX:
        raise ValueError(f"--m-points all takes n up to 2^{ALL_M_MAX}, not 2^{max(args.sizes)}")
    rng = np.random.default_rng(args.seed)
    rows, fits = [], []
    for h in args.sizes:
        n = 2**h
        mine = []
        for m in counted(progress, _message_counts(h, args.m_points)):
            progress(f"rounds-vs-m: n = {n}, m = {m}")
            one = [model_one_rounds(n, m, rng) for _ in range(args.trials)]
            if args.no_network:
                net = [None, None, None]
            else:
                net = min_mean_max(
                    [
                        network_rounds(n, *random_traffic(n, m, rng), rng, args.payload)
                        for _ in range(args.trials)
                    ]
                )
            mine.append(
                [
                    n,
                    m,
                    "II" if m <= phase_boundary(n) else "I",
                    *min_mean_max(one),
                    model_one_exact_mean(n, m),
                    *net,
                    math.log2(m),
                    m * math.log2(n) / (2 * n),
                    paper_fit(n, m),
                ]
            )
        rows += mine
        fits.append(_fits(n, mine))
    notes = [
        f"{args.trials} trials per point; Model I with b = 2n/lg n bins; net: round-based "
        "network (fast simulator); phase II for m <= 2n/lg n (section 6)",
        "paper_fit: lg m/10 + m lg n/2n + 1 (section 7 (7)); lg_m: the line c1 = 1, c2 = 0",
    ]
    for f in fits:
        text = f"n = {f['n']}: boundary 2n/lg n = {f['boundary']:.1f}"
        for label in ("net", "I"):
            if f"phase2_{label}" in f:
                c = f[f"phase2_{label}"]
                text += f"; {label} phase II ~ {c['c1']:.3f} lg m + {c['c2']:.3f}"
            if f"sum_{label}" in f:
                c = f[f"sum_{label}"]
                text += (
                    f"; {label} ~ {c['lg_m']:.3f} lg m + {c['m_lg_n_2n']:.3f} m lg n/2n "
                    f"+ {c['one']:.3f} (max residual {c['max_residual']:.2f})"
                )
        notes.append(text)
    return Result(
        "rounds-vs-m",
        {
            "sizes": args.sizes,
            "m_points": args.m_points,
            "trials": args.trials,
            "payload": args.payload,
            "no_network": args.no_network,
            "seed": args.seed,
        },
        [
            "n",
            "m",
            "phase",
            "I_min",
            "I_mean",
            "I_max",
            "I_exact",
            "net_min",
            "net_mean",
            "net_max",
            "lg_m",
            "m_lg_n_2n",
            "paper_fit",
        ],
        rows,
        notes,
        {"fits": fits},
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    sizes = sorted({r[0] for r in result.rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4), squeeze=False)
    for ax, n in zip(axes[0], sizes, strict=True):
        rs = [r for r in result.rows if r[0] == n]
        x = [r[1] for r in rs]
        for lo, mean, hi, label in ((3, 4, 5, "Model I"), (7, 8, 9, "network, round-based")):
            if rs[0][mean] is None:
                continue
            ax.errorbar(
                x,
                [r[mean] for r in rs],
                yerr=[[r[mean] - r[lo] for r in rs], [r[hi] - r[mean] for r in rs]],
                fmt="o-",
                ms=2,
                capsize=2,
                label=label,
            )
        ax.plot(x, [r[12] for r in rs], ":", label="paper fit")
        ax.plot(x, [r[10] for r in rs], "--", label="lg m")
        ax.axvline(phase_boundary(n), color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("m")
        ax.set_ylabel("delivery rounds")
        ax.set_title(f"n = {n}")
        ax.legend()
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "rounds-vs-m",
        "Strumpen-Krishnamurthy Fig. 5: rounds against m for fixed n, phase fits",
        _args,
        _run,
        _plot,
    ),
]
