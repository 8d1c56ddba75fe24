"""Self-test of the on-line Leiserson fat-tree (design ``leiserson-online``): messages from
on-chip tables, every receipt checked, the model's delivery trace replayed cycle for cycle.

The on-line tree sets its own switches, so its traffic needs no schedule: :func:`plan_run`
draws a message set from the seed (``random``: three messages per leaf; ``permutation``;
``bit-reversal``; ``hot-spot``: every leaf to one), gives each a payload
(:func:`fattree.boards.circuit_selftest.payload_fields`: source, destination, sequence number,
check code) and runs :class:`~fattree.sim.models.leiserson_online.LeisersonOnlineModel` with
every message offered as early as its queue takes it and every receiver ready. One run of
:class:`LeisersonOnlineHarness` then:

* offers each leaf's messages, in order, from a table on its ``tx`` stream (receivers always
  ready);
* checks independently every message a leaf receives: its payload must be for this leaf,
  from the source the network names (``rx.payload.src``), not from itself, with a correct
  check code;
* compares, cycle for cycle, which leaves receive and the XOR of what they receive with the
  model's trace in block RAM (the replay);
* at the end, the number received must be the number sent (each exactly once).

``rejects`` stays 0: the design has no port for its losses (the model's count of messages
lost and resent is in ``describe()``). ``maxlat`` is not measured (0): the replay fixes every
receipt's cycle. ``fault`` inverts leaf 0's receive bit as the checker sees it.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

from amaranth import Array, Cat, Const, Module, Signal
from amaranth.lib import wiring

from ..hdl._validation import validates_parameters
from ..hdl.leiserson_online import LeisersonOnline
from ..params import check_int_range, check_power_of_two
from ..sim.models.leiserson_online import LeisersonOnlineModel
from ..sim.models.leiserson_schedule import message_set
from ..spec.capacities import TreeLayout
from .circuit_selftest import check_code_logic, pack_payload, payload_fields
from .selftest import (
    PRIMING,
    SelfTestCore,
    check_against_trace,
    harness_signature,
    popcount,
    start_after_priming,
)

__all__ = ["PATTERNS", "OnlineRun", "plan_run", "LeisersonOnlineHarness", "online_selftest"]

PATTERNS = ("random", "permutation", "bit-reversal", "hot-spot")
#: Cycles after the last receipt before the run ends (the replay's comparison is registered).
TAIL = 3


@dataclass(frozen=True)
class OnlineRun:
    layout: TreeLayout
    #: Per leaf, its messages in order: ``(dst, data)``.
    tables: tuple[tuple[tuple[int, int], ...], ...]
    messages: int
    cycles: int
    #: ``(cycle, mask of receiving leaves, XOR of their rx words)``, rx word = src | data << h.
    deliveries: tuple[tuple[int, int, int], ...]
    delivery_cycles: int
    lost: int


def plan_run(
    leaves: int,
    w: int = 0,
    seed: int = 0,
    data_bits: int = 16,
    queue: int = 4,
    *,
    traffic_seed: int = 1,
    pattern: str = "random",
    limit: int = 1 << 16,
) -> OnlineRun:
    """The run as the model says it goes."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    layout = TreeLayout.universal(leaves, w or None, seed)
    rng = random.Random(traffic_seed)
    if pattern == "hot-spot":
        dst = rng.randrange(leaves)
        messages = [(s, dst) for s in range(leaves) if s != dst]
    else:
        messages = message_set(pattern, leaves, rng)
    fields = payload_fields(leaves, data_bits, 1)
    tables = [[] for _ in range(leaves)]
    for src, dst in messages:
        seq = len(tables[src]) & ((1 << fields["seq"]) - 1)
        tables[src].append((dst, pack_payload(fields, src, dst, seq)))
    model = LeisersonOnlineModel(layout, data_bits, queue)
    h = layout.levels
    pending = [deque(t) for t in tables]
    deliveries, received, cycle = [], 0, 0
    while received < len(messages):
        if cycle == limit:
            raise RuntimeError(f"the model did not deliver every message in {limit} cycles")
        _, ready, rx, _ = model.outputs()
        mask = xor = 0
        for i, beat in enumerate(rx):
            if beat is not None:
                mask |= 1 << i
                xor ^= beat[0] | beat[1] << h
                received += 1
        if mask:
            deliveries.append((cycle, mask, xor))
        beats = [p[0] if p else None for p in pending]
        for i, beat in enumerate(beats):
            if beat is not None and ready[i]:
                pending[i].popleft()
        model.tick(beats, [1] * leaves)
        cycle += 1
    lost = sum(len(r.lost) for r in model.results)
    return OnlineRun(
        layout,
        tuple(tuple(t) for t in tables),
        len(messages),
        cycle + TAIL,
        tuple(deliveries),
        model.delivery_cycles,
        lost,
    )


