"""Strumpen and Krishnamurthy (2005): Lemma 1 and the delivery-round figures 3-7.

* ``collision-probability``: Lemma 1's closed form against the network's routing rule
  (exact enumeration for small n, Monte Carlo with 95 % intervals above).
* ``delivery-rounds``: Models I and II and the round-based network (fast simulator), for
  ``m = n/8`` and ``m = n`` over n (Figs. 3-4), or over m for one n (Fig. 5, ``--vs-m``).
  The paper's curve fit of Fig. 5, ``lg m / 10 + m lg n / 2n + 1``, is printed alongside.
* ``patterns``: transpose, bit reversal and cyclic shift at ``m = n`` (Figs. 6-7).
* ``model-ratios``: Fig. 3 in full: Models I and II, min/mean/max, the ratios of the means
  and of the maxima and their means over n; Model I's exact mean beside the sampled one.
* ``rounds-vs-m``: Fig. 5 for any n (64 and 2^20 in the paper), every m or powers of two:
  the Phase II fit ``c1 lg m + c2``, the Phase I term ``m lg n / 2n``, the paper's fit.
* ``shifts``: Fig. 7 over every shift ``0 < k < n`` (not a sample), beside random traffic.
* ``fewer-messages``: "for m < n the permutations take strictly fewer rounds", measured:
  random subsets of m messages of each pattern against the whole pattern, paired per trial.

The hot-spot conjecture ``O(m_1 + lg m_r)`` is ``hot-spots`` in :mod:`.sk_hotspots`.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ..fast.circuit_rounds import (
    bit_reversal,
    cyclic_shift,
    delivery_rounds,
    random_traffic,
    transpose,
)
from ..models.collision import (
    MODEL_ONE_EXACT_MAX,
    bins,
    model_one_distribution,
    model_one_rounds,
    model_two_rounds,
    pr_c2,
    pr_c2_bounds,
    pr_c2_exact,
    pr_c2_monte_carlo,
)
from . import Experiment, Result, counted, int_list, lg_sizes, positive_int

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


# -- shared by the figure experiments ---------------------------------------------------------


def mean_ci(values) -> tuple[float, float]:
    """Mean and the half-width of its 95 % interval (normal approximation; 0 for one value)."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return float(values.mean()), 0.0
    return float(values.mean()), float(1.96 * values.std(ddof=1) / math.sqrt(values.size))


def model_one_exact_mean(n: int, m: int) -> float | None:
    """Model I's expected rounds computed exactly (None above ``MODEL_ONE_EXACT_MAX``)."""
    if m > MODEL_ONE_EXACT_MAX:
        return None
    p = model_one_distribution(n, m)
    return float(np.dot(np.arange(1, p.size + 1), p))


def least_squares(columns: list, y) -> tuple[list[float], float]:
    """``y ~ sum c_i columns_i``: the coefficients and the largest absolute residual."""
    a = np.column_stack([np.asarray(c, dtype=float) for c in columns])
    y = np.asarray(y, dtype=float)
    coef = np.linalg.lstsq(a, y, rcond=None)[0]
    return [float(c) for c in coef], float(np.max(np.abs(a @ coef - y)))


def _net_rounds(n, src, dst, rng, payload) -> int:
    return delivery_rounds(n, src, dst, rng, payload=payload).rounds


