"""DeHon (1993): the probability of opening a connection on the first try (section lost with
its figures): ``dehon-open-probability`` drives the cycle-exact bidelta model
(:class:`fattree.sim.models.rn1.RN1BideltaModel`, the RTL's reference) with random traffic at
several loads.
"""

from __future__ import annotations

import argparse
import random

from ...spec.rn1 import BLOCKED, CONNECTED, DROP, STATUS, ctrl_of, data_of, word
from ...spec.rn1_bidelta import ENDPOINT_LINKS, SIZES
from ..models.rn1 import RN1BideltaModel
from . import Experiment, Result, counted, positive_int

__all__ = ["EXPERIMENTS"]


def _loads(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a comma list of numbers, not {text!r}"
        ) from None
    if not values or any(not 0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"loads must be in (0, 1], not {text!r}")
    return values


def _open_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoints", type=int, choices=SIZES[1:3], default=16, help="bidelta size"
    )
    parser.add_argument(
        "--loads",
        type=_loads,
        default=[0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
        help="probability per cycle that an idle input starts a transmission",
    )
    parser.add_argument("--cycles", type=positive_int, default=2000, help="cycles per load")
    parser.add_argument("--length", type=positive_int, default=8, help="bytes per transmission")
    parser.add_argument("--seed", type=int, default=1, help="network and traffic seed")


def open_probability(endpoints, load, cycles, length, seed):
    """Drive :class:`RN1BideltaModel` for ``cycles`` with senders on every network input
    (an idle one starts a transmission of ``length`` bytes to a random other endpoint with
    probability ``load`` per cycle, closes it with DROP and waits for the status; a blocked
    one is sent again after 0..3 idle cycles) and receivers that answer CONNECTED the cycle
    they see the close. Returns ``(first tries, first tries opened, tries, tries opened)``."""
    model = RN1BideltaModel(endpoints, seed)
    net = model.net
    rng = random.Random(seed)
    n = ENDPOINT_LINKS * endpoints
    # Per sender: queued words, waiting flag, retry words, whether the try is a first one.
    words = [[] for _ in range(n)]
    waiting = [False] * n
    retry = [None] * n
    gap = [0] * n
    first = [True] * n
    prev_out = [0] * n
    counts = [0, 0, 0, 0]
    for _ in range(cycles):
        o_fwd, i_bk = model.o_fwd, model.i_bk
        i_fwd = [0] * n
        for c in range(n):
            if waiting[c]:
                w = i_bk[c]
                if not ctrl_of(w) and data_of(w) in STATUS:
                    waiting[c] = False
                    opened = data_of(w) == CONNECTED
                    counts[2] += 1
                    counts[3] += opened
                    if first[c]:
                        counts[0] += 1
                        counts[1] += opened
                    if data_of(w) == BLOCKED:
                        first[c], gap[c] = False, rng.randint(0, 3)
                    else:
                        retry[c], first[c] = None, True
                continue
            if not words[c]:
                if gap[c]:
                    gap[c] -= 1
                    continue
                if retry[c] is None:
                    if rng.random() >= load:
                        continue
                    own = c // ENDPOINT_LINKS
                    dest = rng.choice([e for e in range(endpoints) if e != own])
                    data = [rng.getrandbits(8) for _ in range(length - 1)]
                    retry[c] = [word(1, net.head(dest, rng.getrandbits(8)))] + [
                        word(1, b) for b in data
                    ]
                words[c] = retry[c] + [word(0, DROP)]
            i_fwd[c] = words[c].pop(0)
            if not words[c]:
                waiting[c] = True
        # Receivers: CONNECTED in the cycle a transmission's close arrives.
        o_bk = [
            word(0, CONNECTED) if not ctrl_of(o_fwd[c]) and ctrl_of(prev_out[c]) else 0
            for c in range(n)
        ]
        prev_out = o_fwd
        model.step(i_fwd, o_bk)
    return tuple(counts)


def _open_run(args, progress=lambda text: None) -> Result:
    rows = []
    for load in counted(progress, args.loads):
        first, first_ok, tries, ok = open_probability(
            args.endpoints, load, args.cycles, args.length, args.seed
        )
        rows.append(
            [
                load,
                first,
                first_ok / first if first else None,
                tries,
                ok / tries if tries else None,
                ok / (args.cycles * ENDPOINT_LINKS * args.endpoints),
            ]
        )
    return Result(
        "dehon-open-probability",
        {k: getattr(args, k) for k in ("endpoints", "loads", "cycles", "length", "seed")},
        ["load", "first tries", "P(open, first try)", "tries", "P(open)", "opened/input/cycle"],
        rows,
        notes=[
            "cycle-exact bidelta model (the RTL's reference): random destinations, DROP-closed "
            "transmissions, blocked ones sent again after 0..3 cycles; a try counts when its "
            "status arrives",
        ],
    )


EXPERIMENTS = [
    Experiment(
        "dehon-open-probability",
        "DeHon: probability that a connection opens on the first try (bidelta model)",
        _open_args,
        _open_run,
    ),
]
