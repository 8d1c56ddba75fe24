"""Leiserson (1985): partial concentrators (section IV) and off-line schedules (section III).

* ``concentrator``: the alpha that the seeded random (r, 2r/3) construction achieves, over
  r and seeds, and how often a graph falls below alpha = 3/4 (and would be rebuilt).
* ``leiserson-cost``: components per node level and in total (Theorem 4: O(n lg(w^3/n^2))),
  counted from the switch plan; ``fattree synth leiserson-tree`` gives LUTs and FFs.
* ``offline-schedule``: delivery cycles d of Theorem 1 (and Corollary 2 where every capacity
  exceeds lg n) against the load factor lambda, for random message sets, random
  permutations and bit reversal on universal fat-trees with w = n and w = n^(2/3).
"""

from __future__ import annotations

import argparse
import random
import time

from ...spec.bits import lg
from ...spec.capacities import ceil_cbrt, node_components, universal_capacities
from ...spec.concentrator_graph import (
    EXHAUSTIVE_MAX_INPUTS,
    TARGET_ALPHA,
    random_partial_concentrator,
    verify,
)
from ..models.leiserson_schedule import (
    compact,
    ideal_capacities,
    is_one_cycle,
    load_factor,
    message_set,
    schedule_corollary2,
    schedule_theorem1,
    theorem1_bound,
)
from . import Experiment, Result, counted, int_list, lg_sizes, positive_int

MAX_LG = 12
_sizes = lg_sizes(2, MAX_LG)


# -- concentrator ----------------------------------------------------------------------------


def _c_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--r",
        type=int_list,
        default=int_list("12,15,18,20,24,30,48,96"),
        metavar="LIST",
        help="input counts r (A..B or comma list; default 12,15,18,20,24,30,48,96); "
        f"exhaustive Hall check up to r = {EXHAUSTIVE_MAX_INPUTS}, sampled above",
    )
    p.add_argument("--seeds", type=positive_int, default=10, help="graphs per r (default 10)")
    p.add_argument(
        "--samples",
        type=positive_int,
        default=200,
        help="adversarial starts and random sets per sampled check (default 200)",
    )


