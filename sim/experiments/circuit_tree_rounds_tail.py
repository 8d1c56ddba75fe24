"""Strumpen and Krishnamurthy (2005), Theorem 1: the tail of the delivery rounds.

``sk-rounds-tail``: the tail ``Pr[rounds > t]`` (Model I exactly, sampled, and the network)
against the rounds the proof allows for each epsilon.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from ..models.balls_bins import P_PHASE_TWO, proof_rounds, rounds_tail
from ..models.collision import bins, model_one_rounds
from . import Experiment, Result, counted, save_plot
from .circuit_tree_sampling import chi2_sf, network_rounds, trial_count

#: Largest ``m * min(m, b)`` for which the exact chain is kept in memory (about 40 MB).
EXACT_CELLS = 5_000_000


def _eps_list(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or any(not 0 < v < 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"expected a comma list of epsilons in (0, 1), not {text!r}"
        )
    return values


def _m_list(text: str) -> list[str]:
    values = text.split(",")
    for v in values:
        if v not in ("b", "n") and not (v.isdigit() and int(v) >= 1):
            raise argparse.ArgumentTypeError(
                f"expected a comma list of message counts (integers, b or n), not {text!r}"
            )
    return values


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lg-n",
        type=int,
        choices=range(2, 21),
        default=10,
        metavar="H",
        help="n = 2^H nodes (default 10; 2..20)",
    )
    p.add_argument(
        "--messages",
        type=_m_list,
        default=_m_list("2,b,n"),
        help="message counts m, integers or b or n (default 2,b,n)",
    )
    p.add_argument(
        "--eps",
        type=_eps_list,
        default=_eps_list("0.5,0.1,0.01,0.001,1e-6,1e-12"),
        help="epsilons (default 0.5,0.1,0.01,0.001,1e-6,1e-12)",
    )
    p.add_argument(
        "--trials", type=trial_count(1), default=2000, help="Model I trials per m (default 2000)"
    )
    p.add_argument(
        "--network-trials",
        type=trial_count(0),
        default=500,
        metavar="T",
        help="round-based network trials per m (default 500; 0 = none)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def quantile_from_tail(tail, eps: float) -> int | None:
    """Smallest t with ``Pr[rounds > t] <= eps`` from a tail array (None if not reached)."""
    hit = np.nonzero(np.asarray(tail) <= eps)[0]
    return int(hit[0]) if hit.size else None


def empirical_tail(rounds: np.ndarray) -> np.ndarray:
    """``Pr[rounds > t]`` for ``t = 0 .. max`` from samples."""
    counts = np.bincount(rounds)
    return 1 - np.cumsum(counts) / len(rounds)


def rounds_chi2(samples: np.ndarray, tail: np.ndarray) -> tuple[float, int, float]:
    """Chi-square of sampled rounds against the exact distribution (``-diff`` of the tail),
    neighbouring outcomes pooled until each expects at least 5."""
    pmf = np.concatenate([[1 - tail[0]], -np.diff(tail)])  # pmf[t] = Pr[rounds = t]
    counts = np.bincount(samples, minlength=pmf.size)[: pmf.size]
    expect = pmf * len(samples)
    groups, obs, exp = [], 0.0, 0.0
    for o, e in zip(counts, expect, strict=True):
        obs, exp = obs + o, exp + e
        if exp >= 5:
            groups.append((obs, exp))
            obs, exp = 0.0, 0.0
    if groups and exp > 0:
        o0, e0 = groups.pop()
        groups.append((o0 + obs, e0 + exp))
    stat = sum((o - e) ** 2 / e for o, e in groups)
    df = max(1, len(groups) - 1)
    return stat, df, chi2_sf(stat, df)


def _slopes(rows, ms) -> list[tuple[int, float, float, float]]:
    """Per m, the exact quantile's growth per unit of ``ln(1/eps)`` between the two smallest
    epsilons (the coefficient Theorem 1 puts on ``ln(1/eps)``)."""
    out = []
    for m in ms:
        pts = sorted((r[1], r[2]) for r in rows if r[0] == m and r[2] is not None)
        if len(pts) >= 2 and pts[0][0] < pts[1][0]:
            (e1, q1), (e2, q2) = pts[1], pts[0]
            out.append((m, (q2 - q1) / math.log(e1 / e2), e1, e2))
    return out


def _run(args, progress) -> Result:
    n = 2**args.lg_n
    b = bins(n)
    ms = sorted({b if v == "b" else n if v == "n" else int(v) for v in args.messages})
    if ms[-1] > n:
        raise ValueError(f"--messages must be at most n = {n}, not {ms[-1]}")
    rng = np.random.default_rng(args.seed)
    rows, notes, extra = [], [], {"fits": []}
    for m in counted(progress, ms):
        progress(f"sk-rounds-tail: n = {n}, m = {m}, b = {b}")
        model = np.array([model_one_rounds(n, m, rng) for _ in range(args.trials)])
        sim_tail = empirical_tail(model)
        net_tail = None
        if args.network_trials:
            net_tail = empirical_tail(network_rounds(n, m, args.network_trials, rng))
        tail = rounds_tail(m, b) if m * min(m, b) <= EXACT_CELLS else None
        if tail is not None:
            stat, df, p = rounds_chi2(model, tail)
            mean = float(tail[:-1].sum())  # E[rounds] = sum over t of Pr[rounds > t]
            notes.append(
                f"m = {m}: Model I exact mean {mean:.3f} rounds, sampled {model.mean():.3f}; "
                f"chi-square sampled vs exact {stat:.1f} on {df} df, p = {p:.3g}"
            )
            extra["fits"].append({"m": m, "chi2": stat, "df": df, "p": p})
        for eps in args.eps:
            bound = proof_rounds(n, m, eps)
            q_exact = quantile_from_tail(tail, eps) if tail is not None else None
            reliable = eps * args.trials >= 10
            q_sim = quantile_from_tail(sim_tail, eps) if reliable else None
            q_net = None
            if net_tail is not None and eps * args.network_trials >= 10:
                q_net = quantile_from_tail(net_tail, eps)
            beyond = None
            if tail is not None:
                beyond = float(tail[bound.total]) if bound.total < tail.size else 0.0
            rows.append(
                [
                    m,
                    eps,
                    q_exact,
                    q_sim,
                    q_net,
                    bound.total,
                    round(bound.r1, 2),
                    round(bound.r2, 2),
                    beyond,
                    None if q_exact is None else bound.total / max(q_exact, 1),
                ]
            )
    slopes = _slopes(rows, ms)
    notes += [
        f"m = {m}: exact quantile grows by {sl:.3g} rounds per unit of ln(1/eps) "
        f"(eps {e1:g} -> {e2:g}); the proof's coefficient of ln(1/eps): "
        f"{(8 if m > b else 0) + 4 / P_PHASE_TWO:.2f}"
        for m, sl, e1, e2 in slopes
    ]
    extra["slopes"] = [{"m": m, "slope": sl, "eps": [e1, e2]} for m, sl, e1, e2 in slopes]
    notes[:0] = [
        f"n = {n}, b = {b}; q_*: smallest t with Pr[rounds > t] <= eps: exact (Model I's "
        f"Markov chain), sampled Model I ({args.trials} trials), round-based network "
        f"({args.network_trials} trials); sampled quantiles only where eps x trials >= 10",
        "proof: rounds Theorem 1's proof allows at 1 - eps (Phase I and II at eps/2 each, "
        "p_s = 1/2 and 1 - 2/e; docs/circuit_tree.md derives it); Pr_beyond: exact "
        "Pr[rounds > proof] (0: below 1e-300)",
    ]
    return Result(
        "sk-rounds-tail",
        {
            "lg_n": args.lg_n,
            "messages": args.messages,
            "eps": args.eps,
            "trials": args.trials,
            "network_trials": args.network_trials,
            "seed": args.seed,
        },
        [
            "m",
            "eps",
            "q_exact",
            "q_model",
            "q_net",
            "proof",
            "proof_I",
            "proof_II",
            "Pr_beyond",
            "proof/q",
        ],
        rows,
        notes,
        extra,
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for m in sorted({r[0] for r in result.rows}):
        rs = [r for r in result.rows if r[0] == m]
        eps = [r[1] for r in rs]
        (line,) = ax.plot(
            [r[2] if r[2] is not None else np.nan for r in rs], eps, "o-", ms=3, label=f"m = {m}"
        )
        ax.plot([r[5] for r in rs], eps, "--", color=line.get_color())
        net = [(r[4], r[1]) for r in rs if r[4] is not None]
        if net:
            ax.plot(*zip(*net, strict=True), "s", ms=4, mfc="none", color=line.get_color())
    ax.set_yscale("log")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("rounds t (solid: Model I exact, dashed: the proof, square: network)")
    ax.set_ylabel("epsilon = Pr[rounds > t]")
    ax.legend(fontsize=7)
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "sk-rounds-tail",
        "Strumpen-Krishnamurthy Theorem 1: the rounds tail vs O(lg m + ln 1/eps), constants",
        _args,
        _run,
        _plot,
    )
]
