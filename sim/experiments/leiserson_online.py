"""Leiserson (1985) section II on-line: delivery cycles with losses, acknowledgements, resends.

``leiserson-online`` runs the on-line tree's model (:mod:`fattree.sim.models.leiserson_online`:
greedy concentrator settings decided as messages arrive, lost messages resent in the next
delivery cycle, receivers always ready) and reports two tables:

* **delivery cycles**: for each message set, the delivery cycles the on-line tree takes
  against its load factor lambda (on the real wires: the lower bound, no schedule can beat
  ceil(lambda)), beside the off-line schedule of Theorem 1 on the hardware's alpha-derated
  capacities (:func:`~fattree.sim.models.leiserson_schedule.schedule_theorem1`) and that
  schedule packed first-fit;
* **loss per delivery cycle**: single delivery cycles in which each leaf sends with
  probability ``load`` to a random other leaf, binned by the cycle's congestion (lambda of
  the messages sent), with the fraction of messages lost, and how many more a maximum
  matching at each stage would have routed from the same arrivals (what the greedy loses).
"""

from __future__ import annotations

import argparse
import random
import time
from fractions import Fraction

from ...spec.capacities import TreeLayout, ceil_cbrt
from ..models.leiserson_online import route_cycle, run_online
from ..models.leiserson_schedule import (
    compact,
    ideal_capacities,
    layout_capacities,
    load_factor,
    loads,
    message_set,
)
from . import Experiment, Result, counted, lg_sizes, positive_int

PATTERNS = ("random", "permutation", "bit-reversal", "hot-spot")
#: Congestion bins (upper edges) of the loss table; the last is open.
BINS = (1, 2, 3, 4, 6, 8)
_sizes = lg_sizes(2, 8)


