"""Strumpen and Krishnamurthy (2005), section 7: do fewer messages take fewer rounds?

``fewer-messages``: "for m < n the permutations take strictly fewer rounds", measured: random
subsets of m messages of each pattern against the whole pattern, paired per trial.
"""

from __future__ import annotations

import argparse

import numpy as np

from ..fast.circuit_rounds import bit_reversal, cyclic_shift, random_traffic, transpose
from . import Experiment, Result, counted, int_list, positive_int, save_plot
from .circuit_tree_rounds import lg_n_list, mean_ci, min_mean_max, network_rounds

PATTERNS = ("transpose", "bit-reversal", "shift", "random")


def pattern_list(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",")]
    bad = [t for t in names if t not in PATTERNS]
    if not names or bad:
        raise argparse.ArgumentTypeError(
            f"patterns must be a comma list of {', '.join(PATTERNS)}, not {text!r}"
        )
    return list(dict.fromkeys(names))


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes", type=lg_n_list, default=lg_n_list("4..8"), help="lg n values (default 4..8)"
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


def _run(args, progress) -> Result:
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
            full_rounds.append(network_rounds(n, src, dst, rng, args.payload))
            for m in ms:
                pick = rng.choice(src.size, m, replace=False)
                sub_rounds[m].append(network_rounds(n, src[pick], dst[pick], rng, args.payload))
        rows.append(
            [n, name, full_m, full_m, *min_mean_max(full_rounds), None, None, None, None, ""]
        )
        for m in ms:
            diffs = np.array(sub_rounds[m]) - np.array(full_rounds)
            mean, half = mean_ci(diffs)
            rows.append(
                [
                    n,
                    name,
                    m,
                    full_m,
                    *min_mean_max(sub_rounds[m]),
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


def _plot(result: Result, path: str) -> None:
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
    save_plot(fig, path)


EXPERIMENTS = [
    Experiment(
        "fewer-messages",
        "Strumpen-Krishnamurthy section 7: m < n messages of a permutation take fewer rounds?",
        _args,
        _run,
        _plot,
    ),
]
