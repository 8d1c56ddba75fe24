"""A whole Leiserson fat-tree (amaranth.sim) delivering off-line schedules bit-serially."""

import random
import shutil

import pytest

from fattree.hdl.leiserson_tree import LeisersonFatTree
from fattree.sim.checks.leiserson_tree import CHECKS, LeisersonTreeCheck
from fattree.sim.models.leiserson_schedule import (
    OUTSIDE,
    external_messages,
    layout_capacities,
    load_factor,
    random_messages,
    schedule_first_fit,
    schedule_theorem1,
    theorem1_bound,
)
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate


def run_schedule(dut, messages, seed, *, outside=False, mutate=False, drop=()):
    """Schedule ``messages`` off-line, drive every delivery cycle through the RTL, and compare
    every leaf's receive wires and ``root_o`` cycle by cycle with the tree model and every
    arrival with what was sent. Returns the schedule, the indices of the messages that
    arrived, the scoreboard and how many were dropped (``drop``: messages sent with a missing
    edge index where their path allows). ``outside``: messages may start or end outside
    (``root_i``, ``root_o``), packed first-fit on random wires instead of by Theorem 1."""
    layout = dut.layout
    n = layout.leaves
    rng = random.Random(seed)
    caps = layout_capacities(layout)
    wires = None
    if outside:
        cycles, wires = schedule_first_fit(layout, messages, rng)
    else:
        cycles = schedule_theorem1(n, messages, caps)
        assert len(cycles) <= theorem1_bound(n, messages, caps)
    scoreboard = Scoreboard(CHECKS, mutate=mutate)
    delivered, dropped = [], []

    async def bench(ctx):
        def read():
            return [ctx.get(dut.recv[leaf]) for leaf in range(n)], ctx.get(dut.root_o)

        def drive(start, row):
            ctx.set(dut.start, start)
            for leaf in range(n):
                ctx.set(dut.send[leaf], row[leaf])

        def drive_root(word):
            ctx.set(dut.root_i, word)

        check = LeisersonTreeCheck(
            layout, scoreboard, read, drive, ctx.tick, drive_root if outside else None
        )
        delivered.extend(await check.deliver(messages, cycles, rng, "test", wires=wires, drop=drop))
        dropped.append(check.dropped)

    simulate(dut, bench)
    if not mutate:
        assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    return cycles, delivered, scoreboard, dropped[0]


@pytest.mark.parametrize(("w", "seed"), [(8, 1), (4, 2)])
def test_tree_delivers_schedule(w, seed):
    dut = LeisersonFatTree(8, w=w)
    rng = random.Random(seed)
    perm = list(range(8))
    rng.shuffle(perm)
    messages = random_messages(8, 12, rng) + [(i, perm[i]) for i in range(8) if perm[i] != i]
    assert load_factor(8, messages, layout_capacities(dut.layout)) > 1
    cycles, delivered, _, _ = run_schedule(dut, messages, seed)
    assert sorted(delivered) == list(range(len(messages)))  # each exactly once, data intact
    assert len(cycles) >= 2


def test_tree_with_user_profile_and_two_leaf_wires():
    dut = LeisersonFatTree(4, [3, 3, 2])
    messages = [(0, 3), (0, 2), (1, 3), (2, 0), (3, 1), (1, 0), (2, 1), (3, 2)]
    cycles, delivered, _, _ = run_schedule(dut, messages, 3)
    assert sorted(delivered) == list(range(len(messages)))


@pytest.mark.parametrize(
    ("leaves", "w", "seed"), [(4, 0, 1), (8, 4, 2), pytest.param(16, 7, 3, marks=pytest.mark.slow)]
)
def test_tree_carries_traffic_through_the_root(leaves, w, seed):
    # Messages from outside (root_i) to leaves, from leaves to outside (root_o) and between
    # leaves, on random wires of every channel: root_o and every recv checked cycle by cycle.
    dut = LeisersonFatTree(leaves, w=w or None)
    messages = external_messages(leaves, random.Random(seed), per_leaf=2)
    cycles, delivered, _, _ = run_schedule(dut, messages, seed, outside=True)
    assert sorted(delivered) == list(range(len(messages)))
    assert len(cycles) >= 2


