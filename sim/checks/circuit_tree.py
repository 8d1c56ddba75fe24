"""The circuit-switched fat tree against :class:`CircuitTreeModel`, in lock step.

Two checks run side by side:

* cycle by cycle, every output of every node (``tx_ready``, ``tx_done``, ``tx_reject``,
  ``rx_valid``, ``rx_data``) against the cycle-exact model, with the same LFSRs, arbitration
  and interface state machines;
* message by message, every message taken by a node is delivered exactly once, to its
  destination, with its data intact (a multiset per destination: none lost or duplicated).

The receivers may stall: with ``stall`` > 0 each node's ``rx_ready`` is low in a cycle with
that probability (from ``rng``), the same for the design and the model. A message counts as
delivered in the cycle its receive stream transfers it (valid and ready both high).

With faults in the model (:mod:`fattree.spec.faults`) the cycle-by-cycle check is the whole
check: the model says which messages a dead link swallows or a stuck wire corrupts. A phase
then ends once nothing was delivered for :attr:`patience` cycles (a message into a
dead link is never answered, its sender waits for ever), and :attr:`undelivered` counts the
messages not delivered intact.

Without faults a phase also ends, failed, :attr:`patience` cycles after its first mismatch:
a broken design may hang, or keep delivering wrong or duplicate messages, until the phase's
cycle limit (a design that falls behind the model's deliveries shows it at once as a
mismatch of ``tx_done`` or ``rx_valid``, the comparison being cycle-exact).

Names are the plain signals of one node; the callers map them to the design's ports
(``tx[n].valid``, ``tx[n].payload.dest`` ..., ``rx[n].ready``).
"""

from __future__ import annotations

from collections import Counter

from ..coverage import closing_rounds
from ..models.circuit import CircuitTreeModel, Driver, run_model, traffic
from ..models.circuit_fast import CircuitFastTreeModel
from .lockstep import LockstepCheck

__all__ = [
    "OUTPUTS",
    "INPUTS",
    "CHECKS",
    "MODELS",
    "CircuitTreeCheck",
    "dut_signals",
    "bench_phases",
    "steering_phases",
    "hole_rounds",
]

OUTPUTS = ("tx_ready", "tx_done", "tx_reject", "rx_valid", "rx_data")
INPUTS = ("tx_valid", "tx_dest", "tx_data", "rx_ready")


def dut_signals(dut, leaves: int) -> dict[str, list]:
    """The design's port signals behind the check's plain names (:data:`OUTPUTS`,
    :data:`INPUTS`), per node, for a check driven through amaranth.sim."""
    return {
        "tx_valid": [dut.tx[n].valid for n in range(leaves)],
        "tx_ready": [dut.tx[n].ready for n in range(leaves)],
        "tx_dest": [dut.tx[n].payload.dest for n in range(leaves)],
        "tx_data": [dut.tx[n].payload.data for n in range(leaves)],
        "tx_done": [dut.tx_done[n] for n in range(leaves)],
        "tx_reject": [dut.tx_reject[n] for n in range(leaves)],
        "rx_valid": [dut.rx[n].valid for n in range(leaves)],
        "rx_ready": [dut.rx[n].ready for n in range(leaves)],
        "rx_data": [dut.rx[n].payload.data for n in range(leaves)],
    }


CHECKS = ("cycle_mismatches", "message_mismatches")

#: The model of each circuit tree, built from the design's parameters (the benches' choice).
MODELS = {
    "circuit-tree-paper": lambda p: CircuitTreeModel(
        p["leaves"], p["width"], p["length"], p["seed"], p["retry"], p.get("faults", "")
    ),
    "circuit-tree": lambda p: CircuitFastTreeModel(
        p["leaves"], p["width"], p["length"], p["seed"], p["window"], p.get("faults", "")
    ),
}
#: What each circuit tree's bench adds to the shared traffic: ``own``, the random phase may
#: send a message to its sender's own node (:func:`bench_phases`; the fast tree turns it back
#: at the leaf router, the paper's protocol has no such message), and ``gaps``, how often a
#: sender pauses (:class:`CircuitTreeCheck`). The fast tree needs the pauses: its fates come
#: back after fixed delays, so nodes that start together send their heads in step for ever,
#: and a head would never meet a port held by another message's words, down or up.
#: ``collisions``: the bench ends with :func:`~.circuit_collisions.collision_rounds`.
TRAFFIC = {
    "circuit-tree-paper": {"own": False, "gaps": 0.0, "collisions": True},
    "circuit-tree": {"own": True, "gaps": 0.2, "collisions": True},
}
#: With faults, cycles without a delivery after which a phase gives up on the rest.
FAULT_PATIENCE = 5000