def _points(sizes, messages) -> list[tuple[int, int]]:
    fractions = {"n/8": [8], "n": [1], "both": [8, 1]}[messages]
    return [(2**h, 2**h // f) for f in fractions for h in sizes if 2**h // f >= 1]


# -- model-ratios (Fig. 3) ---------------------------------------------------------------------


def _mr_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes("4..12"),
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


def _mr_run(args, progress) -> Result:
    points = _points(args.sizes, args.messages)
    if not points:
        raise ValueError("no size has m = n/8 >= 1: --messages n/8 needs n >= 8 (--sizes 3..)")
    rng = np.random.default_rng(args.seed)
    rows = []
    for n, m in counted(progress, points):
        progress(f"model-ratios: n = {n}, m = {m}")
        one = [model_one_rounds(n, m, rng) for _ in range(args.trials)]
        two = [model_two_rounds(n, m, rng) for _ in range(args.trials)]
        i_stats, ii_stats = _stats(one), _stats(two)
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


def _mr_plot(result: Result, path: str) -> None:
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
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- rounds-vs-m (Fig. 5) ----------------------------------------------------------------------


def _vm_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes("6"),
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


def _vm_ms(h: int, mode: str) -> list[int]:
    if mode == "all" or (mode == "auto" and h <= 8):
        return list(range(1, 2**h + 1))
    return [2**k for k in range(h + 1)]


def _vm_fits(n: int, rows: list) -> dict:
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


def _vm_run(args, progress) -> Result:
    if args.m_points == "all" and max(args.sizes) > ALL_M_MAX:
        raise ValueError(f"--m-points all takes n up to 2^{ALL_M_MAX}, not 2^{max(args.sizes)}")
    rng = np.random.default_rng(args.seed)
    rows, fits = [], []
    for h in args.sizes:
        n = 2**h
        mine = []
        for m in counted(progress, _vm_ms(h, args.m_points)):
            progress(f"rounds-vs-m: n = {n}, m = {m}")
            one = [model_one_rounds(n, m, rng) for _ in range(args.trials)]
            if args.no_network:
                net = [None, None, None]
            else:
                net = _stats(
                    [
                        _net_rounds(n, *random_traffic(n, m, rng), rng, args.payload)
                        for _ in range(args.trials)
                    ]
                )
            mine.append(
                [
                    n,
                    m,
                    "II" if m <= phase_boundary(n) else "I",
                    *_stats(one),
                    model_one_exact_mean(n, m),
                    *net,
                    math.log2(m),
                    m * math.log2(n) / (2 * n),
                    paper_fit(n, m),
                ]
            )
        rows += mine
        fits.append(_vm_fits(n, mine))
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


def _vm_plot(result: Result, path: str) -> None:
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
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- shifts (Fig. 7, every k) ------------------------------------------------------------------


def _sh_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(1, 20),
        default=_sizes("4..10"),
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
    _cycle_args(p)
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _trailing_zeros(k: int) -> int:
    return (k & -k).bit_length() - 1


def _sh_run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows, per_k_rows, by_twos = [], [], {}
    for h in counted(progress, args.sizes):
        n = 2**h
        progress(f"shifts: n = 2^{h}, {n - 1} shifts")
        means, lows, highs, imms = [], [], [], []
        for k in range(1, n):
            src, dst = cyclic_shift(n, k)
            rounds = [_net_rounds(n, src, dst, rng, args.payload) for _ in range(args.trials)]
            low, mean, high = _stats(rounds)
            means.append(mean)
            lows.append(low)
            highs.append(high)
            imm = None
            if n <= 2**args.cycles_max:
                imm = immediate_cycles(n, src, dst, args.length, args.seed)
                imms.append(imm)
            per_k_rows.append([n, k, args.trials, low, mean, high, imm])
        rand = [
            _net_rounds(n, *random_traffic(n, n, rng), rng, args.payload)
            for _ in range(args.random_trials)
        ]
        exact = model_one_exact_mean(n, n)
        one = (
            exact
            if exact is not None
            else float(np.mean([model_one_rounds(n, n, rng) for _ in range(args.random_trials)]))
        )
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
                float(np.mean(rand)),
                one,
                float(np.mean(imms)) if imms else None,
                float(np.mean(means) / np.mean(imms)) if imms else None,
            ]
        )
        groups = {}
        for k, mean in enumerate(means, start=1):
            groups.setdefault(_trailing_zeros(k), []).append(mean)
        by_twos[n] = [
            {"twos": j, "shifts": len(v), "mean": float(np.mean(v)), "max": float(max(v))}
            for j, v in sorted(groups.items())
        ]
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
    if args.per_k:
        return Result(
            "shifts",
            _sh_params(args),
            ["n", "k", "trials", "min", "mean", "max", "imm_cycles"],
            per_k_rows,
            notes,
            {"by_trailing_zeros": by_twos, "summary": rows},
        )
    return Result(
        "shifts",
        _sh_params(args),
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


def _sh_params(args) -> dict:
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


def _sh_plot(result: Result, path: str) -> None:
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
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- fewer-messages (section 7: m < n permutations) -------------------------------------------

PATTERNS = ("transpose", "bit-reversal", "shift", "random")


def pattern_list(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",")]
    bad = [t for t in names if t not in PATTERNS]
    if not names or bad:
        raise argparse.ArgumentTypeError(
            f"patterns must be a comma list of {', '.join(PATTERNS)}, not {text!r}"
        )
    return list(dict.fromkeys(names))


