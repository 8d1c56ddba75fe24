"""Strumpen and Krishnamurthy (2005), Fig. 7 over every shift: cyclic shifts on the circuit tree.

``shifts``: Fig. 7 over every shift ``0 < k < n`` (not a sample), beside random traffic.
"""

from __future__ import annotations

import argparse

import numpy as np

from ..fast.circuit_rounds import cyclic_shift, random_traffic
from ..models.collision import MODEL_ONE_EXACT_MAX, model_one_rounds
from . import Experiment, Result, counted, lg_sizes, positive_int, save_plot
from .circuit_tree_rounds import (
    add_cycle_arguments,
    immediate_cycles,
    lg_n_list,
    min_mean_max,
    model_one_exact_mean,
    network_rounds,
)


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(1, 20),
        default=lg_n_list("4..10"),
        help="lg n values (default 4..10; every k at 2^16 takes minutes)",
    )
    p.add_argument(
        "--trials",
        type=positive_int,
        default=2,
        help="trials (random up ports) per shift k (default 2)",
    )
    p.add_argument(
        "--random-trials",
        type=positive_int,
        default=10,
        help="trials of random traffic (m = n) beside them (default 10)",
    )
    p.add_argument(
        "--payload",
        type=positive_int,
        default=None,
        help="data words per message (default: circuits held to the end of the round)",
    )
    p.add_argument("--per-k", action="store_true", help="one row per shift k instead of per n")
    add_cycle_arguments(p)
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _trailing_zeros(k: int) -> int:
    return (k & -k).bit_length() - 1


def _every_shift(n: int, args, rng, per_k_rows: list) -> tuple[list, list, list, list]:
    """Every shift ``0 < k < n`` on the network (one row each into ``per_k_rows``): the per-k
    mean, min and max rounds and the normalised immediate-retry cycles (up to --cycles-max)."""
    means, lows, highs, imms = [], [], [], []
    for k in range(1, n):
        src, dst = cyclic_shift(n, k)
        rounds = [network_rounds(n, src, dst, rng, args.payload) for _ in range(args.trials)]
        low, mean, high = min_mean_max(rounds)
        means.append(mean)
        lows.append(low)
        highs.append(high)
        imm = None
        if n <= 2**args.cycles_max:
            imm = immediate_cycles(n, src, dst, args.length, args.seed)
            imms.append(imm)
        per_k_rows.append([n, k, args.trials, low, mean, high, imm])
    return means, lows, highs, imms


def _random_traffic_beside(n: int, args, rng) -> tuple[float, float]:
    """Mean rounds of random traffic (m = n) on the network, and Model I's mean (exact where
    it can be computed, else sampled)."""
    rand = [
        network_rounds(n, *random_traffic(n, n, rng), rng, args.payload)
        for _ in range(args.random_trials)
    ]
    exact = model_one_exact_mean(n, n)
    one = (
        exact
        if exact is not None
        else float(np.mean([model_one_rounds(n, n, rng) for _ in range(args.random_trials)]))
    )
    return float(np.mean(rand)), one


def _by_trailing_zeros(means: list[float]) -> list[dict]:
    """The per-k means grouped by the trailing zero bits of k."""
    groups = {}
    for k, mean in enumerate(means, start=1):
        groups.setdefault(_trailing_zeros(k), []).append(mean)
    return [
        {"twos": j, "shifts": len(v), "mean": float(np.mean(v)), "max": float(max(v))}
        for j, v in sorted(groups.items())
    ]


def _notes(args, rows: list) -> list[str]:
    notes = [
        f"every shift 0 < k < n, {args.trials} trials each (round-based network, m = n); "
        "mean: the mean over k of the per-k means; min/max over every k and trial (Fig. 7)",
        "k_best/k_worst: the shift with the lowest/highest mean; random_net: random "
        f"traffic, m = n, {args.random_trials} trials; model_I: Model I's mean (exact to "
        f"n = {MODEL_ONE_EXACT_MAX})",
        "imm_cycles: cycle-exact network, immediate retry, every k: mean of clock cycles / "
        "cycles of one message across the diameter; rounds/imm: mean rounds over that "
        "(section 7: 'about a factor of two')",
    ]
    for row in rows:
        verdict = "below" if row[8] < row[9] else "NOT below"
        notes.append(
            f"n = {row[0]}: the worst shift's mean {row[8]:.2f} (k = {row[7]}) is {verdict} "
            f"random traffic's {row[9]:.2f}"
        )
    return notes


def _run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows, per_k_rows, by_twos = [], [], {}
    for h in counted(progress, args.sizes):
        n = 2**h
        progress(f"shifts: n = 2^{h}, {n - 1} shifts")
        means, lows, highs, imms = _every_shift(n, args, rng, per_k_rows)
        random_net, model_one = _random_traffic_beside(n, args, rng)
        best, worst = int(np.argmin(means)), int(np.argmax(means))
        rows.append(
            [
                n,
                n - 1,
                float(np.mean(means)),
                min(lows),
                max(highs),
                best + 1,
                means[best],
                worst + 1,
                means[worst],
                random_net,
                model_one,
                float(np.mean(imms)) if imms else None,
                float(np.mean(means) / np.mean(imms)) if imms else None,
            ]
        )
        by_twos[n] = _by_trailing_zeros(means)
    notes = _notes(args, rows)
    if args.per_k:
        return Result(
            "shifts",
            _params(args),
            ["n", "k", "trials", "min", "mean", "max", "imm_cycles"],
            per_k_rows,
            notes,
            {"by_trailing_zeros": by_twos, "summary": rows},
        )
    return Result(
        "shifts",
        _params(args),
        [
            "n",
            "shifts",
            "mean",
            "min",
            "max",
            "k_best",
            "best_mean",
            "k_worst",
            "worst_mean",
            "random_net",
            "model_I",
            "imm_cycles",
            "rounds/imm",
        ],
        rows,
        notes,
        {"by_trailing_zeros": by_twos},
    )


def _params(args) -> dict:
    return {
        "sizes": args.sizes,
        "trials": args.trials,
        "random_trials": args.random_trials,
        "payload": args.payload,
        "per_k": args.per_k,
        "cycles_max": args.cycles_max,
        "length": args.length,
        "seed": args.seed,
    }


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    rows = result.extra.get("summary", result.rows)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4))
    x = [r[0] for r in rows]
    ax.errorbar(
        x,
        [r[2] for r in rows],
        yerr=[[r[2] - r[3] for r in rows], [r[4] - r[2] for r in rows]],
        fmt="o-",
        ms=3,
        capsize=2,
        label="cyclic shift, every k",
    )
    ax.plot(x, [r[9] for r in rows], "s--", ms=3, label="random traffic (network)")
    ax.plot(x, [r[10] for r in rows], "k:", label="Model I")
    imm = [(r[0], r[11]) for r in rows if r[11] is not None]
    if imm:
        ax.plot(*zip(*imm, strict=True), "^--", ms=3, label="immediate retry (normalised)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n")
    ax.set_ylabel("delivery rounds (m = n)")
    ax.legend()
    for n, groups in result.extra["by_trailing_zeros"].items():
        bx.plot([g["twos"] for g in groups], [g["mean"] for g in groups], "o-", ms=3, label=n)
    bx.set_xlabel("trailing zero bits of k")
    bx.set_ylabel("mean rounds over those k")
    bx.legend(title="n", fontsize="small")
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "shifts",
        "Strumpen-Krishnamurthy Fig. 7 over every cyclic shift k, beside random traffic",
        _args,
        _run,
        _plot,
    ),
]
