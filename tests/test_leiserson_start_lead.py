"""The Leiserson tree with ``start`` early (``start_lead``, the register tree for ``start``).

A tree with ``start_lead = d`` must behave as the plain tree (checked against the model here,
cycle by cycle) with ``start`` d cycles later: both run side by side on the same schedule,
the early tree's senders d cycles behind its ``start``, and its outputs must equal the plain
tree's of d cycles before, in every cycle.
"""

import random

import pytest
from amaranth import Cat, Module, Signal
from amaranth.lib import wiring

from fattree.hdl.fat_tree_node import FatTreeNode, start_copy
from fattree.hdl.leiserson_tree import LeisersonFatTree, leiserson_tree
from fattree.sim.checks.leiserson_tree import CHECKS, LeisersonTreeCheck
from fattree.sim.models.leiserson_schedule import (
    layout_capacities,
    random_messages,
    schedule_theorem1,
)
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate
from fattree.spec.capacities import TreeLayout


class SideBySide(wiring.Component):
    """``plain`` (driven by the testbench) and ``early`` (``start`` as given, everything else
    ``lead`` cycles later); ``agree``: ``early``'s outputs equal ``plain``'s of ``lead``
    cycles before."""

    def __init__(self, leaves: int, lead: int, **kwargs):
        self.plain = LeisersonFatTree(leaves, **kwargs)
        self.early = LeisersonFatTree(leaves, start_lead=lead, **kwargs)
        self.lead = lead
        self.agree = Signal()
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.plain, m.submodules.early = plain, early = self.plain, self.early

        def delayed(value, name):
            for k in range(self.lead):
                stage = Signal.like(value, name=f"{name}_d{k}")
                m.d.sync += stage.eq(value)
                value = stage
            return value

        m.d.comb += early.start.eq(plain.start)
        m.d.comb += early.root_i.eq(delayed(plain.root_i, "root_i"))
        for leaf in range(len(plain.send)):
            m.d.comb += early.send[leaf].eq(delayed(plain.send[leaf], f"send{leaf}"))
        outputs = Cat(plain.root_o, *plain.recv)
        m.d.comb += self.agree.eq(delayed(outputs, "outputs") == Cat(early.root_o, *early.recv))
        return m


def run_side_by_side(dut, seed, messages_per_leaf=3, check=True):
    """Deliver a random schedule through ``dut.plain`` (checked against the model); returns
    the cycles read and those in which the early tree disagreed, and the delivery cycles."""
    plain, lead = dut.plain, dut.lead
    layout = plain.layout
    leaves = layout.leaves
    rng = random.Random(seed)
    messages = random_messages(leaves, messages_per_leaf * leaves, rng)
    cycles = schedule_theorem1(leaves, messages, layout_capacities(layout))
    scoreboard = Scoreboard(CHECKS)
    counts = {"cycles": 0, "disagree": []}

    async def bench(ctx):
        def read():
            counts["cycles"] += 1
            if not ctx.get(dut.agree):
                counts["disagree"].append(counts["cycles"])
            return [ctx.get(plain.recv[leaf]) for leaf in range(leaves)], ctx.get(plain.root_o)

        def drive(start, row):
            ctx.set(plain.start, start)
            for leaf in range(leaves):
                ctx.set(plain.send[leaf], row[leaf])

        def drive_root(word):
            ctx.set(plain.root_i, word)

        check = LeisersonTreeCheck(layout, scoreboard, read, drive, ctx.tick, drive_root)
        await check.deliver(messages, cycles, rng, "side by side")
        drive(0, [0] * leaves)
        for _ in range(lead + 1):  # the early tree's last outputs come `lead` cycles later
            await ctx.tick()
            read()

    simulate(dut, bench)
    if check:
        assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    return counts, len(cycles)


@pytest.mark.parametrize(
    ("leaves", "lead", "w", "seed"), [(8, 1, 8, 1), (8, 2, 4, 2), (8, 3, 8, 3), (8, 4, 8, 5)]
)
def test_early_start_is_the_plain_tree_later(leaves, lead, w, seed):
    counts, delivery_cycles = run_side_by_side(SideBySide(leaves, lead, w=w), seed)
    assert delivery_cycles >= 2 and counts["cycles"] > 20 * delivery_cycles
    assert counts["disagree"] == []


def test_a_late_copy_is_caught(monkeypatch):
    # The comparison can fail: if the copy that arms the L inputs of every node comes a cycle
    # late, a leaf's M bit sent in the start cycle itself is missed. (An early copy would pass:
    # `start` only arms and releases, and the tree is quiet in the cycle before.)
    from fattree.hdl import fat_tree_node

    def late_copy(m, start, name):
        copy = start_copy(m, start, name)
        if not name.startswith("start_in_l") or name.endswith("_early"):
            return copy
        late = Signal(name=f"{name}_late")
        m.d.sync += late.eq(copy)
        return late

    monkeypatch.setattr(fat_tree_node, "start_copy", late_copy)
    counts, _ = run_side_by_side(SideBySide(8, 1, w=8), seed=4, check=False)
    assert counts["disagree"]


def test_parameter_errors(built_but_unused):
    with pytest.raises(ValueError, match="start_lead must be"):
        LeisersonFatTree(8, start_lead=5)
    with pytest.raises(ValueError, match="start_lead must be"):
        FatTreeNode(TreeLayout.universal(4, 4, 0), 0, start_lead=3)
    assert leiserson_tree(8, start_lead=2).start_lead == 2