class CircuitTreeCheck(LockstepCheck):
    """Drives phases of traffic into a circuit tree and checks it against ``model``.

    ``read()`` gives the per-node output lists in :data:`OUTPUTS` order, ``drive(valid, dest,
    data, ready)`` sets the per-node inputs (:data:`INPUTS` order), ``tick()`` waits one
    cycle. ``stall``: probability that a receiver is not ready in a cycle (0: always ready);
    ``gaps``: probability that a sender with a message to send holds ``tx_valid`` low in a
    cycle (0: never), so that the nodes do not send in step.
    :attr:`cycle` counts the cycles run, over every phase; :attr:`backpressure_cycles` the
    node-cycles in which a receiver held a message while not ready.
    """

    #: With faults: messages sent but not delivered intact, over every phase.
    undelivered = 0
    #: With faults: cycles without a delivery after which a phase ends.
    patience = FAULT_PATIENCE

    def __init__(self, *args, gaps: float = 0.0, **kwargs):
        super().__init__(*args, **kwargs)
        if not 0 <= gaps < 1:
            raise ValueError(f"gaps must be at least 0 and below 1, not {gaps!r}")
        self.gaps = gaps

    def _offered(self, valid: list[int]) -> list[int]:
        """This cycle's ``tx_valid``: each sender paused with the probability ``gaps``."""
        if not self.gaps:
            return valid
        return [int(v and self.rng.random() >= self.gaps) for v in valid]

    def _ready(self) -> list[int]:
        return self.receivers_ready(self.model.leaves)

    async def phase(
        self,
        name: str,
        queues: list[list[tuple[int, int]]],
        limit: int,
        *,
        delays: list[int] | None = None,
        stall: float | None = None,
        gaps: float | None = None,
    ) -> int:
        """Offer every node its queue of ``(dest, data)`` messages until each is acknowledged
        and taken by its receiver (at most ``limit`` cycles), then check what was delivered;
        returns how many there were. ``delays``: per node, cycles of the phase before it
        offers its first message; ``stall``: the receivers' stall probability in this phase
        and ``gaps`` the senders' pauses in this phase (default: the check's)."""
        kept = self.stall, self.gaps
        self.stall = kept[0] if stall is None else stall
        self.gaps = kept[1] if gaps is None else gaps
        try:
            return await self._phase(name, queues, limit, delays or [0] * len(queues))
        finally:
            self.stall, self.gaps = kept

    async def _phase(self, name, queues, limit, delays) -> int:
        sb, leaves = self.scoreboard, self.model.leaves
        driver = Driver(queues)
        total = sum(len(q) for q in queues)
        done = 0
        received = []
        start = progress = self.cycle
        faulty = bool(getattr(self.model, "faults", ()))
        mismatches = sb.mismatches
        failed_at = None  # the cycle of this phase's first mismatch
        stuck = ""
        while (done < total or len(received) < total) and self.cycle - start < limit:
            if (faulty or sb.mismatches) and self.cycle - progress > self.patience:
                # Faults: a dead link's sender waits for ever. Mismatches: the run has failed
                # already, and a broken design that stopped delivering would run to the limit
                # (mutants of fattree.mutants hung there).
                stuck = f"nothing delivered for {self.patience} cycles"
                break
            if not faulty and failed_at is not None and self.cycle - failed_at > self.patience:
                # Failed already; a broken design that keeps delivering wrong or duplicate
                # messages never finishes the phase (mutants hung to the cycle limit).
                stuck = f"the phase failed {self.patience} cycles ago"
                break
            seen = self.read()
            valid, dest, data = driver.inputs()
            valid = self._offered(valid)
            if self.cycle - start < max(delays):
                valid = [
                    v if self.cycle - start >= d else 0 for v, d in zip(valid, delays, strict=True)
                ]
            ready = self._ready()
            self.drive(valid, dest, data, ready)
            want = self.model.step(valid, dest, data, ready)
            expected = [want.tx_ready, want.tx_done, want.tx_reject, want.rx_valid, want.rx_data]
            if None in want.rx_data:  # a model that leaves rx_data open while rx_valid is 0
                pairs = zip(seen[4], want.rx_data, strict=True)
                got = [d if w is not None else None for d, w in pairs]
                seen = [*seen[:4], got]
            sb.compare("cycle_mismatches", f"cycle {self.cycle}", seen, expected, OUTPUTS)
            driver.taken([r & v for r, v in zip(seen[0], valid, strict=True)])
            before = done + len(received)
            done += sum(seen[1])
            received += [(n, seen[4][n]) for n in range(leaves) if seen[3][n] and ready[n]]
            if done + len(received) > before:
                progress = self.cycle
            if failed_at is None and sb.mismatches > mismatches:
                failed_at = self.cycle
            self.backpressure_cycles += sum(1 for n in range(leaves) if seen[3][n] and not ready[n])
            self.cycle += 1
            await self.tick()
        want_messages = Counter((dest, data) for _src, dest, data in driver.sent)
        got_messages = Counter(received)
        if faulty:
            self.undelivered += total - sum((want_messages & got_messages).values())
            sb.checked += len(driver.sent)
            return total
        if done < total:
            within = f"({stuck})" if stuck else f"in {limit} cycles"
            sb.fail(
                "message_mismatches", f"{name}: {total - done} messages not acknowledged {within}"
            )
        # Every message acknowledged and taken by its receiver: nothing is in flight or waiting.
        sb.checked += len(driver.sent)
        if want_messages != got_messages:
            lost = dict(want_messages - got_messages)
            extra = dict(got_messages - want_messages)
            sb.fail("message_mismatches", f"{name}: lost {lost}, unexpected or duplicated {extra}")
        return total


