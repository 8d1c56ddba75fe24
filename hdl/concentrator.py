"""Concentrator switches built from Pippenger partial concentrator graphs (Leiserson 1985, IV).

"We simply make switching decisions at the inputs to each level. These decision bits can be
interleaved with the address bits." A :class:`PartialConcentrator` is one level: every
input wire has one switch with one position per edge of the graph
(:mod:`fattree.spec.concentrator_graph`); a :class:`ConcentratorSwitch` cascades levels.

Every wire is timed on its own (messages reach a switch at different cycles, depending on
the length of the path behind them). ``start`` begins a delivery cycle: it releases every
path and arms every input; the first 1 an armed input sees (possibly in the ``start`` cycle
itself) is a message's M bit. Timing of one input wire of a stage with b decision bits::

    cycle     t      t+1 .. t+b          t+b+1        t+b+2 ...
    i[k]      M=1    c (edge index,      x0           x1
                       MSB first)
    o[j]      -      -                   1 (M bit)    x0           (j = adjacency[k][c])

The decision bits are stripped; the M bit leaves one cycle after the last decision bit and
the rest follows with one cycle of latency, so b + 1 cycles for the M bit in all. An edge
index beyond the input's degree drops the message. Outputs are registered and are the OR of
the inputs switched onto them; the off-line schedule never switches two inputs onto one
output (the tests check this on the ``passing``/``choice`` registers).
"""

from __future__ import annotations

from functools import reduce
from operator import or_

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..spec.concentrator_graph import BipartiteGraph, Cascade
from ._validation import validates_parameters

__all__ = ["PartialConcentrator", "ConcentratorSwitch"]


def _or(terms):
    return reduce(or_, terms) if terms else Const(0, 1)


class PartialConcentrator(wiring.Component):
    """One stage of a concentrator switch, wired as the bipartite ``graph``.

    Parameters
    ----------
    graph : BipartiteGraph
        ``r`` inputs, ``s`` outputs; ``graph.adjacency[k][e]`` is where edge e of input k goes.

    Attributes
    ----------
    start : In(1)
        Begins a delivery cycle: releases every path, arms every input.
    i : In(r)
        Input wires.
    o : Out(s)
        Output wires (registered).
    passing, choice : list of Signal
        Per input: a path is set up, and its edge index (observation points for tests).
    """

    @validates_parameters
    def __init__(self, graph: BipartiteGraph):
        if not isinstance(graph, BipartiteGraph):
            raise TypeError(f"graph must be a BipartiteGraph, not {graph!r}")
        self.graph = graph
        self.bits = graph.decision_bits
        self.passing = [Signal(name=f"passing{k}") for k in range(graph.r)]
        self.choice = [Signal(self.bits, name=f"choice{k}") for k in range(graph.r)]
        super().__init__({"start": In(1), "i": In(graph.r), "o": Out(graph.s)})

    def elaborate(self, platform):
        m = Module()
        g, b = self.graph, self.bits
        drivers = [[] for _ in range(g.s)]
        for k, row in enumerate(g.adjacency):
            wire = self.i[k]
            armed = Signal(name=f"armed{k}")
            count = Signal(range(b + 1), name=f"count{k}")  # decision bits still to come
            passing, choice = self.passing[k], self.choice[k]
            armed_now = armed | self.start
            first = armed_now & wire
            last = count == 1
            full = Cat(wire, choice[: b - 1]) if b > 1 else wire  # choice with this bit
            m.d.sync += armed.eq(armed_now & ~wire)
            # The next state, from which the output terms' registers below are decoded.
            count_next = Signal.like(count, name=f"count{k}_next")
            passing_next = Signal(name=f"passing{k}_next")
            choice_next = Signal.like(choice, name=f"choice{k}_next")
            m.d.comb += [count_next.eq(count), passing_next.eq(passing), choice_next.eq(choice)]
            with m.If(first):
                m.d.comb += [count_next.eq(b), passing_next.eq(0), choice_next.eq(0)]
            with m.Elif(self.start):
                m.d.comb += [count_next.eq(0), passing_next.eq(0)]
            with m.Elif(count != 0):
                m.d.comb += [count_next.eq(count - 1), choice_next.eq(full)]
                with m.If(last):
                    m.d.comb += passing_next.eq(1)
            m.d.sync += [count.eq(count_next), passing.eq(passing_next), choice.eq(choice_next)]
            # Each output term one LUT deep: ``route[e]`` = the path takes edge e (``passing``
            # and ``choice == e``), ``ahead[p]`` = the last decision bit is now and the ones
            # before it were p (``last`` and ``choice[:b-1] == p``), both registered.
            route = Signal(len(row), name=f"route{k}")
            ahead = Signal(1 << (b - 1), name=f"ahead{k}")
            m.d.sync += [
                route.eq(Cat(passing_next & (choice_next == e) for e in range(len(row)))),
                ahead.eq(
                    Cat(
                        (count_next == 1) & (choice_next[: b - 1] == p if b > 1 else 1)
                        for p in range(len(ahead))
                    )
                ),
            ]
            for e, j in enumerate(row):
                data = route[e] & ~self.start & wire
                m_bit = ahead[e >> 1] & (wire if e & 1 else ~wire)
                drivers[j].append(data | m_bit)
        m.d.sync += self.o.eq(Cat(*[_or(d) for d in drivers]))
        return m


class ConcentratorSwitch(wiring.Component):
    """A cascade of :class:`PartialConcentrator` stages from ``r`` wires to ``s`` wires.

    With no stage (``s >= r``) the switch is plain wires: input k drives output k.

    Parameters
    ----------
    cascade : Cascade
        The verified graphs (:func:`fattree.spec.concentrator_graph.build_cascade`).
    """

    @validates_parameters
    def __init__(self, cascade: Cascade):
        if not isinstance(cascade, Cascade):
            raise TypeError(f"cascade must be a Cascade, not {cascade!r}")
        self.cascade = cascade
        self.stages = [PartialConcentrator(stage.graph) for stage in cascade.stages]
        super().__init__({"start": In(1), "i": In(cascade.r), "o": Out(cascade.s)})

    def elaborate(self, platform):
        m = Module()
        c = self.cascade
        if not self.stages:
            width = min(c.r, c.s)
            m.d.comb += self.o[:width].eq(self.i[:width])
            return m
        previous = self.i
        for t, stage in enumerate(self.stages):
            m.submodules[f"stage{t}"] = stage
            m.d.comb += [stage.start.eq(self.start), stage.i.eq(previous)]
            previous = stage.o
        m.d.comb += self.o.eq(previous)
        return m
