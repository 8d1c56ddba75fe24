"""The Connection Machine's hypercube (Stanfill 1987, section 4) on its cycle-exact model.

``hypercube-routing``: cycles to route a random one-to-one pattern (a random permutation of
the processors; at ``--load`` below 100 % a random share of the processors sends, still
one-to-one) against the dimension k, the processors per node p and the buffer slots, with
the referrals and the longest time in network. The paper's claims beside it: doubling p
raises the time by less than a factor of two (section 4.1), and 65,536 32-bit messages take
800 microseconds on the machine (k = 12, p = 16; section 4.2): the notes give the clock a
bit-serial link would need to match that, from the measured cycles.
"""

from __future__ import annotations

import argparse
import random

from ..models.hypercube import HypercubeModel, run_model
from . import Experiment, Result, counted, int_list, positive_int

__all__ = ["EXPERIMENTS", "one_to_one"]

#: The paper's figure: 65,536 messages of 32 bits in 800 microseconds.
PAPER_SECONDS = 800e-6
PAPER_DATA_BITS = 32


def one_to_one(dim: int, procs: int, load: float, rng: random.Random):
    """Per processor a queue of at most one ``(dest, data)``: a random ``load`` share of the
    processors send, to distinct random destinations (a partial random permutation)."""
    n = (1 << dim) * procs
    senders = rng.sample(range(n), max(1, round(load * n)))
    dests = rng.sample(range(n), len(senders))
    queues: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for s, d in zip(senders, dests, strict=True):
        queues[s].append((d, rng.getrandbits(PAPER_DATA_BITS)))
    return queues


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dims", type=int_list, default=int_list("4..12"), help="k values (4..12)")
    p.add_argument("--procs", type=int_list, default=int_list("1,2,4,8,16"), help="p values")
    p.add_argument("--buffers", type=int_list, default=int_list("4"), help="buffer slots")
    p.add_argument(
        "--load", type=int_list, default=int_list("100"), help="percent of processors sending"
    )
    p.add_argument(
        "--trials", type=positive_int, default=1, help="random patterns per point (default 1)"
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")


def _run(args, progress) -> Result:
    rng = random.Random(args.seed)
    points = [
        (k, p, b, load)
        for k in args.dims
        for p in args.procs
        for b in args.buffers
        for load in args.load
    ]
    for k, p, b, load in points:
        if not 1 <= k <= 16 or p > 16 or p & (p - 1) or b > 16 or not 0 < load <= 100:
            raise ValueError(f"no such point: k={k}, p={p}, buffers={b}, load={load}%")
    rows = []
    for k, p, b, load in counted(progress, points):
        progress(f"hypercube-routing: k={k} p={p} buffers={b} load={load}%")
        cycles, referrals, longest, messages = [], [], [], 0
        for _ in range(args.trials):
            model = HypercubeModel(k, p, b, PAPER_DATA_BITS)
            result = run_model(model, one_to_one(k, p, load / 100, rng))
            cycles.append(result.cycles)
            referrals.append(result.referrals)
            longest.append(result.longest)
            messages = result.messages
        mean = sum(cycles) / len(cycles)
        rows.append(
            [
                k,
                p,
                b,
                load,
                messages,
                mean,
                max(cycles),
                sum(referrals) / len(referrals),
                max(longest),
            ]
        )
    notes = []
    by = {(r[0], r[1], r[2], r[3]): r for r in rows}
    ratios = [
        by[k, p * 2, b, load][5] / by[k, p, b, load][5]
        for (k, p, b, load) in by
        if (k, p * 2, b, load) in by
    ]
    if ratios:
        notes.append(
            f"doubling p multiplies the cycles by {min(ratios):.2f} .. {max(ratios):.2f} "
            "(the paper: by less than two)"
        )
    for (k, p, b, load), row in by.items():
        if (k, p, load) == (12, 16, 100):
            bits = PAPER_DATA_BITS + k + 4
            clock = row[5] * bits / PAPER_SECONDS
            notes.append(
                f"k=12 p=16 buffers={b}: {row[5]:g} cycles for {row[4]} messages; the paper's "
                f"800 us is {PAPER_SECONDS / row[5] * 1e9:.0f} ns per cycle with whole-message "
                f"links, or a {clock / 1e6:.1f} MHz bit clock if each hop sends the {bits} bits "
                "serially (store-and-forward)"
            )
    return Result(
        "hypercube-routing",
        {k: getattr(args, k) for k in ("dims", "procs", "buffers", "load", "trials", "seed")},
        ["k", "p", "buffers", "load %", "messages", "cycles", "max cycles", "referrals", "longest"],
        rows,
        notes,
    )


def _plot(result: Result, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    series = sorted({(r[1], r[2], r[3]) for r in result.rows})
    for p, b, load in series:
        rs = [r for r in result.rows if (r[1], r[2], r[3]) == (p, b, load)]
        ax.plot(
            [r[0] for r in rs],
            [r[5] for r in rs],
            "o-",
            ms=3,
            label=f"p={p}, buffers={b}, load {load}%",
        )
    ax.set_xlabel("dimension k (2^k nodes)")
    ax.set_ylabel("cycles to deliver a one-to-one pattern")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


EXPERIMENTS = [
    Experiment(
        "hypercube-routing",
        "Stanfill 1987 sec. 4: cycles for a one-to-one pattern against k, p, buffers, load",
        _args,
        _run,
        _plot,
    ),
]
