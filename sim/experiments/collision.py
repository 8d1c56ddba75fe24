"""Strumpen and Krishnamurthy (2005): Lemma 1 and the delivery-round figures 3-7.

* ``collision-probability``: Lemma 1's closed form against the network's routing rule
  (exact enumeration for small n, Monte Carlo with 95 % intervals above).
* ``delivery-rounds``: Models I and II and the round-based network (fast simulator), for
  ``m = n/8`` and ``m = n`` over n (Figs. 3-4), or over m for one n (Fig. 5, ``--vs-m``).
  The paper's curve fit of Fig. 5, ``lg m / 10 + m lg n / 2n + 1``, is printed alongside.
* ``patterns``: transpose, bit reversal and cyclic shift at ``m = n`` (Figs. 6-7).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ..fastsim import (
    bit_reversal,
    cyclic_shift,
    delivery_rounds,
    random_traffic,
    transpose,
)
from ..models.collision import (
    bins,
    model_one_rounds,
    model_two_rounds,
    pr_c2,
    pr_c2_bounds,
    pr_c2_exact,
    pr_c2_monte_carlo,
)
from . import Experiment, Result, counted, lg_sizes, positive_int

MAX_LG = 24
_sizes = lg_sizes(1, MAX_LG)


def _stats(values: list[int]) -> tuple[int, float, int]:
    return min(values), float(np.mean(values)), max(values)


def immediate_cycles(n: int, src, dst, length: int, seed: int) -> float:
    """Clock cycles until every message is acknowledged on the cycle-exact network with
    immediate retry, divided by the cycles of one message across the diameter alone
    (section 7's normalisation)."""
    from ..models.circuit import CircuitTreeModel, run_model

    def cycles(pairs) -> int:
        queues = [[] for _ in range(n)]
        for s, d in pairs:
            queues[int(s)].append((int(d), 0))
        return run_model(CircuitTreeModel(n, 1, length, seed, "immediate"), queues)["cycles"]

    return cycles(zip(src, dst, strict=True)) / cycles([(0, n - 1)])


def _cycle_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cycles-max",
        type=int,
        default=6,
        metavar="LG",
        help="also run the cycle-exact network with immediate retry up to n = 2^LG "
        "(default 6; 0 = never; pure Python, seconds per trial at 2^8)",
    )
    p.add_argument(
        "--length",
        type=positive_int,
        default=2,
        help="data words per message in the cycle-exact runs (default 2)",
    )


def paper_fit(n: int, m: int) -> float:
    """Section 7, item (7): the paper's curve fit ``lg m / 10 + m lg n / 2n + 1``."""
    return math.log2(m) / 10 + m * math.log2(n) / (2 * n) + 1


# -- collision-probability ------------------------------------------------------------------


def _cp_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes("2..12"),
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


def _cp_run(args, progress) -> Result:
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


def _cp_plot(result: Result, path: str) -> None:
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
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- delivery-rounds -------------------------------------------------------------------------


def _dr_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes("4..12"),
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
    _cycle_args(p)
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _dr_point(n: int, m: int, args, rng, progress) -> list:
    one = [model_one_rounds(n, m, rng) for _ in range(args.trials)]
    two = [model_two_rounds(n, m, rng) for _ in range(args.trials)]
    row = [n, m, *_stats(one), *_stats(two)]
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
        row += [*_stats(net), float(np.median(seconds))]
    row += [float(np.mean(one)) / float(np.mean(two)), paper_fit(n, m)]
    row.append(_imm(n, m, args, rng))
    return row


def _imm(n: int, m: int, args, rng) -> float | None:
    """Mean normalised immediate-retry cycles over the trials, or None above --cycles-max."""
    if n > 2**args.cycles_max:
        return None
    values = []
    for trial in range(args.trials):
        src, dst = random_traffic(n, m, rng)
        values.append(immediate_cycles(n, src, dst, args.length, args.seed + trial))
    return float(np.mean(values))


def _dr_run(args, progress) -> Result:
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
        rows.append(_dr_point(n, m, args, rng, progress))
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


def _dr_plot(result: Result, path: str) -> None:
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
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- patterns --------------------------------------------------------------------------------


def _pt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes", type=_sizes, default=_sizes("4..12"), help="lg n values (default 4..12)"
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
    _cycle_args(p)
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _pt_run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows = []
    for h in counted(progress, args.sizes):
        n = 2**h
        progress(f"patterns: n = 2^{h}")
        cyc = n <= 2**args.cycles_max
        model = [model_one_rounds(n, n, rng) for _ in range(args.trials)]
        rows.append([n, "model I (random)", n, *_stats(model), None])
        patterns = [("bit reversal", bit_reversal(n))]
        if h % 2 == 0:
            patterns.insert(0, ("transpose", transpose(n)))
        for name, (src, dst) in patterns:
            rounds = [
                delivery_rounds(n, src, dst, rng, payload=args.payload).rounds
                for _ in range(args.trials)
            ]
            imm = immediate_cycles(n, src, dst, args.length, args.seed) if cyc else None
            rows.append([n, name, int(src.size), *_stats(rounds), imm])
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


def _pt_plot(result: Result, path: str) -> None:
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
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        "collision-probability",
        "Strumpen-Krishnamurthy Lemma 1: Pr[C2] formula vs the network (exact / Monte Carlo)",
        _cp_args,
        _cp_run,
        _cp_plot,
    ),
    Experiment(
        "delivery-rounds",
        "Strumpen-Krishnamurthy Figs. 3-5: Models I, II and the round-based network",
        _dr_args,
        _dr_run,
        _dr_plot,
    ),
    Experiment(
        "patterns",
        "Strumpen-Krishnamurthy Figs. 6-7: transpose, bit reversal, cyclic shift at m = n",
        _pt_args,
        _pt_run,
        _pt_plot,
    ),
]