def _c_run(args, progress) -> Result:
    rows = []
    for r in counted(progress, args.r):
        s = -(-2 * r // 3)
        if s >= r or r < 10:
            raise ValueError(f"r must be at least 10 for a random (r, 2r/3) graph, not {r}")
        start = time.time()
        alphas, method = [], ""
        for seed in range(args.seeds):
            v = verify(random_partial_concentrator(r, s, seed), args.samples, seed)
            alphas.append(v.alpha)
            method = v.method
        below = sum(a < TARGET_ALPHA for a in alphas)
        rows.append(
            [
                r,
                s,
                method,
                float(min(alphas)),
                float(sum(alphas) / len(alphas)),
                float(max(alphas)),
                below,
                args.seeds,
            ]
        )
        progress(
            f"r={r}: alpha {float(min(alphas)):.3f}..{float(max(alphas)):.3f} "
            f"({time.time() - start:.1f} s)"
        )
    return Result(
        "concentrator",
        {"r": args.r, "seeds": args.seeds, "samples": args.samples},
        ["r", "s", "method", "alpha_min", "alpha_mean", "alpha_max", "below_3/4", "graphs"],
        rows,
        notes=[
            "alpha = k/s, k the largest size of which every input set is matchable "
            "(exhaustive: exact; sampled: no smaller Hall violator found)",
            "below_3/4 graphs are rebuilt with the next seed by build_partial_concentrator",
        ],
    )


def _c_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [row[0] for row in result.rows]
    ax.fill_between(
        xs,
        [row[3] for row in result.rows],
        [row[5] for row in result.rows],
        alpha=0.3,
        label="min..max",
    )
    ax.plot(xs, [row[4] for row in result.rows], "o-", label="mean")
    ax.axhline(0.75, color="k", ls=":", label="alpha = 3/4")
    ax.set_xscale("log")
    ax.set_xlabel("inputs r (s = 2r/3)")
    ax.set_ylabel("achieved alpha")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


# -- offline-schedule ------------------------------------------------------------------------

PATTERNS = ("random", "permutation", "bit-reversal")


def _s_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes("4..7"),
        metavar="LGN",
        help=f"lg n values, A..B or comma list, 2..{MAX_LG} (default 4..7; 4..12 is the "
        "paper's range and takes a few minutes)",
    )
    p.add_argument(
        "--patterns",
        default=",".join(PATTERNS),
        help=f"comma list of {', '.join(PATTERNS)} (default all)",
    )
    p.add_argument(
        "--per-leaf",
        type=positive_int,
        default=4,
        help="messages per leaf in the random sets (default 4)",
    )
    p.add_argument("--trials", type=positive_int, default=1, help="message sets per point")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _s_run(args, progress) -> Result:
    patterns = [p.strip() for p in args.patterns.split(",") if p.strip()]
    for p in patterns:
        if p not in PATTERNS:
            raise ValueError(f"unknown pattern {p!r}; patterns: {', '.join(PATTERNS)}")
    rng = random.Random(args.seed)
    rows = []
    for lgn in counted(progress, args.sizes):
        n = 1 << lgn
        profiles = [
            ("w=n", universal_capacities(n, n)),
            ("w=n^(2/3)", universal_capacities(n, ceil_cbrt(n * n))),
            ("w=n,+2lgn", tuple(c + 2 * lg(n) for c in universal_capacities(n, n))),
        ]
        for pattern in patterns:
            for trial in range(args.trials):
                messages = message_set(pattern, n, rng, args.per_leaf)
                for name, profile in profiles:
                    start = time.time()
                    caps = ideal_capacities(n, profile)
                    lam = load_factor(n, messages, caps)
                    cycles = schedule_theorem1(n, messages, caps)
                    _check(n, messages, cycles, caps)
                    d = len(cycles)
                    bound = theorem1_bound(n, messages, caps)
                    packed = compact(n, messages, cycles, caps)
                    _check(n, messages, packed, caps)
                    d2 = None
                    if min(profile) > lg(n):
                        cyc2 = schedule_corollary2(n, messages, caps)
                        _check(n, messages, cyc2, caps)
                        d2 = len(cyc2)
                    rows.append(
                        [
                            n,
                            name,
                            pattern,
                            trial,
                            len(messages),
                            float(lam),
                            d,
                            float(d / lam) if lam else None,
                            bound,
                            len(packed),
                            d2,
                            float(d2 / lam) if d2 and lam else None,
                        ]
                    )
                    progress(
                        f"n={n} {name} {pattern}: lambda={float(lam):.2f} d={d} "
                        f"cor2={d2} ({time.time() - start:.1f} s)"
                    )
    return Result(
        "offline-schedule",
        {
            "sizes": args.sizes,
            "patterns": patterns,
            "per_leaf": args.per_leaf,
            "trials": args.trials,
            "seed": args.seed,
        },
        [
            "n",
            "profile",
            "pattern",
            "trial",
            "messages",
            "lambda",
            "d_thm1",
            "d/lambda",
            "thm1_bound",
            "d_packed",
            "d_cor2",
            "d_cor2/lambda",
        ],
        rows,
        notes=[
            "ideal concentrators (cap = wires); the hardware derates to each cascade's "
            "verified capacity (layout_capacities)",
            "thm1_bound = sum over LCA levels of 2^ceil(lg lambda_level) <= lg n max(1, 2 lambda)",
            "d_packed: Theorem 1's cycles merged first-fit while still one-cycle (ours)",
            "Corollary 2 only where every capacity exceeds lg n (profile w=n,+2lgn)",
            "fixed points of permutations and bit reversal are left out (they use no channel)",
        ],
    )


