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

__all__ = ["harness", "StageProperties"]


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
        g = self.graph
        b = g.decision_bits
        first = self.first_cycle(m)
        # Per input, the protocol: armed by start; after the M bit, b decision bits; then the
        # message is routed to out[k] (if its edge exists) until the next start.
        expect = [0] * g.s  # what each output must show next cycle
        routes = []
        for k, row in enumerate(g.adjacency):
            wire = dut.i[k]
            armed = Signal(name=f"p_armed{k}")
            left = Signal(range(b + 1), name=f"p_left{k}")
            edge = Signal(b, name=f"p_edge{k}")
            routed = Signal(name=f"p_routed{k}")
            m.d.sync += armed.eq((armed | dut.start) & ~wire)
            new_edge = Cat(wire, edge[: b - 1]) if b > 1 else wire
            with m.If((armed | dut.start) & wire):  # the M bit
                m.d.sync += [left.eq(b), routed.eq(0), edge.eq(0)]
            with m.Elif(dut.start):
                m.d.sync += [left.eq(0), routed.eq(0)]
            with m.Elif(left != 0):
                m.d.sync += [left.eq(left - 1), edge.eq(new_edge)]
                with m.If(left == 1):
                    m.d.sync += routed.eq(1)
            for e, j in enumerate(row):
                # The M bit leaves with the last decision bit; data while routed.
                m_bit = (left == 1) & (new_edge == e)
                data = routed & ~dut.start & (edge == e) & wire
                expect[j] = expect[j] | m_bit | data
            # Where this input's path goes, once set or being set (for the assumption).
            target = Signal(range(g.s + 1), init=g.s, name=f"p_target{k}")  # none
            with m.If(dut.start):
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
        want = Signal(g.s)
        m.d.sync += want.eq(Cat(*expect))
        if self.broken:  # a wrong contract: outputs one cycle earlier than they are
            props = {"routed_exactly": [dut.o == Cat(*expect)]}
        else:
            props = {"routed_exactly": [first | (dut.o == want)]}
        self.emit(m, props)
        return m
