"""The hypercube network against :class:`HypercubeModel`, in lock step.

Two checks run side by side:

* cycle by cycle, every output (per processor ``tx_ready``, ``rx_valid``, ``rx_data``; per
  node ``refer``) against the cycle-exact model;
* message by message, every message taken from a processor is taken by the receiver it was
  sent to exactly once, its data intact (a multiset per destination: none lost or
  duplicated), and none stays in the network longer than the phase's limit.

The receivers may stall: with ``stall`` > 0 each processor's ``rx_ready`` is low in a cycle
with that probability (from ``rng``), the same for the design and the model. A message counts
as delivered in the cycle its receive stream transfers it (valid and ready both high). The
time in network of each message (from its transmit transfer to its receive transfer) comes
from the model, which carries each message's send cycle; :attr:`HypercubeCheck.longest` is
the most over every phase.

:func:`hole_rounds` makes the rounds that close the holes of the model's coverage, each tried
on a copy of the model before it runs on the design.

Names are the plain per-processor (or per-node) signals; the callers map them to the design's
ports (``tx[g].valid``, ``tx[g].payload.dest`` ..., ``rx[g].ready``, ``refer[n]``).
"""

from __future__ import annotations

import random
from collections import Counter

from ..coverage import closing_rounds
from ..models.hypercube import Driver, HypercubeModel, run_model, traffic
from ..scoreboard import Scoreboard
from .lockstep import LockstepCheck

__all__ = ["OUTPUTS", "INPUTS", "CHECKS", "HypercubeCheck", "Stalls", "bench_phases", "hole_rounds"]

OUTPUTS = ("tx_ready", "rx_valid", "rx_data", "refer")
INPUTS = ("tx_valid", "tx_dest", "tx_data", "rx_ready")
CHECKS = ("cycle_mismatches", "message_mismatches")


class HypercubeCheck(LockstepCheck):
    """Drives phases of traffic into a hypercube and checks it against ``model``.

    ``read()`` gives the output lists in :data:`OUTPUTS` order, ``drive(valid, dest, data,
    ready)`` sets the per-processor inputs (:data:`INPUTS` order), ``tick()`` waits one
    cycle. ``stall``: probability that a receiver is not ready in a cycle (0: always ready).
    :attr:`cycle` counts the cycles run over every phase, :attr:`referrals` the referrals the
    design reported (its ``refer`` outputs), :attr:`backpressure_cycles` the processor-cycles
    in which a receiver held a message while not ready; :attr:`phases` has one record per
    phase (messages, cycles, referrals, longest time in network).
    """

    #: Once a check has failed, cycles without a delivery after which a phase ends.
    patience = 2000

    def __init__(self, model: HypercubeModel, scoreboard: Scoreboard, read, drive, tick, **kw):
        super().__init__(model, scoreboard, read, drive, tick, **kw)
        self.referrals = 0
        self.longest = 0
        self.phases: dict[str, dict] = {}

    def _ready(self) -> list[int]:
        return self.receivers_ready(self.model.processors)

    async def phase(
        self, name: str, queues: list[list[tuple[int, int]]], limit: int, *, ready=None
    ) -> int:
        """Offer every processor its queue of ``(dest, data)`` messages until each is taken by
        its receiver (at most ``limit`` cycles), then check what was delivered; returns how
        many messages there were. ``ready``: the receivers' ready list in each cycle of the
        phase (:class:`Stalls`), in place of the check's random stalls."""
        sb, model = self.scoreboard, self.model
        n = model.processors
        driver = Driver(queues)
        total = driver.pending()
        received = []
        start, referrals = self.cycle, self.referrals
        progress = self.cycle
        first = len(model.delivered)
        ended = False
        while len(received) < total and self.cycle - start < limit:
            if sb.mismatches and self.cycle - progress > self.patience:
                # The run has failed already, and a broken network that stopped delivering
                # would run to the limit (mutants of fattree.mutants hung there).
                ended = True
                break
            seen = self.read()
            # A receive stream's payload means nothing while it is not valid.
            seen[2] = [x if v else 0 for v, x in zip(seen[1], seen[2], strict=True)]
            valid, dest, data = driver.inputs()
            rx_ready = self._ready() if ready is None else ready(self.cycle - start)
            self.drive(valid, dest, data, rx_ready)
            want = model.step(valid, dest, data, rx_ready)
            expected = [want.tx_ready, want.rx_valid, want.rx_data, want.refer]
            sb.compare("cycle_mismatches", f"{name}, cycle {self.cycle}", seen, expected, OUTPUTS)
            tx_ready, rx_valid, rx_data, refer = seen
            driver.taken(tx_ready)
            arrived = [(g, rx_data[g]) for g in range(n) if rx_valid[g] and rx_ready[g]]
            if arrived:
                received += arrived
                progress = self.cycle
            self.backpressure_cycles += sum(1 for g in range(n) if rx_valid[g] and not rx_ready[g])
            self.referrals += sum(refer)
            self.cycle += 1
            await self.tick()
        # `refer` shows a referral one cycle late; none is missed: in the last cycle every
        # message was in a receive register, none in the network.
        if len(received) < total:
            sb.fail(
                "message_mismatches",
                f"{name}: {total - len(received)} of {total} messages not delivered "
                + (
                    f"(none for {self.patience} cycles after a mismatch: phase ended)"
                    if ended
                    else f"in {limit} cycles"
                ),
            )
        want_messages = Counter((dest, data) for _src, dest, data in driver.sent)
        got_messages = Counter(received)
        sb.checked += len(driver.sent)
        if want_messages != got_messages:
            lost = dict(want_messages - got_messages)
            extra = dict(got_messages - want_messages)
            sb.fail("message_mismatches", f"{name}: lost {lost}, unexpected or duplicated {extra}")
        longest = max((d.latency for d in model.delivered[first:]), default=0)
        self.longest = max(self.longest, longest)
        self.phases[name] = {
            "messages": total,
            "cycles": self.cycle - start,
            "referrals": self.referrals - referrals,
            "longest": longest,
        }
        return total