def _fm_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes", type=_sizes, default=_sizes("4..8"), help="lg n values (default 4..8)"
    )
    p.add_argument(
        "--patterns",
        type=pattern_list,
        default=list(PATTERNS),
        help="comma list of transpose, bit-reversal, shift (a random k per trial), random "
        "(default all four; transpose at even lg n only)",
    )
    p.add_argument(
        "--fractions",
        type=int_list,
        default=[2, 4, 8],
        help="m = full/F for each F (default 2,4,8); m = full - 1 is always measured",
    )
    p.add_argument("--trials", type=positive_int, default=20, help="trials per point (default 20)")
    p.add_argument(
        "--payload",
        type=positive_int,
        default=None,
        help="data words per message (default: circuits held to the end of the round)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _full_pattern(name: str, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    if name == "transpose":
        return transpose(n)
    if name == "bit-reversal":
        return bit_reversal(n)
    if name == "shift":
        return cyclic_shift(n, int(rng.integers(1, n)))
    return random_traffic(n, n, rng)


def fewer_verdict(diffs) -> str:
    """Paired differences (subset minus whole pattern) -> the section-7 verdict."""
    diffs = np.asarray(diffs, dtype=float)
    mean, half = mean_ci(diffs)
    if not diffs.any():
        return "equal"
    if mean + half < 0:
        return "fewer"
    if mean - half > 0:
        return "more"
    return "not shown"


def _fm_run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows = []
    points = [
        (h, name)
        for h in args.sizes
        for name in args.patterns
        if not (name == "transpose" and h % 2)
    ]
    for h, name in counted(progress, points):
        n = 2**h
        progress(f"fewer-messages: n = {n}, {name}")
        full_m = _full_pattern(name, n, np.random.default_rng(0))[0].size
        if full_m < 2:  # bit reversal at n = 2: every node is a fixed point
            continue
        ms = sorted(
            {m for m in (full_m - 1, *(full_m // f for f in args.fractions)) if 0 < m < full_m},
            reverse=True,
        )
        full_rounds, sub_rounds = [], {m: [] for m in ms}
        for _ in range(args.trials):
            src, dst = _full_pattern(name, n, rng)
            full_rounds.append(_net_rounds(n, src, dst, rng, args.payload))
            for m in ms:
                pick = rng.choice(src.size, m, replace=False)
                sub_rounds[m].append(_net_rounds(n, src[pick], dst[pick], rng, args.payload))
        rows.append([n, name, full_m, full_m, *_stats(full_rounds), None, None, None, None, ""])
        for m in ms:
            diffs = np.array(sub_rounds[m]) - np.array(full_rounds)
            mean, half = mean_ci(diffs)
            rows.append(
                [
                    n,
                    name,
                    m,
                    full_m,
                    *_stats(sub_rounds[m]),
                    mean,
                    mean - half,
                    mean + half,
                    float(np.mean(diffs < 0)),
                    fewer_verdict(diffs),
                ]
            )
    return Result(
        "fewer-messages",
        {
            "sizes": args.sizes,
            "patterns": args.patterns,
            "fractions": args.fractions,
            "trials": args.trials,
            "payload": args.payload,
            "seed": args.seed,
        },
        [
            "n",
            "pattern",
            "m",
            "full_m",
            "min",
            "mean",
            "max",
            "diff",
            "ci_low",
            "ci_high",
            "frac_fewer",
            "verdict",
        ],
        rows,
        [
            "round-based network; each trial: the whole pattern (full_m messages, fixed points "
            "dropped; shift: k drawn per trial; random: a fresh random traffic of m = n), then "
            "random subsets of m of its messages (distinct sources)",
            "diff: mean over trials of rounds(subset) - rounds(whole) (paired), with its 95 % "
            "interval; frac_fewer: trials where the subset took strictly fewer rounds",
            "verdict: fewer (interval below 0), more (above 0), equal (every trial equal), "
            "not shown (interval spans 0)",
        ],
    )


def _fm_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r[1] for r in result.rows))
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for n in sorted({r[0] for r in result.rows if r[1] == name}):
            rs = sorted((r for r in result.rows if r[1] == name and r[0] == n), key=lambda r: r[2])
            ax.plot([r[2] / r[3] for r in rs], [r[5] for r in rs], "o-", ms=3, label=f"n = {n}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("m / full")
        ax.set_ylabel("mean delivery rounds")
        ax.set_title(name)
        ax.legend(fontsize="small")
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
    Experiment(
        "model-ratios",
        "Strumpen-Krishnamurthy Fig. 3 in full: Models I and II, ratios of means and maxima",
        _mr_args,
        _mr_run,
        _mr_plot,
    ),
    Experiment(
        "rounds-vs-m",
        "Strumpen-Krishnamurthy Fig. 5: rounds against m for fixed n, phase fits",
        _vm_args,
        _vm_run,
        _vm_plot,
    ),
    Experiment(
        "shifts",
        "Strumpen-Krishnamurthy Fig. 7 over every cyclic shift k, beside random traffic",
        _sh_args,
        _sh_run,
        _sh_plot,
    ),
    Experiment(
        "fewer-messages",
        "Strumpen-Krishnamurthy section 7: m < n messages of a permutation take fewer rounds?",
        _fm_args,
        _fm_run,
        _fm_plot,
    ),
]
