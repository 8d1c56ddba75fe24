"""Soak of the circuit-switched fat tree: the model runs ahead and writes, cycle by cycle,
the stimulus (every node's transmit stream and receive ``ready``) and every output the design
must show (``tx_ready``, ``tx_done``, ``tx_reject``, ``rx_valid``, ``rx_data`` of every node).

Traffic comes in rounds of the benches' phases (:func:`fattree.sim.checks.circuit_tree.
bench_phases`: random, transpose, bit reversal, a random shift, a hot spot), each phase run
until every message is acknowledged and taken, so rejects and retries happen all the time;
the receivers stall at random (``backpressure`` percent of node-cycles), from a seeded
generator. The transmit side reacts to ``tx_ready`` as the model shows it: if the design
differed, the first differing cycle is already a mismatch.

Beside the cycle-by-cycle comparison (in the harness), every phase checks that each message
taken was delivered exactly once, to its destination, with its data, on the model's outputs:
those are the design's outputs wherever the harness found no mismatch.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np

from ..checks.circuit_tree import bench_phases
from ..models.circuit import CircuitTreeModel, Driver
from .harness import Layout

__all__ = ["CircuitTreeSoak"]

#: Messages of the random phase of each round (the other phases add about 2 per node).
ROUND_MESSAGES = 4096
#: Cycles per chunk handed to the harness.
CHUNK = 16384
#: Cycles a phase may take before the run stops as stuck (per message of the phase).
LIMIT_PER_MESSAGE = 200


class CircuitTreeSoak:
    """The stimulus and expectation of ``messages`` messages on a circuit tree of ``params``.

    Iterate :meth:`chunks` for ``(stimulus, expected, None, None)``; :meth:`summary` then has
    the counts. ``backpressure``: percent of node-cycles in which a receiver is not ready.
    """

    unit = "messages"
    #: Messages per segment (each from reset, run by a worker of its own: fattree.sim.soak).
    SEGMENT = 20_000

    def __init__(self, params: dict, *, messages: int, seed: int, backpressure: int = 30):
        self.leaves, self.width, self.length = params["leaves"], params["width"], params["length"]
        retry = ("immediate", "round", "backoff")[params["retry"]]
        extra = {"faults": params["faults"]} if params.get("faults") else {}
        self.model = CircuitTreeModel(
            self.leaves, self.width, self.length, params["seed"], retry, **extra
        )
        self.messages = messages
        self.rng = random.Random(seed)
        self.ready_rng = np.random.default_rng(self.rng.getrandbits(64))
        self.stall = backpressure / 100
        self.dest_bits = self.leaves.bit_length() - 1
        self.counts: Counter = Counter()
        self.failures: list[str] = []
        self.rejects = 0
        self.backpressure_cycles = 0
        self.delivered = 0

    def layout(self) -> Layout:
        from .harness import Port

        n, db = self.leaves, self.dest_bits
        payload = db + self.width * self.length
        data = self.width * self.length
        inputs = (
            [Port(f"tx__{k}__valid", 1) for k in range(n)]
            + [Port(f"tx__{k}__payload", payload) for k in range(n)]
            + [Port(f"rx__{k}__ready", 1) for k in range(n)]
        )
        outputs = [
            Port(fmt.format(k), 1)
            for fmt in ("tx__{}__ready", "tx_done__{}", "tx_reject__{}", "rx__{}__valid")
            for k in range(n)
        ] + [Port(f"rx__{k}__payload", data) for k in range(n)]
        return Layout(inputs, outputs)

    def _phases(self):
        """Phases of traffic, round after round, until ``messages`` are planned."""
        planned = 0
        while planned < self.messages:
            # Short runs get every phase too: half their messages in the random phase.
            per_round = min(ROUND_MESSAGES, max(self.leaves, (self.messages - planned) // 2))
            for name, queues in bench_phases(
                self.leaves, self.width, self.length, self.rng, per_round
            ):
                # Only the queues' heads that fit: the run ends at exactly `messages`.
                left = self.messages - planned
                total = sum(len(q) for q in queues)
                if total > left:
                    queues = _trim(queues, left)
                    total = left
                if total:
                    planned += total
                    yield name, queues
                if planned >= self.messages:
                    return

    def chunks(self, chunk: int = CHUNK):
        n, model = self.leaves, self.model
        step = model.step
        ins: list[list[int]] = []
        outs: list[list[int]] = []
        ready_block = self._ready_block(chunk)
        r = 0
        for name, queues in self._phases():
            driver = Driver(queues)
            total = sum(len(q) for q in queues)
            limit = LIMIT_PER_MESSAGE * max(total, n)
            done = 0
            received = []
            cycles = 0
            while done < total or len(received) < total:
                if cycles >= limit:
                    raise RuntimeError(
                        f"{name} phase: {total - done} messages not acknowledged in the model "
                        f"after {limit} cycles"
                    )
                valid, dest, data = driver.inputs()
                if r == len(ready_block):
                    ready_block, r = self._ready_block(chunk), 0
                ready = ready_block[r]
                r += 1
                out = step(valid, dest, data, ready)
                ins.append(valid + dest + data + ready)
                outs.append(out.tx_ready + out.tx_done + out.tx_reject + out.rx_valid + out.rx_data)
                driver.taken(out.tx_ready)
                done += sum(out.tx_done)
                self.rejects += sum(out.tx_reject)
                rx_valid, rx_data = out.rx_valid, out.rx_data
                for k in range(n):
                    if rx_valid[k]:
                        if ready[k]:
                            received.append((k, rx_data[k]))
                        else:
                            self.backpressure_cycles += 1
                cycles += 1
                if len(ins) == chunk:
                    yield self._pack(ins, outs)
                    ins, outs = [], []
            sent = Counter((dest, data) for _src, dest, data in driver.sent)
            got = Counter(received)
            if sent != got:
                self.failures.append(
                    f"{name} phase: lost {dict(sent - got)}, unexpected {dict(got - sent)}"
                )
            self.counts[name] += total
            self.delivered += len(received)
        if ins:
            yield self._pack(ins, outs)

    def _ready_block(self, chunk: int) -> list[list[int]]:
        block = self.ready_rng.random((chunk, self.leaves)) >= self.stall
        return block.astype(np.int64).tolist()

    def _pack(self, ins, outs):
        n = self.leaves
        stim = np.array(ins, dtype=np.uint64)
        # Columns: valid, dest, data, ready -> valid, payload (dest low, then data), ready.
        payload = stim[:, n : 2 * n] | (stim[:, 2 * n : 3 * n] << np.uint64(self.dest_bits))
        stimulus = np.concatenate([stim[:, :n], payload, stim[:, 3 * n :]], axis=1)
        return stimulus, np.array(outs, dtype=np.uint64), None, None

    def summary(self) -> dict:
        return {
            "messages_by_phase": dict(self.counts),
            "delivered": self.delivered,
            "rejects": self.rejects,
            "receiver_rejects": sum(ni.rx_rejects for ni in self.model.nis),
            "backpressure_cycles": self.backpressure_cycles,
        }

    @property
    def checked(self) -> int:
        return self.delivered


def _trim(queues, count: int):
    """The first ``count`` messages of ``queues``, taken round-robin over the nodes."""
    out = [[] for _ in queues]
    depth = 0
    while count:
        for k, q in enumerate(queues):
            if depth < len(q) and count:
                out[k].append(q[depth])
                count -= 1
        depth += 1
    return out
