"""The Leiserson tree with ``start`` early (``start_lead``, the register tree for ``start``).

A tree with ``start_lead = d`` must behave as the plain tree (checked against the model here,
cycle by cycle) with ``start`` d cycles later: both run side by side on the same schedule,
the early tree's senders d cycles behind its ``start``, and its outputs must equal the plain
tree's of d cycles before, in every cycle. The check, the soak and (tests/test_board_leiserson.py)
the board self-test raise ``start`` d cycles early for such a tree (``-p start_lead=d``).
"""

import random
import shutil

import numpy as np
import pytest
from amaranth import Cat, Module, Signal
from amaranth.lib import wiring

from fattree.hdl.fat_tree_node import FatTreeNode, start_copy
from fattree.hdl.leiserson_tree import LeisersonFatTree, leiserson_tree
from fattree.sim.checks.leiserson_tree import CHECKS, LeisersonTreeCheck
from fattree.sim.models.leiserson_schedule import (
    external_messages,
    layout_capacities,
    random_messages,
    schedule_first_fit,
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


# Leads 3 and 4: the same check, seconds each in amaranth.sim, slow points.
@pytest.mark.parametrize(
    ("leaves", "lead", "w", "seed"),
    [(8, 1, 8, 1), (8, 2, 4, 2)]
    + [pytest.param(*p, marks=pytest.mark.slow) for p in [(8, 3, 8, 3), (8, 4, 8, 5)]],
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


def run_check(tree_lead, check_lead, seed, *, leaves=8, w=8, outside=False):
    """The check (``sim/checks/leiserson_tree.py``) with ``start_lead = check_lead`` on a tree
    built with ``tree_lead``: the scoreboard and the number of messages that arrived."""
    dut = LeisersonFatTree(leaves, w=w, start_lead=tree_lead)
    layout = dut.layout
    rng = random.Random(seed)
    if outside:
        messages = external_messages(leaves, rng)
        cycles, _ = schedule_first_fit(layout, messages, rng)
    else:
        messages = random_messages(leaves, 3 * leaves, rng)
        cycles = schedule_theorem1(leaves, messages, layout_capacities(layout))
    scoreboard = Scoreboard(CHECKS)
    arrived = []

    async def bench(ctx):
        def read():
            return [ctx.get(dut.recv[leaf]) for leaf in range(leaves)], ctx.get(dut.root_o)

        def drive(start, row):
            ctx.set(dut.start, start)
            for leaf in range(leaves):
                ctx.set(dut.send[leaf], row[leaf])

        def drive_root(word):
            ctx.set(dut.root_i, word)

        check = LeisersonTreeCheck(
            layout, scoreboard, read, drive, ctx.tick, drive_root, start_lead=check_lead
        )
        # Two schedules back to back: the held cycles carry over from one to the next.
        arrived.extend(await check.deliver(messages, cycles[:1], rng, "first", complete=False))
        arrived.extend(await check.deliver(messages, cycles[1:], rng, "rest", complete=False))
        await check.flush()

    simulate(dut, bench)
    assert len(cycles) >= 2
    return scoreboard, arrived, len(messages)


@pytest.mark.parametrize(
    ("lead", "outside"),
    [(1, False), pytest.param(2, False, marks=pytest.mark.slow), (2, True)]
    + [pytest.param(4, False, marks=pytest.mark.slow)],
)
def test_check_raises_start_early(lead, outside):
    scoreboard, arrived, total = run_check(lead, lead, seed=lead, outside=outside)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert sorted(arrived) == list(range(total))


# Only a `start` that comes late can be caught: one that comes early arms wires and releases
# paths in a quiet cycle, which the tree cannot tell (see test_a_late_copy_is_caught).
@pytest.mark.parametrize(("tree_lead", "check_lead"), [(2, 0), (2, 1), (4, 2)])
def test_check_catches_a_late_start(tree_lead, check_lead):
    scoreboard, _, _ = run_check(tree_lead, check_lead, seed=7)
    assert scoreboard.failures["cycle_mismatches"] > 0


def test_parameter_errors(built_but_unused):
    with pytest.raises(ValueError, match="start_lead must be"):
        LeisersonFatTree(8, start_lead=5)
    with pytest.raises(ValueError, match="start_lead must be"):
        FatTreeNode(TreeLayout.universal(4, 4, 0), 0, start_lead=3)
    assert leiserson_tree(8, start_lead=2).start_lead == 2
    with pytest.raises(ValueError, match="start_lead must be at least 0, not -1"):
        LeisersonTreeCheck(
            TreeLayout.universal(4), Scoreboard(CHECKS), None, None, None, start_lead=-1
        )


def _soak_arrays(lead):
    from fattree.sim.soak.leiserson_tree import LeisersonTreeSoak

    soak = LeisersonTreeSoak({"leaves": 8, "start_lead": lead}, messages=200, seed=3)
    chunks = list(soak.chunks(chunk=100))
    assert not soak.failures
    return (np.concatenate([c[k] for c in chunks]) for k in (0, 1))


def test_soak_raises_start_early():
    # Column 0 of the stimulus is `start`, the others the send words; the expectation is every
    # receive word and root_o. With start_lead = 2 the start column is the plain one and the
    # rest is held two cycles back, behind two quiet cycles.
    ins0, outs0 = _soak_arrays(0)
    ins2, outs2 = _soak_arrays(2)
    assert len(ins2) == len(ins0) + 2 and ins0[:, 0].sum() > 10
    assert (ins2[:-2, 0] == ins0[:, 0]).all() and not ins2[-2:, 0].any()
    assert (ins2[2:, 1:] == ins0[:, 1:]).all() and not ins2[:2, 1:].any()
    assert (outs2[2:] == outs0).all() and not outs2[:2].any()


@pytest.mark.slow
def test_soak_at_start_lead_2(tmp_path):
    # The RTL on Verilator (a harness build of ~1 min) against the model, every cycle.
    from fattree.designs import get_design, parse_params
    from fattree.sim.soak import run_soak

    design = get_design("leiserson-tree")
    params = parse_params(design, ["leaves=8", "start_lead=2"])
    result = run_soak(design, params, messages=3000, seed=2, root=tmp_path, jobs=1)
    assert result.mismatches == 0, result.first_mismatch
    assert result.passed and result.checked >= 3000


def run_bench_at(simulator, lead, tmp_path, frames=30):
    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    return run_bench(
        get_design("leiserson-tree"),
        {"leaves": 8, "w": 0, "seed": 0, "start_lead": lead},
        simulator,
        seed=1,
        bench={"frames": frames},
        root=tmp_path,
    )


ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")


@pytest.mark.cocotb
@ICARUS
@pytest.mark.slow  # the plain tree's bench runs by default (test_leiserson_tree.py)
def test_cocotb_bench_at_start_lead_2(tmp_path):
    # What `fattree sim leiserson-tree -p start_lead=2 -s icarus` runs (that the check can fail
    # at a lead: test_check_catches_a_late_start).
    result = run_bench_at("icarus", 2, tmp_path)
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0 and s["cycles"] == 30 and s["messages_checked"] > 30


@pytest.mark.cocotb
@pytest.mark.slow
def test_cocotb_bench_at_start_lead_2_verilator(tmp_path):
    result = run_bench_at("verilator", 2, tmp_path)
    assert result.passed, result.summary.get("first_mismatch") or result.log
    assert result.summary["mismatches"] == 0 and result.summary["cycles"] == 30


def test_the_design_default_is_start_lead_2(capsys):
    # The command line's tree takes `start` two cycles early (docs/leiserson.md: it pays on
    # both families); the Python class keeps 0, and the tests above cover both.
    from fattree.designs import get_design
    from fattree.scripts.main import main

    assert get_design("leiserson-tree").defaults()["start_lead"] == 2
    assert main(["verilog", "leiserson-tree", "-p", "leaves=4", "-o", "-"]) == 0
    verilog = capsys.readouterr().out
    assert "start_node" not in verilog and "start_in_u_early" in verilog
    assert (
        main(["verilog", "leiserson-tree", "-p", "leaves=4", "-p", "start_lead=0", "-o", "-"]) == 0
    )
    assert "_early" not in capsys.readouterr().out
