"""What the soaks of the networks whose nodes send ``(dest, data)`` messages on streams share
(the circuit tree, the hypercube): phases of traffic round after round, receivers that stall,
the transmit side driven from the model's ``tx_ready``, and the message-level check.

The model runs ahead and writes, cycle by cycle, the stimulus (every node's transmit stream
and receive ``ready``) and every output the design must show. The transmit side reacts to
``tx_ready`` as the model shows it: if the design differed, that cycle is already a mismatch.
Beside the cycle-by-cycle comparison (in the harness), every phase checks that each message
taken was delivered exactly once, to its destination, with its data, on the model's outputs:
those are the design's outputs wherever the harness found no mismatch.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np

from ..models.driver import Driver
from .harness import Layout, Port

__all__ = ["MessageSoak"]

#: Cycles per chunk handed to the harness.
CHUNK = 16384
#: Cycles a phase may take before the run stops as stuck (per message of the phase).
LIMIT_PER_MESSAGE = 200


class MessageSoak:
    """The stimulus and expectation of ``messages`` messages; a subclass sets the model
    (``self.model``, ``self.nodes``, ``self.dest_bits``, ``self.data_bits``), the output
    ports (:meth:`output_ports`, :meth:`expected`), when a message counts as acknowledged
    (:meth:`acknowledged`) and the phases of one round (:meth:`round`).

    Iterate :meth:`chunks` for ``(stimulus, expected, None, None)``; :meth:`summary` then has
    the counts. ``backpressure``: percent of node-cycles in which a receiver is not ready.
    """

    unit = "messages"
    #: Messages per segment (each from reset, run by a worker of its own: fattree.sim.soak).
    SEGMENT = 20_000
    #: Messages of the random phase of each round (the other phases add a few per node).
    ROUND_MESSAGES = 4096

    def __init__(self, *, messages: int, seed: int, backpressure: int):
        self.messages = messages
        self.rng = random.Random(seed)
        self.ready_rng = np.random.default_rng(self.rng.getrandbits(64))
        self.stall = backpressure / 100
        self.counts: Counter = Counter()
        self.failures: list[str] = []
        self.backpressure_cycles = 0
        self.delivered = 0

    # -- what a subclass gives ---------------------------------------------------------------

    def output_ports(self) -> tuple[list[Port], dict[str, str]]:
        raise NotImplementedError

    def expected(self, out) -> list[int]:
        """One cycle's model outputs in :meth:`output_ports` order."""
        raise NotImplementedError

    def acknowledged(self, out) -> int | None:
        """Messages the senders were told are done this cycle (None: not reported)."""
        return None

    def round(self, messages: int):
        """``(name, queues)`` of one round of phases with ``messages`` random ones."""
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------------

    def layout(self) -> Layout:
        n = self.nodes
        inputs = (
            [Port(f"tx__{k}__valid", 1) for k in range(n)]
            + [Port(f"tx__{k}__payload", self.dest_bits + self.data_bits) for k in range(n)]
            + [Port(f"rx__{k}__ready", 1) for k in range(n)]
        )
        outputs, qualified = self.output_ports()
        return Layout(inputs, outputs, qualified=qualified)

    def _phases(self):
        """Phases of traffic, round after round, until ``messages`` are planned."""
        planned = 0
        while planned < self.messages:
            # Short runs get every phase too: half their messages in the random phase.
            left = self.messages - planned
            per_round = min(self.ROUND_MESSAGES, max(self.nodes, left // 2))
            for name, queues in self.round(per_round):
                left = self.messages - planned
                total = sum(len(q) for q in queues)
                if total > left:  # the run ends at exactly `messages`
                    queues, total = _trim(queues, left), left
                if total:
                    planned += total
                    yield name, queues
                if planned >= self.messages:
                    return

    def chunks(self, chunk: int = CHUNK):
        n, step = self.nodes, self.model.step
        ins: list[list[int]] = []
        outs: list[list[int]] = []
        ready_block, r = self._ready_block(chunk), 0
        for name, queues in self._phases():
            driver = Driver(queues)
            total = driver.pending()
            limit = LIMIT_PER_MESSAGE * max(total, n)
            done = 0
            received = []
            cycles = 0
            tracked = None
            while (tracked is not None and done < total) or len(received) < total:
                if cycles >= limit:
                    raise RuntimeError(
                        f"{name} phase: {total - len(received)} of {total} messages not "
                        f"delivered by the model in {limit} cycles"
                    )
                valid, dest, data = driver.inputs()
                if r == len(ready_block):
                    ready_block, r = self._ready_block(chunk), 0
                ready = ready_block[r]
                r += 1
                out = step(valid, dest, data, ready)
                ins.append(valid + dest + data + ready)
                outs.append(self.expected(out))
                driver.taken(out.tx_ready)
                tracked = self.acknowledged(out)
                if tracked is not None:
                    done += tracked
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
        block = self.ready_rng.random((chunk, self.nodes)) >= self.stall
        return block.astype(np.int64).tolist()

    def _pack(self, ins, outs):
        n = self.nodes
        stim = np.array(ins, dtype=np.uint64)
        # Columns: valid, dest, data, ready -> valid, payload (dest low, then data), ready.
        payload = stim[:, n : 2 * n] | (stim[:, 2 * n : 3 * n] << np.uint64(self.dest_bits))
        stimulus = np.concatenate([stim[:, :n], payload, stim[:, 3 * n :]], axis=1)
        return stimulus, np.array(outs, dtype=np.uint64), None, None

    def summary(self) -> dict:
        return {
            "messages_by_phase": dict(self.counts),
            "delivered": self.delivered,
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