@pytest.mark.parametrize(("leaves", "w"), [(4, 0), (8, 4)])
def test_tree_drops_messages_with_a_missing_edge(leaves, w):
    # Every message whose path has a stage input with fewer edges than its decision bits
    # can name is sent with such an edge index: the switch must drop it (nothing of it
    # reaches any output), and every other message arrives as before.
    dut = LeisersonFatTree(leaves, w=w or None)
    messages = external_messages(leaves, random.Random(leaves), per_leaf=2)
    every = set(range(len(messages)))
    cycles, delivered, _, dropped = run_schedule(dut, messages, leaves, outside=True, drop=every)
    assert dropped > 0 and len(delivered) + dropped == len(messages)


def test_dropping_header_by_hand():
    # 4 leaves: node 2's L cascade is 3 -> 1 with one decision bit and one edge per input,
    # so edge index 1 names no edge. Leaf 1 -> leaf 0 turns at node 2: address 0 (across),
    # then that bit. The root's L/R cascades (6 -> 2, complete) have no missing edge.
    from fattree.sim.models.leiserson_schedule import dropping_header, plan_cycle
    from fattree.spec.capacities import TreeLayout

    layout = TreeLayout.universal(4)
    plan = plan_cycle(layout, [(1, 0), (OUTSIDE, 2)], [0, 1])
    across, down = plan.messages
    assert across.header == [0, 0] and dropping_header(layout, across) == [0, 1]
    # From outside to leaf 2: root R (edge index 0 or 1, both exist), then node 3's L.
    header = dropping_header(layout, down)
    assert header[:2] == down.header[:2] and header[2:] == [0, 1]


def test_root_traffic_broken_reference_is_caught():
    # The first expected value with a 1 in it loses that bit: the comparison is real.
    dut = LeisersonFatTree(4)
    messages = [(OUTSIDE, 0), (1, OUTSIDE), (OUTSIDE, 3)]
    _, delivered, scoreboard, _ = run_schedule(dut, messages, 1, outside=True, mutate=True)
    assert scoreboard.failures["cycle_mismatches"] == 1
    assert sorted(delivered) == [0, 1, 2]


def test_outside_messages_need_drive_root():
    import asyncio

    from fattree.spec.capacities import TreeLayout

    check = LeisersonTreeCheck(TreeLayout.universal(4), Scoreboard(CHECKS), None, None, None)
    with pytest.raises(ValueError, match=r"^messages from OUTSIDE need a drive_root callable$"):
        asyncio.run(check.deliver([(OUTSIDE, 1)], [[0]], random.Random(0), "x"))


def test_parameter_errors():
    with pytest.raises(ValueError, match=r"^leaves must be a power of two of at least 2, not 12$"):
        LeisersonFatTree(12)
    with pytest.raises(ValueError, match=r"^root capacity w must satisfy n\^\(2/3\) <= w <= n, "):
        LeisersonFatTree(64, w=15)
    with pytest.raises(ValueError, match=r"^capacities must be a list of 4 positive integers "):
        LeisersonFatTree(8, [4, 2, 1])
    with pytest.raises(ValueError, match=r"^give either capacities or w, not both$"):
        LeisersonFatTree(8, [4, 2, 1, 1], w=8)
    with pytest.raises(TypeError, match=r"^seed must be an integer, not 'x'$"):
        LeisersonFatTree(8, seed="x")


