"""Self-test of Leiserson's universal fat-tree: an off-line schedule played from block RAM,
the model's receive waveforms compared cycle for cycle, every message's payload checked.

Leiserson's switches are set off-line: the headers that set them are computed with the
schedule (:mod:`fattree.sim.models.leiserson_schedule`), so the traffic of this self-test is
planned at build time too. :func:`plan_run` draws a message set (``random``: three messages
per leaf; ``permutation``; ``bit-reversal``) from the seed, schedules it into delivery cycles
(Theorem 1), builds every message's frame (M bit, header, payload) and asks the tree model
(:func:`fattree.sim.models.leiserson_tree.deliver`) for the receive waveforms. One run of
:class:`LeisersonTreeHarness` then:

* plays the senders' waveforms and ``start`` from block RAM into the tree, one row a cycle;
* compares every leaf's receive wires and the root's output (idle) with the model's row,
  cycle for cycle (the replay);
* checks independently, on every leaf wire, each message that arrives: its payload
  (:func:`fattree.boards.circuit_selftest.payload_fields`: source, destination, sequence
  number, check code) must be for this leaf, from another one, with a correct check code;
* at the end, the number of messages that arrived must be the number sent (exactly once).

Nothing is refused in an off-line schedule, so ``rejects`` stays 0, and the latency is not
measured (``maxlat`` 0): the model fixes every message's cycle, and the replay checks it.
``fault`` inverts leaf 0's first receive wire as the checker sees it.

A tree with ``start_lead = d`` (the register tree for ``start``) gets ``start`` d cycles
before each delivery cycle: the run begins with d quiet rows, and each row's ``start`` bit is
the one of the model's row d cycles later.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from amaranth import Cat, Module, Mux, ResetInserter, Signal
from amaranth.lib import memory, wiring

from ..hdl._validation import validates_parameters
from ..hdl.leiserson_tree import LeisersonFatTree
from ..params import check_int_range, check_power_of_two
from ..sim.models.leiserson_schedule import (
    frame_bits,
    layout_capacities,
    message_set,
    plan_cycle,
    schedule_theorem1,
)
from ..sim.models.leiserson_tree import deliver
from ..spec.capacities import TreeLayout
from .circuit_selftest import check_code_logic, pack_payload, payload_fields
from .selftest import SelfTestCore, harness_signature, popcount

__all__ = ["PATTERNS", "RunPlan", "plan_run", "LeisersonTreeHarness", "leiserson_selftest"]

PATTERNS = ("random", "permutation", "bit-reversal")
#: Senders start 0 .. STAGGER - 1 cycles after ``start``.
STAGGER = 3


def data_bits_for(leaves: int) -> int:
    """Payload bits: source and destination, 4 bits of sequence number, 4 of check code."""
    return 2 * (leaves.bit_length() - 1) + 8


@dataclass(frozen=True)
class RunPlan:
    layout: TreeLayout
    messages: tuple[tuple[int, int], ...]
    delivery_cycles: int
    #: Per clock cycle of the run: ``start`` (``start_lead`` cycles before the delivery cycle
    #: it begins), the send word of every leaf, the receive word every leaf must show.
    start: tuple[int, ...]
    drive: tuple[tuple[int, ...], ...]
    expect: tuple[tuple[int, ...], ...]
    data_bits: int


def plan_run(
    leaves: int, w: int = 0, seed: int = 0, *, traffic_seed=1, pattern="random", start_lead=0
) -> RunPlan:
    """The whole run, from the schedule and the tree model, for a tree whose ``start`` comes
    ``start_lead`` cycles early."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    layout = TreeLayout.universal(leaves, w or None, seed)
    rng = random.Random(traffic_seed)
    messages = message_set(pattern, leaves, rng)
    schedule = schedule_theorem1(leaves, messages, layout_capacities(layout))
    bits = data_bits_for(leaves)
    fields = payload_fields(leaves, bits, 1)
    start, drive, expect = [], [], []
    for cycle in schedule:
        plan = plan_cycle(layout, messages, cycle)
        frames, offsets = {}, {}
        for mp in plan.messages:
            wire = sum(1 for key in frames if key[0] == mp.src)
            seq = mp.index & ((1 << fields["seq"]) - 1)
            frames[(mp.src, wire)] = frame_bits(mp, pack_payload(fields, mp.src, mp.dst, seq), bits)
            offsets[(mp.src, wire)] = rng.randrange(STAGGER)
        model = deliver(layout, frames)
        if model.lost or model.collisions:
            raise RuntimeError(f"model: lost {model.lost}, collisions {model.collisions}")
        length = max((len(f) + offsets[k] for k, f in frames.items()), default=1)
        length += max((a.latency for a in model.arrivals), default=0) + 3
        rows_d = [[0] * leaves for _ in range(length)]
        rows_e = [[0] * leaves for _ in range(length)]
        for (src, wire), frame in frames.items():
            for k, b in enumerate(frame):
                rows_d[offsets[(src, wire)] + k][src] |= b << wire
        for a in model.arrivals:
            t0 = offsets[(a.src, a.src_wire)] + a.latency
            for k, b in enumerate(a.bits):
                rows_e[t0 + k][a.where[1]] |= b << a.wire
        start += [1] + [0] * (length - 1)
        drive += [tuple(r) for r in rows_d]
        expect += [tuple(r) for r in rows_e]
    # `start` early: everything else starts `start_lead` quiet rows later.
    quiet = [(0,) * leaves] * start_lead
    start, drive, expect = start + [0] * start_lead, quiet + drive, quiet + expect
    return RunPlan(
        layout, tuple(messages), len(schedule), tuple(start), tuple(drive), tuple(expect), bits
    )