def _loads(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or any(not 0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"loads must be a comma list in (0, 1], not {text!r}")
    return values


def _per_leaf(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or any(not 1 <= v <= 64 for v in values):
        raise argparse.ArgumentTypeError(f"per-leaf must be a comma list in 1..64, not {text!r}")
    return values


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes("3..5"),
        metavar="LGN",
        help="lg n values, A..B or comma list, 2..8 (default 3..5: 8, 16, 32 leaves)",
    )
    p.add_argument(
        "--patterns",
        default=",".join(PATTERNS),
        help=f"comma list of {', '.join(PATTERNS)} (default all)",
    )
    p.add_argument(
        "--per-leaf",
        type=_per_leaf,
        default=_per_leaf("1,2,4"),
        metavar="LIST",
        help="messages per leaf of the random sets, comma list (default 1,2,4)",
    )
    p.add_argument(
        "--loads",
        type=_loads,
        default=_loads("0.25,0.5,1"),
        metavar="LIST",
        help="probability a leaf sends in a single delivery cycle (default 0.25,0.5,1)",
    )
    p.add_argument(
        "--cycles",
        type=positive_int,
        default=100,
        help="single delivery cycles per size, profile and load (default 100)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


class _Tables(Result):
    """Two tables: delivery cycles (``rows``) and loss per delivery cycle (``extra``)."""

    def table(self) -> str:
        loss = self.extra["loss"]
        other = Result(self.name, {}, loss["columns"], loss["rows"])
        return super().table() + "\n\nloss per delivery cycle\n" + other.table()


def _profiles(n: int):
    return [("w=n", n), ("w=n^(2/3)", ceil_cbrt(n * n))]


def _hot_spot(n: int, rng) -> list[tuple[int, int]]:
    dst = rng.randrange(n)
    return [(s, dst) for s in range(n) if s != dst]


def _message_sets(n: int, patterns: list[str], per_leaf: list[int], rng) -> list[tuple]:
    """``(name, messages)`` of every pattern: random ones for each messages-per-leaf count."""
    sets = []
    for pattern in patterns:
        if pattern == "random":
            sets += [(f"random x{k}", message_set("random", n, rng, k)) for k in per_leaf]
        elif pattern == "hot-spot":
            sets.append((pattern, _hot_spot(n, rng)))
        else:
            sets.append((pattern, message_set(pattern, n, rng)))
    return sets


def _set_row(n: int, profile: str, name: str, messages, layout, wires, derated) -> list:
    """One message set: its load factors, the on-line delivery cycles and losses, and the
    off-line schedule of Theorem 1 (and packed) beside them."""
    lam = load_factor(n, messages, wires)
    d, results = run_online(layout, messages)
    lost = sum(len(r.lost) for r in results)
    offline = _theorem1(n, messages, derated)
    packed = compact(n, messages, offline, derated) if offline else []
    return [
        n,
        profile,
        name,
        len(messages),
        float(lam),
        float(load_factor(n, messages, derated)),
        -(-lam.numerator // lam.denominator),
        d,
        round(d / float(lam), 3) if lam else None,
        len(offline) if offline is not None else None,
        len(packed) if offline is not None else None,
        lost,
        round(lost / len(messages), 3) if messages else 0,
    ]


def _run(args, progress) -> Result:
    patterns = [p.strip() for p in args.patterns.split(",") if p.strip()]
    for p in patterns:
        if p not in PATTERNS:
            raise ValueError(f"unknown pattern {p!r}; patterns: {', '.join(PATTERNS)}")
    rng = random.Random(args.seed)
    rows, loss_rows = [], []
    for lgn in counted(progress, args.sizes):
        n = 1 << lgn
        for profile, w in _profiles(n):
            started = time.process_time()
            layout = TreeLayout.universal(n, w, 0)
            wires = ideal_capacities(n, layout.capacities)
            derated = layout_capacities(layout)
            for name, messages in _message_sets(n, patterns, args.per_leaf, rng):
                rows.append(_set_row(n, profile, name, messages, layout, wires, derated))
            loss_rows += _loss(n, profile, layout, wires, args, rng)
            progress(f"n={n} {profile}: {time.process_time() - started:.1f} s CPU")
    return _Tables(
        "leiserson-online",
        {
            "sizes": args.sizes,
            "patterns": patterns,
            "per_leaf": args.per_leaf,
            "loads": args.loads,
            "cycles": args.cycles,
            "seed": args.seed,
        },
        [
            "n",
            "profile",
            "set",
            "messages",
            "lambda",
            "lambda_derated",
            "lower_bound",
            "d_online",
            "d_online/lambda",
            "d_offline_thm1",
            "d_offline_packed",
            "lost",
            "resends/message",
        ],
        rows,
        notes=[
            "lambda on the real wires (the lower bound: a delivery cycle carries at most cap(c) "
            "messages through channel c); lambda_derated on each cascade's verified capacity, "
            "which the off-line schedule uses",
            "d_online: delivery cycles until every message is acknowledged; each leaf sends its "
            "oldest unacknowledged message every cycle; receivers always ready",
            "lost: messages lost in the network over the whole run (each one resent)",
            "loss table: single delivery cycles, congestion = lambda of the messages sent; "
            "lost_frac = lost / sent; lost_floor = sum over cycles of the largest excess "
            "load - cap of one channel (no setting loses fewer); greedy_short = (maximum "
            "matching - greedy) / arrivals, summed over every stage: how much more a maximum "
            "matching of the same arrivals at each stage would have routed",
        ],
        extra={
            "loss": {
                "columns": [
                    "n",
                    "profile",
                    "congestion",
                    "cycles",
                    "sent",
                    "lost",
                    "lost_frac",
                    "lost_floor",
                    "floor_frac",
                    "greedy_short",
                ],
                "rows": loss_rows,
            }
        },
    )


def _theorem1(n, messages, caps):
    from ..models.leiserson_schedule import schedule_theorem1

    return schedule_theorem1(n, messages, caps) if messages else []


def _bin(lam: Fraction) -> str:
    low = 0
    for edge in BINS:
        if lam <= edge:
            return f"({low}, {edge}]"
        low = edge
    return f"> {BINS[-1]}"


def _loss(n, profile, layout, wires, args, rng) -> list[list]:
    bins: dict[str, list[int]] = {}
    caps = wires.array()
    for load in args.loads:
        for _ in range(args.cycles):
            sends = {}
            for src in range(n):
                if rng.random() < load:
                    dst = rng.randrange(n - 1)
                    sends[src] = dst + (dst >= src)
            if not sends:
                continue
            lam = load_factor(n, list(sends.items()), wires)
            result = route_cycle(layout, sends, stats=True)
            stats = result.stage_stats.values()
            row = bins.setdefault(_bin(lam), [0, 0, 0, 0, 0, 0])
            row[0] += 1
            row[1] += len(sends)
            row[2] += len(result.lost)
            row[3] += sum(best - routed for _a, routed, best in stats)
            row[4] += sum(arrived for arrived, _r, _b in stats)
            # No setting routes more than cap(c) through channel c: the fewest losses possible.
            row[5] += int(max(0, (loads(n, list(sends.items())) - caps).max()))
    order = [f"({low}, {edge}]" for low, edge in zip((0,) + BINS, BINS, strict=False)]
    order.append(f"> {BINS[-1]}")
    return [
        [
            n,
            profile,
            key,
            c,
            sent,
            lost,
            round(lost / sent, 4),
            floor,
            round(floor / sent, 4),
            round(short / arrivals, 4) if arrivals else 0.0,
        ]
        for key in order
        if key in bins
        for c, sent, lost, short, arrivals, floor in [bins[key]]
    ]


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    col = {name: i for i, name in enumerate(result.columns)}
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    rows = [r for r in result.rows if r[col["lambda"]]]
    lam = [r[col["lambda"]] for r in rows]
    left.scatter(lam, [r[col["d_online"]] for r in rows], label="on-line (greedy, resend)")
    left.scatter(
        lam,
        [r[col["d_offline_thm1"]] for r in rows],
        marker="x",
        label="off-line Theorem 1 (derated)",
    )
    left.scatter(
        lam, [r[col["d_offline_packed"]] for r in rows], marker="+", label="off-line, packed"
    )
    top = max(lam, default=1)
    left.plot([0, top], [0, top], "k--", linewidth=0.8, label="lower bound lambda")
    left.set_xlabel("load factor lambda (real wires)")
    left.set_ylabel("delivery cycles")
    left.legend(fontsize=8)
    loss = result.extra["loss"]
    lc = {name: i for i, name in enumerate(loss["columns"])}
    for key in sorted({(r[lc["n"]], r[lc["profile"]]) for r in loss["rows"]}):
        sub = [r for r in loss["rows"] if (r[lc["n"]], r[lc["profile"]]) == key]
        right.plot(
            [r[lc["congestion"]] for r in sub],
            [r[lc["lost_frac"]] for r in sub],
            marker="o",
            label=f"n={key[0]} {key[1]}",
        )
    right.set_xlabel("congestion of the delivery cycle (lambda of the messages sent)")
    right.set_ylabel("fraction of messages lost")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        "leiserson-online",
        "Leiserson section II on-line: delivery cycles against lambda, losses per cycle",
        _args,
        _run,
        _plot,
    )
]
