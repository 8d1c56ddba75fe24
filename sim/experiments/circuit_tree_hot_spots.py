"""Strumpen and Krishnamurthy (2005), section 7: the hot-spot conjecture.

"Assume that ``m = m_1 + m_r``, where ``m_1`` is the number of messages to be transmitted or
delivered sequentially, and ``m_r`` the number of messages whose sources and destinations can
be approximated by a random distribution. Then the number of delivery rounds is bound by
``O(m_1 + lg m_r)``."

``hot-spots`` measures it on the round-based network (the fast simulator): ``m_1`` messages
from distinct random sources to one node ``p`` (node 0: "each of m sources sends one message
to a single destination node p"), and ``m_r`` messages from other distinct sources to
uniformly random destinations (any node but the source, ``p`` included), all sent in the
first round. Beside each point: the same random part alone (its rounds ``R(m_r)``), and the
lower bound ``m_1 + (random messages to p)`` (``p`` takes one message a round). Fitted: the
conjecture's sum ``a m_1 + b lg m_r + c`` and the parallel reading ``max(lower bound,
R(m_r))``, with the largest rounds beyond ``m_1`` per ``lg m_r``.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from ...params import parse_int_list
from ..fast.circuit_rounds import delivery_rounds
from . import Experiment, Result, counted, lg_sizes, positive_int
from .circuit_tree_rounds import least_squares

#: The hot spot.
SPOT = 0


def count_list(text: str) -> list[int]:
    """``"0,4,16"`` or ``"0..8"``: message counts, zero allowed."""
    try:
        return sorted(parse_int_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected counts (0 or more) as A..B or a comma list, not {text!r}"
        ) from None


def hot_spot_traffic(
    n: int, m1: int, mr: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``m1`` messages to node :data:`SPOT`, then ``mr`` random ones, from distinct random
    sources other than the spot (at most ``n - 1`` messages)."""
    if m1 + mr > n - 1:
        raise ValueError(f"m1 + mr must be at most n - 1 = {n - 1}, not {m1 + mr}")
    src = (1 + rng.permutation(n - 1)[: m1 + mr]).astype(np.int64)
    dst = np.full(m1 + mr, SPOT, dtype=np.int64)
    rand = src[m1:]
    dst[m1:] = (rand + 1 + rng.integers(0, n - 1, mr)) % n
    return src, dst


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=lg_sizes(2, 20),
        default=[8],
        help="lg n values (default 8)",
    )
    p.add_argument(
        "--m1",
        type=count_list,
        default=[0, 1, 4, 16, 64],
        help="messages to the hot spot (default 0,1,4,16,64)",
    )
    p.add_argument(
        "--mr",
        type=count_list,
        default=[0, 4, 16, 64, 128],
        help="random messages (default 0,4,16,64,128); points with m1 + mr >= n are skipped",
    )
    p.add_argument("--trials", type=positive_int, default=3, help="trials per point (default 3)")
    p.add_argument(
        "--payload",
        type=positive_int,
        default=None,
        help="data words per message (default: circuits held to the end of the round)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _fits(n: int, rows: list) -> dict:
    lgr = [math.log2(max(r[2], 1)) for r in rows]
    (a, b, c), worst = least_squares(
        [[r[1] for r in rows], lgr, [1.0] * len(rows)], [r[5] for r in rows]
    )
    excess = [r[5] - max(r[8], r[7]) for r in rows]
    beyond = [(r[6] - r[1]) / max(math.log2(max(r[2], 1)), 1.0) for r in rows]
    return {
        "n": n,
        "sum": {"m1": a, "lg_mr": b, "one": c, "max_residual": worst},
        "max_model_excess": {"mean": float(np.mean(excess)), "max": float(max(excess))},
        "max_beyond_m1_per_lg_mr": float(max(beyond)),
        "below_lower_bound": [r[:3] for r in rows if r[4] < r[1]],
    }


def _run(args, progress) -> Result:
    rng = np.random.default_rng(args.seed)
    rows, fits = [], []
    grid = {
        h: [(m1, mr) for m1 in args.m1 for mr in args.mr if 1 <= m1 + mr <= 2**h - 1]
        for h in args.sizes
    }
    if not any(grid.values()):
        raise ValueError("no point of --m1 and --mr has 1 <= m1 + mr <= n - 1")
    for h, points in grid.items():
        n = 2**h
        mine = []
        for m1, mr in counted(progress, points):
            progress(f"hot-spots: n = {n}, m1 = {m1}, mr = {mr}")
            rounds, alone, lower = [], [], []
            for _ in range(args.trials):
                src, dst = hot_spot_traffic(n, m1, mr, rng)
                rounds.append(delivery_rounds(n, src, dst, rng, payload=args.payload).rounds)
                rs, rd = src[m1:], dst[m1:]
                alone.append(
                    delivery_rounds(n, rs, rd, rng, payload=args.payload).rounds if mr else 0
                )
                lower.append(m1 + int(np.count_nonzero(rd == SPOT)))
            mine.append(
                [
                    n,
                    m1,
                    mr,
                    args.trials,
                    min(rounds),
                    float(np.mean(rounds)),
                    max(rounds),
                    float(np.mean(alone)),
                    float(np.mean(lower)),
                    m1 + math.log2(max(mr, 1)),
                ]
            )
        rows += mine
        if len(mine) >= 3:
            fits.append(_fits(n, mine))
    notes = [
        f"round-based network; m1 messages to node {SPOT}, mr to random destinations, distinct "
        f"sources; {args.trials} trials per point",
        "random_alone: the same mr messages without the hot spot; lower_bound: m1 + random "
        "messages to the spot (one reaches it per round); conjecture: m1 + lg mr",
    ]
    for f in fits:
        s = f["sum"]
        notes.append(
            f"n = {f['n']}: rounds ~ {s['m1']:.3f} m1 + {s['lg_mr']:.3f} lg mr + {s['one']:.3f} "
            f"(max residual {s['max_residual']:.2f}); rounds - max(lower_bound, random_alone): "
            f"mean {f['max_model_excess']['mean']:.2f}, max {f['max_model_excess']['max']:.2f}; "
            f"(max rounds - m1) / lg mr at most {f['max_beyond_m1_per_lg_mr']:.2f}"
        )
    return Result(
        "hot-spots",
        {
            "sizes": args.sizes,
            "m1": args.m1,
            "mr": args.mr,
            "trials": args.trials,
            "payload": args.payload,
            "seed": args.seed,
        },
        [
            "n",
            "m1",
            "mr",
            "trials",
            "min",
            "mean",
            "max",
            "random_alone",
            "lower_bound",
            "m1+lg_mr",
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
        for mr in sorted({r[2] for r in result.rows if r[0] == n}):
            rs = [r for r in result.rows if r[0] == n and r[2] == mr]
            x = [max(r[1], 0.5) for r in rs]  # m1 = 0 drawn at 1/2 on the log axis
            line = ax.plot(x, [r[5] for r in rs], "o-", ms=3, label=f"m_r = {mr}")[0]
            ax.plot(x, [r[9] for r in rs], ":", color=line.get_color())
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("m_1 (messages to the hot spot; 0 drawn at 1/2)")
        ax.set_ylabel("delivery rounds (dotted: m_1 + lg m_r)")
        ax.set_title(f"n = {n}")
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        "hot-spots",
        "Strumpen-Krishnamurthy section 7: the hot-spot conjecture O(m_1 + lg m_r)",
        _args,
        _run,
        _plot,
    )
]
