"""Strumpen and Krishnamurthy (2005), Figs. 3-5: delivery rounds of random traffic.

``delivery-rounds``: Models I and II and the round-based network (fast simulator), for
``m = n/8`` and ``m = n`` over n (Figs. 3-4), or over m for one n (Fig. 5, ``--vs-m``). The
paper's curve fit of Fig. 5, ``lg m / 10 + m lg n / 2n + 1``, is printed alongside.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ..fast.circuit_rounds import delivery_rounds, random_traffic
from ..models.collision import model_one_rounds, model_two_rounds
from . import Experiment, Result, counted, positive_int, save_plot
from .circuit_tree_rounds import (
    MAX_LG,
    add_cycle_arguments,
    immediate_cycles,
    lg_n_list,
    min_mean_max,
    paper_fit,
)


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_n_list,
        default=lg_n_list("4..12"),
        help="lg n values (default 4..12; the paper goes to 20)",
    )
    p.add_argument(
        "--messages",
        choices=["n/8", "n", "both"],
        default="both",
        help="m = n/8, m = n, or both (default both; Figs. 3-4)",
    )
    p.add_argument(
        "--vs-m",
        type=int,
        metavar="LG",
        default=None,
        help="instead: fixed n = 2^LG, m = 2, 4, .., n (Fig. 5)",
    )
    p.add_argument("--trials", type=positive_int, default=10, help="trials per point (default 10)")
    p.add_argument(
        "--payload",
        type=positive_int,
        default=None,
        help="data words per message in the network (default: circuits held to "
        "the end of the round)",
    )
    p.add_argument("--no-network", action="store_true", help="models only (faster)")
    add_cycle_arguments(p)
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _point(n: int, m: int, args, rng, progress) -> list:
    one = [model_one_rounds(n, m, rng) for _ in range(args.trials)]
    two = [model_two_rounds(n, m, rng) for _ in range(args.trials)]
    row = [n, m, *min_mean_max(one), *min_mean_max(two)]
    if args.no_network:
        row += [None, None, None, None]
    else:
        net, seconds = [], []
        for trial in range(args.trials):
            src, dst = random_traffic(n, m, rng)
            started = time.perf_counter()
            net.append(delivery_rounds(n, src, dst, rng, payload=args.payload).rounds)
            seconds.append(time.perf_counter() - started)
            if n >= 2**16:
                progress(
                    f"  n = {n}, m = {m}: trial {trial + 1}/{args.trials} ({seconds[-1]:.1f} s)"
                )
        row += [*min_mean_max(net), float(np.median(seconds))]
    row += [float(np.mean(one)) / float(np.mean(two)), paper_fit(n, m)]
    row.append(_immediate_mean(n, m, args, rng))
    return row


def _immediate_mean(n: int, m: int, args, rng) -> float | None:
    """Mean normalised immediate-retry cycles over the trials, or None above --cycles-max."""
    if n > 2**args.cycles_max:
        return None
    values = []
    for trial in range(args.trials):
        src, dst = random_traffic(n, m, rng)
        values.append(immediate_cycles(n, src, dst, args.length, args.seed + trial))
    return float(np.mean(values))


def _run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows = []
    if args.vs_m is not None:
        if not 1 <= args.vs_m <= MAX_LG:
            raise ValueError(f"--vs-m must be in 1..{MAX_LG}, not {args.vs_m}")
        n = 2**args.vs_m
        points = [(n, 2**k) for k in range(1, args.vs_m + 1)]
    else:
        fractions = {"n/8": [8], "n": [1], "both": [8, 1]}[args.messages]
        points = [(2**h, 2**h // f) for f in fractions for h in args.sizes if 2**h // f >= 1]
    for n, m in counted(progress, points):
        progress(f"delivery-rounds: n = {n}, m = {m}")
        rows.append(_point(n, m, args, rng, progress))
    notes = [
        f"Model I/II: b = 2n/lg n collision bins; network: round-based fast simulator; "
        f"{args.trials} trials per point; min/mean/max",
        "paper_fit: section 7 (7), lg m/10 + m lg n/2n + 1 (the paper's fit to its Fig. 5)",
        "imm_cycles: cycle-exact network, immediate retry: clock cycles / cycles of one "
        "message across the diameter (mean over trials; Fig. 4's normalisation)",
    ]
    return Result(
        "delivery-rounds",
        {
            "sizes": args.sizes,
            "messages": args.messages,
            "vs_m": args.vs_m,
            "trials": args.trials,
            "payload": args.payload,
            "seed": args.seed,
            "cycles_max": args.cycles_max,
            "length": args.length,
        },
        [
            "n",
            "m",
            "I_min",
            "I_mean",
            "I_max",
            "II_min",
            "II_mean",
            "II_max",
            "net_min",
            "net_mean",
            "net_max",
            "net_s",
            "I/II",
            "paper_fit",
            "imm_cycles",
        ],
        rows,
        notes,
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    rows = result.rows
    vs_m = result.params.get("vs_m") is not None
    groups = {"all": rows} if vs_m else {}
    if not vs_m:
        for r in rows:
            groups.setdefault("m = n" if r[1] == r[0] else "m = n/8", []).append(r)
    fig, axes = plt.subplots(1, len(groups), figsize=(6 * len(groups), 4), squeeze=False)
    for ax, (title, rs) in zip(axes[0], groups.items(), strict=True):
        x = [r[1] if vs_m else r[0] for r in rs]
        for lo, mean, hi, label in (
            (2, 3, 4, "Model I"),
            (5, 6, 7, "Model II"),
            (8, 9, 10, "network, round-based"),
        ):
            if rs[0][mean] is None:
                continue
            ax.errorbar(
                x,
                [r[mean] for r in rs],
                yerr=[[r[mean] - r[lo] for r in rs], [r[hi] - r[mean] for r in rs]],
                fmt="o-",
                ms=3,
                capsize=2,
                label=label,
            )
        ax.plot(x, [r[13] for r in rs], ":", label="paper fit")
        imm = [(xv, r[14]) for xv, r in zip(x, rs, strict=True) if r[14] is not None]
        if imm:
            ax.plot(*zip(*imm, strict=True), "s--", ms=3, label="immediate retry (normalised)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("m" if vs_m else "n")
        ax.set_ylabel("delivery rounds")
        ax.set_title(f"n = {rs[0][0]}" if vs_m else title)
        ax.legend()
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "delivery-rounds",
        "Strumpen-Krishnamurthy Figs. 3-5: Models I, II and the round-based network",
        _args,
        _run,
        _plot,
    ),
]
