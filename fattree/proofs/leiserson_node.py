"""Properties of one node of Leiserson's fat-tree (:class:`fattree.hdl.fat_tree_node.FatTreeNode`,
Fig. 3; docs/leiserson.md, "Timing"), from its ports only.

Free inputs: ``start`` (a delivery cycle may begin in any cycle but the one right after a
``start``: a message is at least two bits long) and every input wire of the three ports (any
message, any time, or nothing). The harness follows each input wire by the selector's
contract (the first 1 an armed wire carries is its M bit, the next its address bit, which
picks the branch and is stripped) and then each output port's concentrator switch by its
stages' contracts chained (:func:`fattree.proofs.concentrator.follow`, which assumes the
off-line schedule's promise: no two paths to one output of a stage in a delivery cycle).
The node's outputs must be those expectations, cycle for cycle: every message leaves on the
port its address bit names, on the wire its decision bits name, with those bits stripped;
no output wire carries two messages, and nothing else appears.
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.hdl import Assume

from .concentrator import follow
from .harness import Harness

__all__ = ["harness", "NodeProperties"]


def harness(params: dict, broken: bool) -> NodeProperties:
    from ..spec.capacities import TreeLayout

    layout = TreeLayout.universal(params.get("leaves", 8), seed=params.get("seed", 0))
    return NodeProperties(layout, params.get("level", 1), broken=broken)


class NodeProperties(Harness):
    def __init__(self, layout, level: int, *, broken: bool = False):
        super().__init__()
        from ..hdl.fat_tree_node import FatTreeNode

        self.layout, self.level = layout, level
        self.dut = FatTreeNode(layout, level)
        self.broken = broken
        d = self.dut
        self.ports = [d.start, d.u_i, d.l_i, d.r_i]

    def elaborate(self, platform):
        from ..spec.capacities import PORT_GROUPS

        m = Module()
        m.submodules.dut = dut = self.dut
        first = self.first_cycle(m)
        start = dut.start
        was_start = Signal()
        m.d.sync += was_start.eq(start)
        m.d.comb += Assume(~(start & was_start))

        # Each input wire through its selector: the branches it must feed next cycle.
        branches = {}
        for port, bundle in (("U", dut.u_i), ("L", dut.l_i), ("R", dut.r_i)):
            ones, zeros = [], []
            for w in range(len(bundle)):
                wire = bundle[w]
                name = f"{port.lower()}{w}"
                armed = Signal(name=f"armed_{name}")
                m_bit = (armed | start) & wire
                m.d.sync += armed.eq((armed | start) & ~wire)
                address = Signal(name=f"address_{name}")  # this cycle carries the address bit
                m.d.sync += address.eq(m_bit)
                took_one, took_zero = Signal(name=f"one_{name}"), Signal(name=f"zero_{name}")
                one, zero = Signal(name=f"want_one_{name}"), Signal(name=f"want_zero_{name}")
                with m.If(m_bit):  # a new message: quiet until its address bit is in
                    m.d.sync += [took_one.eq(0), took_zero.eq(0), one.eq(0), zero.eq(0)]
                with m.Elif(address):  # the branch's M bit; the address bit is stripped
                    m.d.sync += [
                        took_one.eq(wire),
                        took_zero.eq(~wire),
                        one.eq(wire),
                        zero.eq(~wire),
                    ]
                with m.Else():
                    m.d.sync += [one.eq(wire & took_one), zero.eq(wire & took_zero)]
                ones.append(one)
                zeros.append(zero)
            branches[port, 1], branches[port, 0] = ones, zeros

        # Each output port's switch, stage by stage, on what the selectors must feed it.
        props = []
        for port, out in (("U", dut.u_o), ("L", dut.l_o), ("R", dut.r_o)):
            wires = Cat(*[b for group in PORT_GROUPS[port] for b in branches[group]])
            cascade = self.layout.cascade(self.level, port)
            for t, stage in enumerate(cascade.stages):
                want = Signal(stage.graph.s, name=f"want_{port.lower()}{t}")
                m.d.sync += want.eq(follow(m, stage.graph, start, wires, f"{port.lower()}{t}"))
                wires = want
            if not cascade.stages:  # plain wires: input k drives output k
                width = min(len(wires), len(out))
                wires = Cat(wires[:width], Signal(len(out) - width))
            if self.broken and port == "U":  # a wrong contract: the branches swapped
                wires = Cat(*[b for g in (("L", 0), ("R", 0)) for b in branches[g]])
            props.append(first | (out == wires))
        self.emit(m, {"routed_exactly": props})
        return m