def test_verilog_from_the_command_line(capsys):
    from fattree.scripts.main import main

    assert main(["verilog", "leiserson-tree", "--param", "leaves=4", "-o", "-"]) == 0
    assert "module leiserson_tree(" in capsys.readouterr().out
    assert main(["verilog", "leiserson-tree", "--param", "leaves=16", "--param", "w=5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "fattree verilog: error: root capacity w must satisfy n^(2/3) <= w <= n, "
        "i.e. 7 <= w <= 16 for n = 16 leaves, not 5"
    )


ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")


def run_cocotb(simulator, leaves, frames, tmp_path, *, w=0, mutation=False, seed=1):
    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    return run_bench(
        get_design("leiserson-tree"),
        {"leaves": leaves, "w": w, "seed": 0},
        simulator,
        seed=seed,
        bench={"frames": frames, "mutation": mutation, "coverage": True},
        root=tmp_path,
    )


def check_bench(result, frames):
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0 and s["cycles"] == frames
    for message_set in s["message_sets"]:
        assert message_set["lambda"] > 1
        if message_set["complete"]:
            assert message_set["lambda"] <= message_set["d"] <= message_set["theorem1_bound"]
    # Every fourth set goes through the root's external channel.
    assert len(s["external_sets"]) >= 1 and all(x["messages"] > 0 for x in s["external_sets"])
    assert s["dropped"] > 0  # messages sent with an edge index a switch lacks, and gone
    assert s["messages_checked"] > frames


@pytest.mark.cocotb
@ICARUS
@pytest.mark.slow  # the 4-leaf mutant point below runs the same bench by default
def test_cocotb_icarus_8_leaves(tmp_path):
    check_bench(run_cocotb("icarus", 8, 30, tmp_path), 30)


@pytest.mark.cocotb
@ICARUS
def test_cocotb_icarus_4_leaves_the_mutant_point(tmp_path):
    # The point fattree mutants runs (4 leaves): the whole default budget; every bin of the
    # tree model's cover points hit (docs/leiserson.md, "Coverage"), every channel full.
    result = run_cocotb("icarus", 4, 200, tmp_path)
    check_bench(result, 200)
    coverage = result.summary["coverage"]
    assert coverage["holes"] == [] and coverage["bins"] == 28, coverage


@pytest.mark.cocotb
@pytest.mark.slow  # the default point (16 leaves) on Verilator through the command line
def test_cocotb_coverage_closes_at_the_default_point(tmp_path, capsys):
    import json

    from fattree.scripts.main import main

    argv = ["sim", "leiserson-tree", "--coverage", "--json", "--build-root", str(tmp_path)]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    coverage = out["summary"]["coverage"]
    assert coverage["holes"] == [] and coverage["hit"] == coverage["bins"] == 84
    assert code == 0 and out["passed"]


@pytest.mark.cocotb
@ICARUS
def test_cocotb_broken_reference_is_caught(tmp_path):
    # The scoreboard is real: one dropped M bit in the reference fails the run, and only
    # the cycle-by-cycle check complains (the delivered messages themselves are right).
    result = run_cocotb("icarus", 8, 2, tmp_path, mutation=True)
    assert not result.passed
    assert result.summary["cycle_mismatches"] >= 1
    assert result.summary["message_mismatches"] == 0


@pytest.mark.cocotb
@pytest.mark.parametrize(
    ("simulator", "leaves", "w"),
    [
        pytest.param("verilator", 4, 0, marks=pytest.mark.slow),
        pytest.param("verilator", 8, 0, marks=pytest.mark.slow),
        pytest.param("icarus", 16, 0, marks=pytest.mark.slow),
        pytest.param("icarus", 16, 7, marks=pytest.mark.slow),
        pytest.param("icarus", 32, 0, marks=pytest.mark.slow),
        pytest.param("icarus", 64, 16, marks=pytest.mark.slow),
    ],
)
def test_cocotb_larger_trees(simulator, leaves, w, tmp_path):
    if simulator == "icarus" and shutil.which("iverilog") is None:
        pytest.skip("no iverilog")
    check_bench(run_cocotb(simulator, leaves, 40, tmp_path, w=w), 40)