def bench_phases(dim: int, procs: int, data_bits: int, rng, frames: int):
    """The benches' traffic, phase by phase as ``(name, queues)``: ``frames`` random messages
    in all, a random permutation, transpose, bit reversal, and a hot spot (two each)."""
    per_proc = max(1, -(-frames // ((1 << dim) * procs)))
    return [
        ("random", traffic("random", dim, procs, data_bits, rng, messages=per_proc)),
        ("permutation", traffic("permutation", dim, procs, data_bits, rng)),
        ("transpose", traffic("transpose", dim, procs, data_bits, rng)),
        ("bit-reversal", traffic("bit-reversal", dim, procs, data_bits, rng)),
        ("hotspot", traffic("hotspot", dim, procs, data_bits, rng, messages=2)),
    ]


class Stalls:
    """Receivers not ready in a fraction ``stall`` of the cycles, the same pattern every time
    it is asked (a phase tried on a copy of the model, then run on the design): the ready
    list of ``processors`` receivers in cycle ``t`` of a phase comes from ``seed`` and ``t``."""

    def __init__(self, seed: int, stall: float, processors: int):
        self.seed, self.stall, self.processors = seed, stall, processors

    def __call__(self, t: int) -> list[int]:
        rng = random.Random((self.seed << 32) | t)
        return [int(rng.random() >= self.stall) for _ in range(self.processors)]


def hole_rounds(model: HypercubeModel, rng, *, tries: int):
    """Rounds of traffic that close the holes of ``model.coverage``, each tried on a copy of
    the model first: yields ``(name, queues, options)`` for :meth:`HypercubeCheck.phase`, one
    round that hits a hole at a time, until no hole is left or ``tries`` candidates were
    tried. A candidate is a few messages from some processors, most of them to one hot
    processor in half the candidates (full buffers, referrals, waiting injections), with
    receivers stalling in 0 .. 90 % of the cycles (:class:`Stalls`, so the round repeats
    on the design exactly)."""
    n, bits = model.processors, model.data_bits

    def candidate():
        hot = rng.randrange(n) if rng.random() < 0.5 else None
        queues: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for g in rng.sample(range(n), rng.randrange(1, n + 1)):
            for _ in range(rng.randrange(1, 5)):
                dest = hot if hot is not None and rng.random() < 0.7 else rng.randrange(n)
                queues[g].append((dest, rng.getrandbits(bits)))
        return queues, Stalls(rng.getrandbits(32), rng.choice((0.0, 0.3, 0.6, 0.9)), n)

    def reach(drawn):
        queues, ready = drawn
        twin = model.clone()
        start = twin.cycle
        run_model(twin, queues, limit=100_000, rx_ready=lambda c, r=ready, s=start: r(c - s))
        return twin.coverage

    for k, (queues, ready) in closing_rounds(model, tries, candidate, reach):
        yield f"steer-{k}", queues, {"ready": ready}