class LeisersonOnlineHarness(wiring.Component):
    """Message tables, a :class:`~fattree.hdl.leiserson_online.LeisersonOnline`, checker and
    replay.

    Parameters
    ----------
    leaves, w, seed, data_bits, queue
        The design's parameters (``w = 0``: root capacity ``n``); ``data_bits`` must hold the
        payload (source, destination, a sequence number and a check code: ``2 lg n + 2``
        bits at least).
    traffic_seed : int
        Seed of the message set.
    pattern : str
        One of :data:`PATTERNS`.
    network : callable, optional
        ``network(leaves, w, seed, data_bits, queue)`` builds the design under test (tests
        pass broken ones).
    """

    @validates_parameters
    def __init__(
        self,
        leaves=16,
        w=0,
        seed=0,
        data_bits=16,
        queue=4,
        *,
        traffic_seed=1,
        pattern="random",
        network=None,
    ):
        self.leaves = check_power_of_two("leaves", leaves, 2)
        self.w = check_int_range("w", w, 0)
        self.seed = check_int_range("seed", seed, 0)
        self.data_bits = check_int_range("data_bits", data_bits, 1, 64)
        self.queue = check_power_of_two("queue", queue, 2)
        self.traffic_seed = check_int_range("traffic_seed", traffic_seed, 0, (1 << 32) - 1)
        h = leaves.bit_length() - 1
        if data_bits < 2 * h + 2:
            raise ValueError(
                f"the leiserson-online self-test needs data_bits >= {2 * h + 2} (source, "
                f"destination, sequence number, check code) for {leaves} leaves, not {data_bits}"
            )
        self.pattern = pattern
        self.run = plan_run(
            leaves,
            w,
            seed,
            data_bits,
            queue,
            traffic_seed=traffic_seed,
            pattern=pattern,
        )
        if network is None:

            def network(n, w_, s, d, q):
                return LeisersonOnline(n, w=w_ or None, seed=s, data_bits=d, queue=q)

        self.network = network(leaves, w, seed, data_bits, queue)
        self.cycle_bits = (self.run.cycles + 1).bit_length()
        super().__init__(harness_signature(leaves.bit_length(), 1))

    def describe(self) -> dict:
        return {
            "pattern": self.pattern,
            "traffic_seed": self.traffic_seed,
            "messages_per_run": self.run.messages,
            "delivery_cycles": self.run.delivery_cycles,
            "lost_and_resent": self.run.lost,
            "run_cycles": self.run.cycles + PRIMING,
            "trace_entries": len(self.run.deliveries) + 2,
        }

    def elaborate(self, platform):
        m = Module()
        n, bits = self.leaves, self.data_bits
        h = n.bit_length() - 1
        fields = payload_fields(n, bits, 1)

        start = start_after_priming(m, range(self.run.cycles + 1))
        start.live.submodules.net = net = self.network  # held in reset while priming
        primed, live = start.primed, start.live

        # --- senders: each leaf's messages, in order ---------------------------------------
        for i, table in enumerate(self.run.tables):
            tx = net.tx[i]
            index = Signal(range(len(table) + 1), name=f"sent{i}")
            entries = [Const(dst | data << h, h + bits) for dst, data in table]
            entries = entries or [Const(0, h + bits)]
            word = Array(entries)[index] if len(entries) > 1 else entries[0]
            m.d.comb += [
                tx.valid.eq(primed & (index != len(table))),
                tx.payload.dst.eq(word[:h]),
                tx.payload.data.eq(word[h:]),
            ]
            live.d.sync += index.eq(index + (tx.valid & tx.ready))

        # --- checker: every receipt --------------------------------------------------------
        delivered, bad, words = [], [], []
        for i in range(n):
            rx = net.rx[i]
            m.d.comb += rx.ready.eq(1)
            data, src = rx.payload.data, rx.payload.src
            psrc, pdst = data[:h], data[h : 2 * h]
            covered = data[: 2 * h + fields["seq"]]
            code = data[2 * h + fields["seq"] : 2 * h + fields["seq"] + fields["check"]]
            wrong = (
                (pdst != i)
                | (psrc != src)
                | (src == i)
                | (code != check_code_logic(fields, covered))
            )
            if fields["pad"]:
                wrong = wrong | data[2 * h + fields["seq"] + fields["check"] :].any()
            bad.append(rx.valid & wrong)
            delivered.append(rx.valid)
            words.append(Cat(src, data) & rx.valid.replicate(h + bits))
        xor = words[0]
        for word in words[1:]:
            xor = xor ^ word
        check = check_against_trace(
            m,
            start,
            deliveries=self.run.deliveries,
            cycle_bits=self.cycle_bits,
            delivered=delivered,
            fault=self.fault,
            payload_xor=xor,
            xor_bits=h + bits,
            bad=bad,
        )

        total = Signal(max(self.run.messages, 1).bit_length() + 1)
        m.d.sync += total.eq(total + popcount(delivered))
        end = start.last_cycle(m, self.run.cycles)
        end_bad = Signal()
        m.d.comb += end_bad.eq(
            end
            & (
                (total != self.run.messages)
                | (check.entry_cycle != (1 << self.cycle_bits) - 1)
                | net.error.any()
            )
        )
        m.d.comb += [
            self.checked.eq(popcount(delivered)),
            self.rejects.eq(0),
            self.errors.eq(check.replay_bad + check.bad_q + end_bad),
            self.max_latency.eq(0),
            self.end.eq(end),
        ]
        return m


def online_selftest(params: dict, *, seed=1, blink_log2=22, fault_log2=None, **options):
    """The board self-test core of the on-line tree: the design's parameters (``leaves``,
    ``w``, ``seed``, ``data_bits``, ``queue``), ``seed`` the traffic's seed, ``options`` the
    harness's (``pattern``)."""
    harness = LeisersonOnlineHarness(**params, traffic_seed=seed, **options)
    return SelfTestCore(harness, blink_log2=blink_log2, fault_log2=fault_log2)