def _check(n, messages, cycles, caps) -> None:
    # Cheap guard so a wrong schedule can never be reported as a figure.
    if sorted(i for c in cycles for i in c) != list(range(len(messages))):
        raise RuntimeError("schedule does not deliver every message exactly once")
    for cycle in cycles:
        if not is_one_cycle(n, [messages[i] for i in cycle], caps):
            raise RuntimeError("schedule has a delivery cycle that is not one-cycle")


def _s_plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    col = {name: i for i, name in enumerate(result.columns)}
    fig, ax = plt.subplots(figsize=(6, 4))
    for profile in sorted({row[col["profile"]] for row in result.rows}):
        rows = [row for row in result.rows if row[col["profile"]] == profile]
        lam = [r[col["lambda"]] for r in rows]
        ax.scatter(lam, [r[col["d_thm1"]] for r in rows], label=f"Theorem 1, {profile}")
        ax.scatter(lam, [r[col["d_packed"]] for r in rows], marker=".", label=f"packed, {profile}")
        cor = [r for r in rows if r[col["d_cor2"]] is not None]
        if cor:
            ax.scatter(
                [r[col["lambda"]] for r in cor],
                [r[col["d_cor2"]] for r in cor],
                marker="x",
                label=f"Corollary 2, {profile}",
            )
    top = max(
        max(r[col["d_thm1"]] for r in result.rows), max(r[col["lambda"]] for r in result.rows)
    )
    ax.plot([0, top], [0, top], "k:", label="d = lambda")
    ax.set_xlabel("load factor lambda")
    ax.set_ylabel("delivery cycles d")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


# -- leiserson-cost --------------------------------------------------------------------------


def _k_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes("4..12"),
        metavar="LGN",
        help=f"lg n values, A..B or comma list, 2..{MAX_LG} (default 4..12)",
    )
    p.add_argument("--per-level", action="store_true", help="one row per node level as well")


def _k_run(args, progress) -> Result:
    import math

    rows = []
    for lgn in counted(progress, args.sizes):
        n = 1 << lgn
        for name, w in (("w=n", n), ("w=n^(2/3)", ceil_cbrt(n * n))):
            caps = universal_capacities(n, w)
            totals = {"selectors": 0, "stage_inputs": 0, "crosspoints": 0}
            for k in range(lgn):
                node = node_components(caps, k)
                for key, value in node.items():
                    totals[key] += (1 << k) * value
                if args.per_level:
                    rows.append(
                        [n, name, w, f"node@{k}", *node.values(), sum(node.values()), None, None]
                    )
            total = sum(totals.values())
            scale = n * max(1.0, math.log2(w**3 / n**2))
            rows.append([n, name, w, "tree", *totals.values(), total, total / n, total / scale])
        progress(f"n={n}")
    return Result(
        "leiserson-cost",
        {"sizes": args.sizes, "per_level": args.per_level},
        [
            "n",
            "profile",
            "w",
            "scope",
            "selectors",
            "stage_inputs",
            "crosspoints",
            "total",
            "total/n",
            "total/(n lg(w^3/n^2))",
        ],
        rows,
        notes=[
            "selectors: one per node input wire; stage_inputs: one switch controller per "
            "concentrator stage input; crosspoints: graph edges",
            "Theorem 4: O(n lg(w^3/n^2)) components (lg taken as at least 1)",
        ],
    )


EXPERIMENTS = [
    Experiment(
        "leiserson-cost",
        "Leiserson Theorem 4: components of universal fat-trees per node and in total",
        _k_args,
        _k_run,
    ),
    Experiment(
        "concentrator",
        "Leiserson/Pippenger: achieved alpha of random (r, 2r/3) partial concentrators",
        _c_args,
        _c_run,
        _c_plot,
    ),
    Experiment(
        "offline-schedule",
        "Leiserson Theorem 1 / Corollary 2: delivery cycles d against load factor lambda",
        _s_args,
        _s_run,
        _s_plot,
    ),
]
