"""Strumpen and Krishnamurthy (2005), Figs. 6-7: permutation traffic on the circuit tree.

``patterns``: transpose, bit reversal and cyclic shift at ``m = n`` (Figs. 6-7).
"""

from __future__ import annotations

import argparse

import numpy as np

from ..fast.circuit_rounds import bit_reversal, cyclic_shift, delivery_rounds, transpose
from ..models.collision import model_one_rounds
from . import Experiment, Result, counted, positive_int, save_plot
from .circuit_tree_rounds import add_cycle_arguments, immediate_cycles, lg_n_list, min_mean_max


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes", type=lg_n_list, default=lg_n_list("4..12"), help="lg n values (default 4..12)"
    )
    p.add_argument(
        "--trials",
        type=positive_int,
        default=10,
        help="trials per pattern (random up ports) (default 10)",
    )
    p.add_argument(
        "--shifts",
        type=positive_int,
        default=16,
        help="cyclic shifts k sampled per n, evenly spread (default 16; all when n-1 is smaller)",
    )
    p.add_argument(
        "--payload",
        type=positive_int,
        default=None,
        help="data words per message (default: circuits held to the end of round)",
    )
    add_cycle_arguments(p)
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows = []
    for h in counted(progress, args.sizes):
        n = 2**h
        progress(f"patterns: n = 2^{h}")
        cyc = n <= 2**args.cycles_max
        model = [model_one_rounds(n, n, rng) for _ in range(args.trials)]
        rows.append([n, "model I (random)", n, *min_mean_max(model), None])
        patterns = [("bit reversal", bit_reversal(n))]
        if h % 2 == 0:
            patterns.insert(0, ("transpose", transpose(n)))
        for name, (src, dst) in patterns:
            rounds = [
                delivery_rounds(n, src, dst, rng, payload=args.payload).rounds
                for _ in range(args.trials)
            ]
            imm = immediate_cycles(n, src, dst, args.length, args.seed) if cyc else None
            rows.append([n, name, int(src.size), *min_mean_max(rounds), imm])
        count = min(args.shifts, n - 1)
        ks = sorted({int(k) for k in np.linspace(1, n - 1, count).round()})
        means, lows, highs, imms = [], [], [], []
        for k in ks:
            src, dst = cyclic_shift(n, k)
            rounds = [
                delivery_rounds(n, src, dst, rng, payload=args.payload).rounds
                for _ in range(args.trials)
            ]
            means.append(float(np.mean(rounds)))
            lows.append(min(rounds))
            highs.append(max(rounds))
            if cyc:
                imms.append(immediate_cycles(n, src, dst, args.length, args.seed))
        imm = float(np.mean(imms)) if imms else None
        rows.append(
            [n, f"cyclic shift ({len(ks)} k)", n, min(lows), float(np.mean(means)), max(highs), imm]
        )
    return Result(
        "patterns",
        {
            "sizes": args.sizes,
            "trials": args.trials,
            "shifts": args.shifts,
            "payload": args.payload,
            "seed": args.seed,
            "cycles_max": args.cycles_max,
            "length": args.length,
        },
        ["n", "pattern", "messages", "min", "mean", "max", "imm_cycles"],
        rows,
        [
            "round-based network, m = n (a node's message to itself does not enter the network)",
            "cyclic shift: mean of the per-k means; min and max over all k and trials (Fig. 7)",
            "imm_cycles: cycle-exact network, immediate retry: cycles / one diameter message",
        ],
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    names = []
    for r in result.rows:
        if r[1] not in names:
            names.append(r[1])
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in names:
        rs = [r for r in result.rows if r[1] == name]
        ax.errorbar(
            [r[0] for r in rs],
            [r[4] for r in rs],
            yerr=[[r[4] - r[3] for r in rs], [r[5] - r[4] for r in rs]],
            fmt="o-",
            ms=3,
            capsize=2,
            label=name,
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n")
    ax.set_ylabel("delivery rounds (m = n)")
    ax.legend()
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "patterns",
        "Strumpen-Krishnamurthy Figs. 6-7: transpose, bit reversal, cyclic shift at m = n",
        _args,
        _run,
        _plot,
    ),
]