class LeisersonTreeHarness(wiring.Component):
    """The schedule's waveforms from block RAM, a
    :class:`~fattree.hdl.leiserson_tree.LeisersonFatTree`, checker and replay.

    Parameters
    ----------
    leaves, w, seed
        The tree's parameters (``w = 0``: root capacity ``n``).
    traffic_seed : int
        Seed of the message set and the senders' stagger.
    pattern : str
        One of :data:`PATTERNS`.
    start_lead : int
        Cycles the tree takes ``start`` before its delivery cycle, 0..4 (its register tree).
    tree : callable, optional
        ``tree(leaves, w, seed)`` builds the tree under test (tests pass broken ones).
    """

    @validates_parameters
    def __init__(
        self,
        leaves=16,
        w=0,
        seed=0,
        start_lead=0,
        *,
        traffic_seed=1,
        pattern="random",
        tree=None,
    ):
        self.leaves = check_power_of_two("leaves", leaves, 2)
        self.w = check_int_range("w", w, 0)
        self.seed = check_int_range("seed", seed, 0)
        self.start_lead = check_int_range("start_lead", start_lead, 0, 4)
        self.traffic_seed = check_int_range("traffic_seed", traffic_seed, 0, (1 << 32) - 1)
        self.pattern = pattern
        self.plan = plan_run(
            leaves, w, seed, traffic_seed=traffic_seed, pattern=pattern, start_lead=start_lead
        )
        if tree is None:

            def tree(n, w_, s):
                return LeisersonFatTree(n, w=w_ or None, seed=s, start_lead=start_lead)

        self.tree = tree(leaves, w, seed)
        self.wires = self.plan.layout.cap(self.plan.layout.levels)
        self.cycles = len(self.plan.start)
        self.entry_bits = 1 + 2 * leaves * self.wires
        super().__init__(harness_signature((leaves * self.wires).bit_length(), 1))

    def describe(self) -> dict:
        return {
            "pattern": self.pattern,
            "traffic_seed": self.traffic_seed,
            "messages_per_run": len(self.plan.messages),
            "delivery_cycles": self.plan.delivery_cycles,
            "run_cycles": self.cycles + 1,
            "trace_entries": self.cycles + 1,
            "trace_entry_bits": self.entry_bits,
            "trace_bits": self.entry_bits * (self.cycles + 1),
        }

    def _entries(self) -> list[int]:
        n, c = self.leaves, self.wires
        out = []
        for s, d, e in zip(self.plan.start, self.plan.drive, self.plan.expect, strict=True):
            word = s
            for i in range(n):
                word |= d[i] << (1 + i * c)
                word |= e[i] << (1 + (n + i) * c)
            out.append(word)
        return [*out, 0]

    def elaborate(self, platform):
        m = Module()
        n, c, bits = self.leaves, self.wires, self.plan.data_bits
        h = n.bit_length() - 1
        fields = payload_fields(n, bits, 1)

        # One priming cycle loads row 0; the tree is held in reset meanwhile.
        primed = Signal()
        m.d.sync += primed.eq(1)
        live = Module()
        m.submodules.live = ResetInserter(~primed)(live)
        live.submodules.tree = tree = self.tree
        t = Signal(range(self.cycles + 1))
        with m.If(primed):
            m.d.sync += t.eq(t + 1)

        mem = memory.Memory(shape=self.entry_bits, depth=self.cycles + 1, init=self._entries())
        m.submodules.trace = mem
        rd = mem.read_port()
        m.d.comb += rd.addr.eq(Mux(primed, t + 1, 0))  # row t shows in run cycle t
        row = rd.data
        m.d.comb += [tree.start.eq(primed & row[0]), tree.root_i.eq(0)]
        for i in range(n):
            m.d.comb += tree.send[i].eq(Mux(primed, row[1 + i * c : 1 + (i + 1) * c], 0))

        # --- replay: every receive wire against the model's row, registered --------------
        seen = Signal(n * c)
        m.d.comb += seen.eq(Cat(*(tree.recv[i] for i in range(n))) ^ self.fault)
        want = row[1 + n * c : 1 + 2 * n * c]
        replay_bad = Signal()
        m.d.sync += replay_bad.eq(primed & ((seen != want) | tree.root_o.any()))

        # --- independent checker: each message arriving on a leaf wire -------------------
        done, bad = [], []
        for i in range(n):
            for j in range(c):
                bit = seen[i * c + j]
                busy = Signal(name=f"rx{i}_{j}_busy")
                count = Signal(range(bits + 1), name=f"rx{i}_{j}_count")
                shift = Signal(bits, name=f"rx{i}_{j}_data")
                complete = Signal(name=f"rx{i}_{j}_complete")
                with m.If(~busy):
                    with m.If(bit):  # the M bit
                        m.d.sync += [busy.eq(1), count.eq(0)]
                with m.Else():
                    m.d.sync += [shift.eq(Cat(bit, shift[:-1])), count.eq(count + 1)]
                    with m.If(count == bits - 1):
                        m.d.sync += busy.eq(0)
                m.d.sync += complete.eq(busy & (count == bits - 1))
                data = shift
                src, dst = data[:h], data[h : 2 * h]
                covered = data[: 2 * h + fields["seq"]]
                code = data[2 * h + fields["seq"] : 2 * h + fields["seq"] + fields["check"]]
                check = check_code_logic(fields, covered)
                done.append(complete)
                bad.append(complete & ((dst != i) | (src == i) | (code != check)))
        arrived = Signal(range(len(self.plan.messages) + 2 * n * c + 1))
        m.d.sync += arrived.eq(arrived + popcount(done))
        checked = Signal(len(self.checked))
        m.d.comb += checked.eq(popcount(done))

        end = Signal()
        m.d.comb += end.eq(primed & (t == self.cycles - 1))
        m.d.comb += [
            self.checked.eq(checked),
            self.rejects.eq(0),
            self.errors.eq(
                replay_bad + Cat(*bad).any() + (end & (arrived != len(self.plan.messages)))
            ),
            self.max_latency.eq(0),
            self.end.eq(end),
        ]
        return m


def leiserson_selftest(params: dict, *, seed=1, blink_log2=22, fault_log2=None, **options):
    """The board self-test core of the Leiserson tree: the design's parameters (``leaves``,
    ``w``, ``seed``, ``start_lead``), ``seed`` the traffic's seed, ``options`` the harness's
    (``pattern``)."""
    harness = LeisersonTreeHarness(**params, traffic_seed=seed, **options)
    return SelfTestCore(harness, blink_log2=blink_log2, fault_log2=fault_log2)