def steering_phases(
    leaves: int, width: int, length: int, rng, frames: int, *, stalls: bool = True
) -> list:
    """Phases that steer the traffic into the rarer situations of the rules, as
    ``(name, queues, options)`` for :meth:`CircuitTreeCheck.phase`: ``staggered``, random
    messages whose senders start at random delays of up to four hops per level (so that
    headers from below and from above meet in one router: from a common start they never
    do, a header from above having come two hops further per level), and ``hotspot-stalled``,
    every node sending to node 0 while the receivers are not ready in 90 % of the cycles (so
    that messages arrive at a full receive stream; not with ``stalls`` False, for receivers
    that are always ready)."""
    h = leaves.bit_length() - 1
    per_node = max(1, -(-frames // leaves))
    staggered = traffic("random", leaves, width, length, rng, messages=per_node)
    delays = [rng.randrange(4 * h + 1) for _ in range(leaves)]
    hot = traffic("hotspot", leaves, width, length, rng, messages=2)
    phases = [("staggered", staggered, {"delays": delays})]
    return [*phases, ("hotspot-stalled", hot, {"stall": 0.9})] if stalls else phases


def hole_rounds(model, width: int, length: int, rng, *, own: bool, tries: int):
    """Rounds of a few messages that close the holes of ``model.coverage``, found by trying
    each candidate on a copy of the model first (receivers ready, no pauses, so the run
    repeats on the design exactly): yields ``(name, queues, options)`` for
    :meth:`CircuitTreeCheck.phase`, one round that hits a hole at a time, until no hole is
    left or ``tries`` candidates were tried. The candidates are random messages from
    random delays, and rounds aimed at one router: two messages crossing it from its two
    halves and two arriving from its sibling's, four hops later, from above."""
    leaves = model.leaves

    def candidate():
        if rng.random() < 0.5:
            senders = _aimed_round(leaves, rng)
        else:
            senders = _random_round(leaves, rng, own=own)
        queues = [[] for _ in range(leaves)]
        delays = [0] * leaves
        for n, (dest, delay) in senders.items():
            queues[n], delays[n] = [(dest, rng.getrandbits(width * length))], delay
        return queues, delays

    for k, (queues, delays) in closing_rounds(model, tries, candidate, lambda r: _tried(model, *r)):
        yield f"steer-{k}", queues, {"delays": delays, "stall": 0.0, "gaps": 0.0}


def _aimed_round(leaves: int, rng) -> dict[int, tuple[int, int]]:
    """Senders ``{node: (dest, delay)}`` aimed at one router below the top: a message across
    it from each half of its subtree, and two into its subtree from the sibling subtree's
    halves, which turn one level up and come down to it ``gap`` cycles later."""
    h = leaves.bit_length() - 1
    level = rng.randrange(max(1, h - 1))
    size = 1 << (level + 1)
    base = rng.randrange(0, leaves, 2 * size) if 2 * size <= leaves else 0
    own = list(range(base, base + size))
    sibling = list(range(base + size, base + 2 * size)) if 2 * size <= leaves else own
    gap = rng.choice((2, 4, 6))
    low, high = own[: size // 2], own[size // 2 :]
    return {
        rng.choice(low): (rng.choice(high), gap),
        rng.choice(high): (rng.choice(low), gap),
        rng.choice(sibling[: size // 2]): (rng.choice(own), 0),
        rng.choice(sibling[size // 2 :]): (rng.choice(own), 0),
    }


def _random_round(leaves: int, rng, *, own: bool) -> dict[int, tuple[int, int]]:
    h = leaves.bit_length() - 1
    senders = rng.sample(range(leaves), rng.randrange(2, min(leaves, 8) + 1))
    return {
        n: (rng.choice([d for d in range(leaves) if own or d != n]), rng.randrange(4 * h + 1))
        for n in senders
    }


def _tried(model, queues, delays):
    """The coverage a round would reach: run on a clone of ``model`` as the check runs it
    (receivers always ready), to the last message delivered."""
    twin = model.clone()
    run_model(twin, queues, max_cycles=twin.cycle + 10_000, delays=delays)
    return twin.coverage


def bench_phases(leaves: int, width: int, length: int, rng, frames: int, *, own: bool = False):
    """The benches' traffic, phase by phase as ``(name, queues)``: ``frames`` random messages
    in all (to other nodes), transpose, bit reversal, a random cyclic shift, and a hot spot
    (two each to node 0 from every other node).

    ``own``: for a design whose nodes may send to themselves, then ``frames`` more random
    messages, to any node, the sender's own included, and, instead of the one hot spot, a hot
    spot on every node in turn, the hot node sending its two to itself as well: its own heads
    meet the others' at its leaf router's down port."""
    per_node = max(1, -(-frames // leaves))
    phases = [
        ("random", traffic("random", leaves, width, length, rng, messages=per_node)),
        ("transpose", traffic("transpose", leaves, width, length, rng)),
        ("bit-reversal", traffic("bit-reversal", leaves, width, length, rng)),
        ("shift", traffic("shift", leaves, width, length, rng, shift=rng.randrange(1, leaves))),
    ]
    if not own:
        return [*phases, ("hotspot", traffic("hotspot", leaves, width, length, rng, messages=2))]
    bits = width * length
    anywhere = [
        [(rng.randrange(leaves), rng.getrandbits(bits)) for _ in range(per_node)]
        for _ in range(leaves)
    ]
    phases.append(("random-own", anywhere))
    for h in range(leaves):
        queues = [[(h, rng.getrandbits(bits)) for _ in range(2)] for _ in range(leaves)]
        phases.append((f"hotspot-{h}", queues))
    return phases
