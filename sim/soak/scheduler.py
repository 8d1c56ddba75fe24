"""Soak of the level-wise scheduler: commands in bulk, every result checked in order.

The scheduler's contract is one result per request, in request order, with timing free (its
reference, :class:`~fattree.sim.models.scheduler.SchedulerModel`, is sequential), so the
harness feeds the commands through the request stream and compares each result taken from
the result stream with the reference's, word for word: every field (op, source,
destination, granted, the ports chosen at each level). The stimulus decides in which cycles
a request is offered (85 %) and the result stream is ready (80 %), from a seeded generator;
a request once offered stays until it is taken.

Commands come as the bench's (:func:`fattree.sim.checks.scheduler.make_commands`): bursts of
schedules and releases from all nodes and from two hot leaf switches in turn, now and then a
clear, and a clear plus a random permutation of all nodes after every 20 bursts. A
:class:`~fattree.sim.models.scheduler_commands.LinkLedger` that does not trust the model
follows the results: no link is granted to two established connections.
"""

from __future__ import annotations

import random

import numpy as np

from ...spec.scheduler import field_offsets, request_fields, result_fields
from ..checks.scheduler import BURST, tree_of
from ..models.scheduler_commands import CommandStream, LinkLedger
from .harness import Layout, Port, StreamIn, StreamOut

__all__ = ["SchedulerSoak"]

#: Bursts of commands between two permutations.
BURSTS_PER_ROUND = 20
#: Cycles per chunk; each carries the commands it can be expected to pass (see chunks).
CHUNK = 32768
OFFER, READY = 0.85, 0.8


class SchedulerSoak:
    """``messages`` results of the scheduler FT(``levels``, ``w``) of ``params`` (or
    FT(``levels``, ``m``, ``w``) with the design's ``m``)."""

    unit = "results"
    #: The soak's parameter point unless --param says otherwise: the paper's FT(3, 16).
    DEFAULTS = {"w": 16}

    def __init__(self, params: dict, *, messages: int, seed: int):
        self.levels, self.w = params["levels"], params["w"]
        self.tree = tree_of(params)
        self.m = self.tree.m
        self.stream = CommandStream(self.tree)
        self.ledger = LinkLedger(self.tree)
        self.messages = messages
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(self.rng.getrandbits(64))
        self.req = field_offsets(request_fields(self.levels, self.w, self.m))
        self.res = field_offsets(result_fields(self.levels, self.w, self.m))
        self.port_bits = (self.w - 1).bit_length()
        self.failures: list[str] = []
        self.planned = 0
        self.granted = 0
        self._bursts = 0

    def layout(self) -> Layout:
        fields = request_fields(self.levels, self.w, self.m)
        bits = sum(s[0] * s[1] if isinstance(s, tuple) else s for _, s in fields)
        return Layout(
            inputs=[Port("requests__valid", 1), Port("results__ready", 1)],
            outputs=[],
            stream_in=StreamIn("requests__valid", "requests__ready", "requests__payload"),
            stream_out=StreamOut("results__valid", "results__ready", "results__payload"),
            tied=[Port("requests__payload", bits)],
        )

    def _ports(self, ports, offset: int) -> int:
        return sum(p << (offset + i * self.port_bits) for i, p in enumerate(ports))

    def _request(self, op, src, dst, ports) -> int:
        r = self.req
        return (
            (int(op) << r["op"])
            | (src << r["src"])
            | (dst << r["dst"])
            | self._ports(ports, r["ports"])
        )

    def _result(self, op, src, dst, granted, ports) -> int:
        r = self.res
        return (
            (int(op) << r["op"])
            | (src << r["src"])
            | (dst << r["dst"])
            | (granted << r["granted"])
            | self._ports(ports, r["ports"])
        )

    def _commands(self, count: int) -> None:
        """At least ``count`` more commands into the stream (whole bursts), at most what is
        left to plan."""
        stream, rng = self.stream, self.rng
        target = len(stream.commands) + count
        while len(stream.commands) < target and self.planned + len(stream.commands) < (
            self.messages
        ):
            if self._bursts == BURSTS_PER_ROUND:
                stream.permutation(rng)
                self._bursts = 0
            else:
                nodes = stream.hot_nodes(rng) if self._bursts % 2 else None
                stream.random(rng, BURST, nodes=nodes, releases=0.24, clears=0.01)
                self._bursts += 1

    def chunks(self, chunk: int = CHUNK):
        stream = self.stream
        # A chunk's cycles pass about min(OFFER, READY) commands each; ask for a little less so
        # the queue in the harness drains between chunks.
        per_chunk = int(chunk * min(OFFER, READY) * 0.9)
        while self.planned < self.messages:
            self._commands(per_chunk)
            left = self.messages - self.planned
            commands, expected = stream.commands[:left], stream.expected[:left]
            del stream.commands[:], stream.expected[:]
            self.planned += len(commands)
            for result in expected:
                if result[0] == 0 and result[3]:
                    self.granted += 1
                for problem in self.ledger.apply(result):
                    self.failures.append(problem)
            queue = [self._request(*c) for c in commands]
            expect = [self._result(*e) for e in expected]
            cycles = min(chunk, int(len(queue) / (min(OFFER, READY) * 0.9)) + 64)
            offer = self.np_rng.random(cycles) < OFFER
            ready = self.np_rng.random(cycles) < READY
            stimulus = np.stack([offer, ready], axis=1).astype(np.uint64)
            yield stimulus, np.zeros((cycles, 0), np.uint64), queue, expect
        # The harness then drains the queues (every request offered, every result taken).

    @property
    def checked(self) -> int:
        """Results handed to the harness so far (it reports how many it compared)."""
        return self.planned

    def summary(self) -> dict:
        return {"commands": self.planned, "granted": self.granted}
