"""DeHon (1993), the endpoint's view of opening a connection: first-try success, retries per
message and cycles per message against load, for each retry strategy of the endpoint
interface (``rn1-bidelta-stream``; docs/dehon.md, "Endpoints").

``dehon-endpoint-retries`` drives :class:`fattree.sim.models.rn1_endpoint.RN1BideltaStreamModel`
(the bidelta model with the endpoint models: the RTL's cycle-exact reference) through its
streams: an endpoint with nothing to send starts a message of ``--length`` bytes to a random
other endpoint with probability ``load`` per cycle (:class:`LoadDriver`); receivers are always
ready. ``dehon-open-probability`` measures the same network with idealised senders on the raw
channels; this one counts what a user of the interface sees.
"""

from __future__ import annotations

import argparse
import random

from ...spec.rn1_bidelta import SIZES
from ...spec.rn1_endpoint import MAX_BYTES, RETRY
from ..models.rn1_endpoint import RN1BideltaStreamModel
from . import Experiment, Result, counted, positive_int

__all__ = ["EXPERIMENTS", "LoadDriver", "endpoint_load"]


class LoadDriver:
    """The stream users of ``endpoints`` endpoints: one that offers nothing starts a message
    (``length`` bytes, a random other destination) with probability ``load`` per cycle and
    offers its beats until taken. :meth:`offer` gives the ``tx`` beats for one cycle from
    the ``tx_ready`` the design shows; :meth:`taken` advances after the cycle."""

    def __init__(self, endpoints: int, load: float, length: int, rng: random.Random):
        self.n, self.load, self.length, self.rng = endpoints, load, length, rng
        self.frames: list[list[tuple[int, int, int, int]] | None] = [None] * endpoints
        self.started = 0

    def offer(self) -> list[tuple[int, int, int, int]]:
        tx = []
        for e in range(self.n):
            if self.frames[e] is None and self.rng.random() < self.load:
                dest = self.rng.choice([d for d in range(self.n) if d != e])
                self.frames[e] = [
                    (1, self.rng.getrandbits(8), dest, int(k == self.length - 1))
                    for k in range(self.length)
                ]
                self.started += 1
            tx.append(self.frames[e][0] if self.frames[e] else (0, 0, 0, 0))
        return tx

    def taken(self, tx, tx_ready) -> None:
        for e in range(self.n):
            if tx[e][0] and tx_ready[e]:
                self.frames[e].pop(0)
                if not self.frames[e]:
                    self.frames[e] = None


def endpoint_load(endpoints, retry, load, cycles, length, seed) -> dict:
    """Run the model for ``cycles`` under :class:`LoadDriver`; per-message figures of the
    messages confirmed in that time."""
    model = RN1BideltaStreamModel(endpoints, seed, retry, length)
    driver = LoadDriver(endpoints, load, length, random.Random(seed))
    ready = [1] * endpoints
    for _ in range(cycles):
        tx = driver.offer()
        tx_ready = [ep.tx_ready for ep in model.endpoints]
        model.step(tx, ready)
        driver.taken(tx, tx_ready)
    blocked = [b for ep in model.endpoints for b in ep.blocked_per_message]
    latency = [t for ep in model.endpoints for t in ep.latencies]
    done = len(blocked)
    return {
        "messages": done,
        "first_try": sum(b == 0 for b in blocked) / done if done else None,
        "retries_per_message": sum(blocked) / done if done else None,
        "most_retries": max(blocked, default=0),
        "cycles_per_message": sum(latency) / done if done else None,
        "per_endpoint_per_kcycle": 1000 * done / (endpoints * cycles),
    }


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


def _retries(text: str) -> list[str]:
    values = text.split(",")
    bad = [v for v in values if v not in RETRY]
    if bad:
        raise argparse.ArgumentTypeError(
            f"retry strategies are {', '.join(RETRY)}, not {', '.join(map(repr, bad))}"
        )
    return values


def _length(text: str) -> int:
    value = positive_int(text)
    if value > MAX_BYTES:
        raise argparse.ArgumentTypeError(f"length must be at most {MAX_BYTES}, not {value}")
    return value


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--endpoints", type=int, choices=SIZES[:3], default=16, help="bidelta size")
    parser.add_argument(
        "--loads",
        type=_loads,
        default=[0.01, 0.02, 0.05, 0.1, 0.2, 1.0],
        help="probability per cycle that an endpoint with nothing to send starts a message",
    )
    parser.add_argument(
        "--retry", type=_retries, default=list(RETRY), help="comma list of retry strategies"
    )
    parser.add_argument("--cycles", type=positive_int, default=2000, help="cycles per point")
    parser.add_argument("--length", type=_length, default=8, help="payload bytes per message")
    parser.add_argument("--seed", type=int, default=1, help="network and traffic seed")


def _run(args, progress=lambda text: None) -> Result:
    rows = []
    points = [(load, retry) for load in args.loads for retry in args.retry]
    for load, retry in counted(progress, points):
        r = endpoint_load(args.endpoints, retry, load, args.cycles, args.length, args.seed)
        rows.append(
            [
                load,
                retry,
                r["messages"],
                r["first_try"],
                r["retries_per_message"],
                r["most_retries"],
                r["cycles_per_message"],
                r["per_endpoint_per_kcycle"],
            ]
        )
    return Result(
        "dehon-endpoint-retries",
        {k: getattr(args, k) for k in ("endpoints", "loads", "retry", "cycles", "length", "seed")},
        [
            "load",
            "retry",
            "messages",
            "first try",
            "retries/message",
            "most retries",
            "cycles/message",
            "messages/endpoint/kcycle",
        ],
        rows,
        notes=[
            "rn1-bidelta-stream's cycle-exact model: random other destinations, receivers "
            "always ready; cycles/message from the first attempt to the CONNECTED status",
        ],
    )


EXPERIMENTS = [
    Experiment(
        "dehon-endpoint-retries",
        "DeHon: first-try success and retries per message of the endpoint interface vs load",
        _args,
        _run,
    ),
]
