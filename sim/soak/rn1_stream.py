"""Soak of the RN1 networks with an endpoint interface on every node (``rn1-bidelta-stream``,
``rn1-fat-tree``): every endpoint's ``tx.ready``, ``rx.valid``, ``rx`` beat (while valid) and
counters (``sent``, ``retries``, ``received``, ``dropped``) checked in every cycle.

The bench's own check (:class:`fattree.sim.checks.rn1_endpoint.StreamCheck`) runs here
against the model alone: its stream users (frames offered beat by beat with idle cycles, a
beat held until taken, now and then a frame longer than ``max_bytes``; receivers that stall
``backpressure`` percent of the cycles) react to the model's outputs, and what they drive and
what the model shows are written down as the stimulus and the expectation for the harness.
Rounds of two phases: random destinations, then a hot spot (every message to endpoint 0).
The check's message-level side (every message delivered exactly once, to its destination,
bytes intact; over-long frames dropped and counted; the counters against the traffic) runs
on the model's outputs, which are the design's wherever the harness found no mismatch.
"""

from __future__ import annotations

import random

import numpy as np

from ...spec.bits import pack_fields
from ...spec.rn1_endpoint import COUNTER_BITS, TIMEOUT, tx_fields
from ..checks.rn1_endpoint import CHECKS, StreamCheck, Traffic, messages
from ..models.rn1_endpoint import RN1BideltaStreamModel, RN1FatTreeStreamModel
from ..scoreboard import Scoreboard
from .harness import Layout, Port

__all__ = ["RN1BideltaStreamSoak", "RN1FatTreeStreamSoak"]

CHUNK = 16384
#: Messages per endpoint in a round's random phase, and in its hot-spot phase (every message
#: to one endpoint is served two at a time: kept short).
RANDOM_PER_ENDPOINT = 32
HOTSPOT_PER_ENDPOINT = 1
#: Cycles a phase may take, per message of each endpoint (far above what the model needs:
#: a phase that runs into it has stopped delivering, and the check reports it).
LIMIT_PER_MESSAGE = 5000
_COUNTERS = ("sent", "retries", "received", "dropped", "timeouts")


class _EndpointSoak:
    """``messages`` messages through the network with endpoints of ``params`` (the model from
    :meth:`make_model`)."""

    unit = "messages"
    SEGMENT = 20_000

    def __init__(self, params: dict, *, messages: int, seed: int, backpressure: int = 20):
        self.params = params
        self.max_bytes = params["max_bytes"]
        self.model = self.make_model(params)
        self.n = len(self.model.endpoints)
        self.fields = tx_fields(self.n)
        self.messages = messages
        self.rng = random.Random(seed)
        self.traffic = Traffic(backpressure=backpressure)
        self.scoreboard = Scoreboard(CHECKS)
        self.counts: dict[str, int] = {}
        self.stats: dict = {}
        self.cycles = 0

    def make_model(self, params: dict):
        raise NotImplementedError

    def layout(self) -> Layout:
        n, payload = self.n, sum(self.fields.values())
        return Layout(
            inputs=[Port(f"tx__{e}__valid", 1) for e in range(n)]
            + [Port(f"tx__{e}__payload", payload) for e in range(n)]
            + [Port(f"rx__{e}__ready", 1) for e in range(n)],
            outputs=[Port(f"tx__{e}__ready", 1) for e in range(n)]
            + [Port(f"rx__{e}__valid", 1) for e in range(n)]
            + [Port(f"rx__{e}__payload", 9) for e in range(n)]
            + [Port(f"{key}__{e}", COUNTER_BITS) for key in _COUNTERS for e in range(n)],
            # The rx payload means nothing while it is not valid (as in the bench).
            qualified={f"rx__{e}__payload": f"rx__{e}__valid" for e in range(n)},
        )

    def chunks(self, chunk: int = CHUNK):
        model, n, fields = self.model, self.n, self.fields
        ins: list[list[int]] = []
        outs: list[list[int]] = []
        shown: list[list[int]] = []

        def read():
            eps = model.endpoints
            out = {
                "tx_ready": [ep.tx_ready for ep in eps],
                "rx_valid": [ep.rx_valid for ep in eps],
                "rx_beat": [(ep.rx_data | ep.rx_last << 8) if ep.rx_valid else 0 for ep in eps],
            }
            for key in _COUNTERS:
                out[key] = [getattr(ep, key) for ep in eps]
            shown[:] = [
                out["tx_ready"] + out["rx_valid"] + out["rx_beat"],
                [v for key in _COUNTERS for v in out[key]],
            ]
            return out

        def drive(inputs):
            # One row per driven cycle: what the model showed before this cycle's inputs.
            tx = inputs["tx"]
            payload = [pack_fields(fields, data=d, dest=t, last=la) for _, d, t, la in tx]
            ins.append([v for v, *_ in tx] + payload + list(inputs["rx_ready"]))
            outs.append(shown[0] + shown[1])

        check = StreamCheck(
            model,
            self.scoreboard,
            read,
            drive,
            _no_wait,
            max_bytes=self.max_bytes,
            rng=random.Random(self.rng.getrandbits(32)),
            traffic=self.traffic,
        )
        planned = 0
        while planned < self.messages:
            for name, per in (("random", RANDOM_PER_ENDPOINT), ("hotspot", HOTSPOT_PER_ENDPOINT)):
                left = self.messages - planned
                per = max(1, min(per, -(-left // n)))
                queues = messages(name, n, per, self.max_bytes, self.rng, self.traffic.overlong)
                # The check's phase is a coroutine that only awaits the no-op tick: run it by
                # hand, a phase at a time, handing out full chunks between phases.
                phase = check.phase(name, queues, limit=LIMIT_PER_MESSAGE * n * per)
                try:
                    while True:
                        phase.send(None)
                except StopIteration as done:
                    count = done.value
                planned += count
                self.counts[name] = self.counts.get(name, 0) + count
                while len(ins) >= chunk:
                    yield _pack(ins[:chunk], outs[:chunk])
                    del ins[:chunk], outs[:chunk]
                if planned >= self.messages:
                    break
        self.cycles = check.cycle
        self.stats = dict(check.stats)
        if ins:
            yield _pack(ins, outs)

    @property
    def failures(self) -> list[str]:
        sb = self.scoreboard
        return [sb.first_mismatch] if sb.mismatches else []

    @property
    def checked(self) -> int:
        return self.scoreboard.checked

    def summary(self) -> dict:
        return {
            "messages_by_phase": dict(self.counts),
            "retries": self.stats.get("retries", 0),
            "first_try": self.stats.get("first_try", 0),
            "dropped_frames": self.stats.get("dropped", 0),
            "timeouts": self.stats.get("timeouts", 0),
        }


async def _no_wait():
    return None


def _pack(ins, outs):
    return np.array(ins, np.uint64), np.array(outs, np.uint64), None, None


class RN1BideltaStreamSoak(_EndpointSoak):
    """``rn1-bidelta-stream``: :class:`RN1BideltaStreamModel` of the design's parameters."""

    def make_model(self, params: dict):
        p = params
        timeout = p.get("timeout", TIMEOUT)
        return RN1BideltaStreamModel(p["endpoints"], p["seed"], p["retry"], p["max_bytes"], timeout)


class RN1FatTreeStreamSoak(_EndpointSoak):
    """``rn1-fat-tree`` (64 nodes): :class:`RN1FatTreeStreamModel` of the design's parameters."""

    def make_model(self, params: dict):
        return RN1FatTreeStreamModel(params["seed"], params["retry"], params["max_bytes"])
