"""Soak of the Transit bidelta network of RN1 routers: every output word (``o_fwd`` of every
output channel, ``i_bk`` of every input channel) checked in every cycle.

The bench's own check (:class:`fattree.sim.checks.rn1.RN1Check`) runs here against the model
alone: its protocol-following endpoints (heads, bytes, TURN or DROP closes, statuses, busy
answers, retries of blocked transmissions after random gaps) react to the model's outputs,
and what they drive and what the model shows is written down as the stimulus and the
expectation for the harness. Phases as the bench's: random destinations, then a hot spot
(every transmission to endpoint 0), round after round. The check's message-level side (every
transmission delivered once, to its destination, bytes intact; every segment after a turn
received as sent; every status comes) runs on the model's outputs, which are the design's
wherever the harness found no mismatch.
"""

from __future__ import annotations

import random

import numpy as np

from ..checks.rn1 import CHECKS, RN1Check, bidelta_layout, transmissions
from ..models.rn1 import RN1BideltaModel
from ..scoreboard import Scoreboard
from .harness import Layout, Port

__all__ = ["RN1BideltaSoak"]

#: Transmissions per input channel in each phase of a round.
PER_INPUT = 16
CHUNK = 16384
#: A channel word: 8 data bits and the begin/end control bit.
WORD = 9


async def _no_wait():
    return None


class RN1BideltaSoak:
    """``messages`` transmissions through the bidelta network of ``params``."""

    unit = "messages"
    SEGMENT = 20_000

    def __init__(self, params: dict, *, messages: int, seed: int):
        self.model = RN1BideltaModel(params["endpoints"], params["seed"])
        self.lay = bidelta_layout(self.model.net)
        self.n = self.lay.channels
        self.messages = messages
        self.rng = random.Random(seed)
        self.scoreboard = Scoreboard(CHECKS)
        self.counts: dict[str, int] = {}
        self.planned = 0
        self.cycles = 0

    def layout(self) -> Layout:
        n = self.n
        return Layout(
            inputs=[Port(f"i__{k}__fwd", WORD) for k in range(n)]
            + [Port(f"o__{k}__bk", WORD) for k in range(n)],
            outputs=[Port(f"o__{k}__fwd", WORD) for k in range(n)]
            + [Port(f"i__{k}__bk", WORD) for k in range(n)],
        )

    def chunks(self, chunk: int = CHUNK):
        model = self.model
        ins: list[list[int]] = []
        outs: list[list[int]] = []

        def read():
            o_fwd, i_bk = list(model.o_fwd), list(model.i_bk)
            outs.append(o_fwd + i_bk)
            return o_fwd, i_bk

        def drive(i_fwd, o_bk):
            ins.append(list(i_fwd) + list(o_bk))

        check = RN1Check(
            model,
            self.scoreboard,
            read,
            drive,
            _no_wait,
            rng=random.Random(self.rng.getrandbits(32)),
            layout=self.lay,
        )
        while self.planned < self.messages:
            for name in ("random", "hotspot"):
                per_input = max(1, min(PER_INPUT, -(-(self.messages - self.planned) // self.n)))
                queues = transmissions(name, per_input, self.rng, self.lay)
                # The check's phase is a coroutine that only awaits the no-op tick: run it
                # by hand, a phase at a time, handing out full chunks between phases.
                phase = check.phase(name, queues, limit=50_000 * per_input)
                try:
                    while True:
                        phase.send(None)
                except StopIteration as done:
                    count = done.value
                self.planned += count
                self.counts[name] = self.counts.get(name, 0) + count
                while len(ins) >= chunk:
                    yield self._pack(ins[:chunk], outs[:chunk])
                    del ins[:chunk], outs[:chunk]
                if self.planned >= self.messages:
                    break
        self.cycles = check.cycle
        self.stats = dict(check.stats)
        if ins:
            yield self._pack(ins, outs)

    @staticmethod
    def _pack(ins, outs):
        return np.array(ins, np.uint64), np.array(outs, np.uint64), None, None

    @property
    def failures(self) -> list[str]:
        sb = self.scoreboard
        return [sb.first_mismatch] * min(sb.mismatches, 1) if sb.mismatches else []

    @property
    def checked(self) -> int:
        return self.scoreboard.checked

    def summary(self) -> dict:
        stats = getattr(self, "stats", {})
        return {
            "messages_by_phase": dict(self.counts),
            "heads_blocked": stats.get("blocked", 0),
            "busy_or_blocked_answers": stats.get("blocked_answers", 0),
            "turned_segments": stats.get("turn_segments", 0),
        }
