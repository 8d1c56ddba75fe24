"""Properties of one concentrator stage (:class:`fattree.hdl.concentrator.PartialConcentrator`)
stated from the message format (docs/leiserson.md, "Timing"), not from its gates.

Free inputs: ``start`` and every input wire (any message at any time: M bit, decision bits,
data; or none). The harness follows every input wire's message by the protocol: armed by
``start``, the first 1 is the M bit, the next b bits the edge index, then data. Assumed, as
the off-line schedule guarantees: in one delivery cycle no two messages choose edges to the
same output. Then each output must show exactly the message routed to it, one cycle late,
with the decision bits stripped; and nothing else.
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.hdl import Assume

from .harness import Harness

__all__ = ["harness", "cascade_harness", "StageProperties", "CascadeProperties", "follow"]


def harness(params: dict, broken: bool) -> StageProperties:
    from ..spec.concentrator_graph import random_partial_concentrator

    r, s = params.get("r", 6), params.get("s", 4)
    return StageProperties(random_partial_concentrator(r, s, params.get("seed", 1)), broken)


class StageProperties(Harness):
    def __init__(self, graph, broken: bool = False):
        super().__init__()
        from ..hdl.concentrator import PartialConcentrator

        self.graph = graph
        self.dut = PartialConcentrator(graph)
        self.broken = broken
        self.ports = [self.dut.start, self.dut.i]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        first = self.first_cycle(m)
        expect = follow(m, self.graph, dut.start, dut.i, "p")
        want = Signal(self.graph.s)
        m.d.sync += want.eq(expect)
        if self.broken:  # a wrong contract: outputs one cycle earlier than they are
            props = {"routed_exactly": [dut.o == expect]}
        else:
            props = {"routed_exactly": [first | (dut.o == want)]}
        self.emit(m, props)
        return m


def cascade_harness(params: dict, broken: bool) -> CascadeProperties:
    from ..spec.concentrator_graph import build_cascade

    r, s = params.get("r", 10), params.get("s", 4)
    return CascadeProperties(build_cascade(r, s, seed=params.get("seed", 1)), broken)


class CascadeProperties(Harness):
    """A whole concentrator switch: the stages' followers chained, each on what the one
    before must output (so each stage is checked against its contract, not its hardware)."""

    def __init__(self, cascade, broken: bool = False):
        super().__init__()
        from ..hdl.concentrator import ConcentratorSwitch

        self.cascade = cascade
        self.dut = ConcentratorSwitch(cascade)
        self.broken = broken
        self.ports = [self.dut.start, self.dut.i]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        first = self.first_cycle(m)
        wires = dut.i
        for t, stage in enumerate(self.cascade.stages):
            want = Signal(stage.graph.s, name=f"want{t}")
            expect = follow(m, stage.graph, dut.start, wires, f"s{t}")
            m.d.sync += want.eq(expect)
            wires = want
        if self.broken:  # a wrong contract: the last stage's outputs one cycle early
            props = {"routed_exactly": [dut.o == expect]}
        else:
            props = {"routed_exactly": [first | (dut.o == wires)]}
        self.emit(m, props)
        return m


def follow(m, g, start, wires, prefix):
    """Follow every input wire of the stage ``g`` by the protocol; assume the schedule's
    promise (no two paths to one output in a delivery cycle); return what the outputs must
    show next cycle (an ``s``-bit value)."""
    b = g.decision_bits
    # Per input, the protocol: armed by start; after the M bit, b decision bits; then the
    # message is routed to out[k] (if its edge exists) until the next start.
    expect = [0] * g.s
    routes = []
    for k, row in enumerate(g.adjacency):
        wire = wires[k]
        armed = Signal(name=f"{prefix}_armed{k}")
        left = Signal(range(b + 1), name=f"{prefix}_left{k}")
        edge = Signal(b, name=f"{prefix}_edge{k}")
        routed = Signal(name=f"{prefix}_routed{k}")
        m.d.sync += armed.eq((armed | start) & ~wire)
        new_edge = Cat(wire, edge[: b - 1]) if b > 1 else wire
        with m.If((armed | start) & wire):  # the M bit
            m.d.sync += [left.eq(b), routed.eq(0), edge.eq(0)]
        with m.Elif(start):
            m.d.sync += [left.eq(0), routed.eq(0)]
        with m.Elif(left != 0):
            m.d.sync += [left.eq(left - 1), edge.eq(new_edge)]
            with m.If(left == 1):
                m.d.sync += routed.eq(1)
        for e, j in enumerate(row):
            # The M bit leaves with the last decision bit; data while routed.
            m_bit = (left == 1) & (new_edge == e)
            data = routed & ~start & (edge == e) & wire
            expect[j] = expect[j] | m_bit | data
        # Where this input's path goes, once set or being set (for the assumption).
        target = Signal(range(g.s + 1), init=g.s, name=f"{prefix}_target{k}")  # none
        with m.If(start):
            m.d.sync += target.eq(g.s)
        with m.Elif(left == 1):
            m.d.sync += target.eq(g.s)
            for e, j in enumerate(row):
                with m.If(new_edge == e):
                    m.d.sync += target.eq(j)
        routes.append(target)
    # The schedule's promise: no two paths to one output in a delivery cycle.
    for x in range(len(routes)):
        for y in range(x + 1, len(routes)):
            m.d.comb += Assume((routes[x] == g.s) | (routes[x] != routes[y]))
    return Cat(*expect)
