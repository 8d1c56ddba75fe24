"""Strumpen and Krishnamurthy (2005), section 6: the success of a delivery round.

``sk-phases``: the probability of a successful delivery round, Phase I (proof: at least
1/2) and Phase II (proof: at least ``1 - 2/e``): exact, Model I sampled, the network.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from ..models.balls_bins import (
    P_PHASE_ONE,
    P_PHASE_TWO,
    occupancies,
    occupancy,
    phase_success,
    phase_success_bound,
    toss,
)
from ..models.collision import bins
from . import Experiment, Result, counted, lg_sizes, save_plot
from .circuit_tree_sampling import int_in, network_first_round, trial_count, wilson


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(2, 14),
        default=lg_sizes(2, 14)("6,10"),
        help="lg n values (default 6,10)",
    )
    p.add_argument(
        "--points",
        type=int_in(1, 100),
        default=5,
        metavar="K",
        help="m values per phase, 1..100 (default 5)",
    )
    p.add_argument(
        "--trials", type=trial_count(1), default=20000, help="Model I tosses per m (default 20000)"
    )
    p.add_argument(
        "--network-trials",
        type=trial_count(0),
        default=1000,
        metavar="T",
        help="first rounds on the network per m (default 1000; 0 = none)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _geometric(lo: int, hi: int, count: int) -> list[int]:
    if hi < lo:
        return []
    return sorted({int(round(x)) for x in np.geomspace(lo, hi, count)})


def _succeeded(phase: str, m: int, b: int, delivered: np.ndarray) -> np.ndarray:
    if phase == "I":
        return (b - delivered) < 2 * b / math.e
    return delivered >= m / 2


def _worst_failures(n: int, b: int, minima: dict) -> None:
    """Each phase's largest exact failure probability over every m, into ``minima``."""
    # Every m at once (one pass of the occupancy recursion).
    dists = occupancies(n, b)
    for m in range(2, n + 1):
        d = np.arange(dists[m].size)
        phase = "I" if m > b else "II"
        # The failure mass summed directly keeps its digits where it is tiny.
        fail = float(dists[m][~_succeeded(phase, m, b, d)].sum())
        key = (n, phase)
        if key not in minima or fail > minima[key][1]:
            minima[key] = (m, fail)


def _phase_row(n: int, b: int, m: int, args, rng) -> list:
    """One m: the proof's constant and bound, Model I exactly and sampled, the network."""
    phase, exact = phase_success(m, b)
    d = np.arange(min(m, b) + 1)
    fail = float(occupancy(m, b)[~_succeeded(phase, m, b, d)].sum())
    ok = _succeeded(phase, m, b, toss(m, b, args.trials, rng))
    lo, hi = wilson(int(ok.sum()), args.trials)
    net = net_lo = net_hi = None
    if args.network_trials:
        won = _succeeded(phase, m, b, network_first_round(n, m, args.network_trials, rng))
        net = float(won.mean())
        net_lo, net_hi = wilson(int(won.sum()), args.network_trials)
    constant = P_PHASE_ONE if phase == "I" else P_PHASE_TWO
    bound = phase_success_bound(m, b)
    sim = float(ok.mean())
    return [n, b, m, phase, constant, bound, exact, fail, sim, lo, hi, net, net_lo, net_hi]


def _notes(args, minima: dict, below: list) -> list[str]:
    notes = [
        "Phase I (m > b): success = fewer than 2b/e empty bins (more than b(1-2/e) delivered), "
        "proof: probability >= 1/2; Phase II (m <= b): success = at least m/2 delivered "
        "(alpha = 1/2), proof: >= 1 - 2/e = 0.264",
        "bound_m: the proof's Markov bound at this m before rounding to the constant; exact: "
        f"Model I's occupancy distribution; sim: {args.trials} tosses (Wilson 95 %); net: first "
        f"round of m random messages on the network ({args.network_trials} trials), with b of "
        "Corollary 1",
    ]
    notes += [
        f"n = {n}, Phase {ph}: largest exact failure probability {p:.3g} at m = {m} "
        f"(success {1 - p:.6f})"
        for (n, ph), (m, p) in sorted(minima.items())
    ]
    notes.append(
        "below the proof's constant: " + (str(below) if below else "nowhere (model or network)")
    )
    return notes


def _run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows, minima, below = [], {}, []
    for h in counted(progress, args.sizes):
        n = 2**h
        b = bins(n)
        progress(f"sk-phases: n = {n}, b = {b}")
        _worst_failures(n, b, minima)
        for m in _geometric(2, b, args.points) + _geometric(b + 1, n, args.points):
            row = _phase_row(n, b, m, args, rng)
            constant, exact, net_hi = row[4], row[6], row[13]
            if exact < constant or (net_hi is not None and net_hi < constant):
                below.append((n, m))
            rows.append(row)
    notes = _notes(args, minima, below)
    return Result(
        "sk-phases",
        {
            "sizes": args.sizes,
            "points": args.points,
            "trials": args.trials,
            "network_trials": args.network_trials,
            "seed": args.seed,
        },
        [
            "n",
            "b",
            "m",
            "phase",
            "proof",
            "bound_m",
            "exact",
            "exact_fail",
            "sim",
            "sim_lo",
            "sim_hi",
            "net",
            "net_lo",
            "net_hi",
        ],
        rows,
        notes,
        {
            "minima": [
                {"n": n, "phase": ph, "m": m, "fail": p}
                for (n, ph), (m, p) in sorted(minima.items())
            ],
            "below": below,
        },
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for n in sorted({r[0] for r in result.rows}):
        rs = [r for r in result.rows if r[0] == n]
        x = [r[2] for r in rs]
        (line,) = ax.plot(x, [r[6] for r in rs], "o-", ms=3, label=f"exact, n = {n}")
        ax.plot(x, [r[5] for r in rs], ":", color=line.get_color(), label=f"proof's bound, {n}")
        if rs[0][11] is not None:
            ax.plot(x, [r[11] for r in rs], "s", ms=4, mfc="none", color=line.get_color())
        ax.axvline(rs[0][1], color=line.get_color(), lw=0.5)
    ax.axhline(P_PHASE_ONE, color="k", ls="--", lw=0.8)
    ax.axhline(P_PHASE_TWO, color="k", ls="-.", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("m (vertical line: b)")
    ax.set_ylabel("Pr[successful round] (square: network)")
    ax.legend(fontsize=7)
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "sk-phases",
        "Strumpen-Krishnamurthy section 6: Phase I (>= 1/2) and II (>= 1 - 2/e) success",
        _args,
        _run,
        _plot,
    )
]
