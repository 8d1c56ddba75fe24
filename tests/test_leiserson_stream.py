"""The Leiserson fat-tree behind stream ports (amaranth.sim) against its cycle-exact model."""

import random
import shutil

import pytest

from fattree.hdl.leiserson_stream import LeisersonStreamTree
from fattree.sim.checks.leiserson_stream import CHECKS, LeisersonStreamCheck
from fattree.sim.models.leiserson_schedule import (
    filling_sets,
    layout_capacities,
    message_set,
    plan_cycle,
    random_messages,
    schedule_first_fit,
    schedule_theorem1,
)
from fattree.sim.models.leiserson_stream import LeisersonStreamModel
from fattree.sim.models.leiserson_tree import deliver
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate
from fattree.spec.capacities import TreeLayout
from fattree.spec.leiserson_frames import cycle_length, header_bits_bound, latency_bound


def run(dut, messages, seed, *, stall=0.3, mutate=False, schedule=None, **options):
    layout = dut.layout
    n = layout.leaves
    schedule = schedule or schedule_theorem1(n, messages, layout_capacities(layout))
    scoreboard = Scoreboard(CHECKS, mutate=mutate)
    model = LeisersonStreamModel(layout, dut.data_bits)
    result = {"coverage": model.start_coverage()}

    async def bench(ctx):
        def read():
            rx = [
                (ctx.get(dut.rx[i].payload.data), ctx.get(dut.rx[i].payload.wire))
                if ctx.get(dut.rx[i].valid)
                else None
                for i in range(n)
            ]
            return ctx.get(dut.cycle_ready), [ctx.get(dut.tx[i].ready) for i in range(n)], rx

        def drive(beats, cycle_valid, ready):
            ctx.set(dut.cycle_valid, cycle_valid)
            for i, beat in enumerate(beats):
                ctx.set(dut.tx[i].valid, beat is not None)
                if beat is not None:
                    header, length, data = beat
                    ctx.set(
                        dut.tx[i].payload, {"header": header, "header_len": length, "data": data}
                    )
                ctx.set(dut.rx[i].ready, ready[i])

        check = LeisersonStreamCheck(
            model,
            scoreboard,
            read,
            drive,
            ctx.tick,
            rng=random.Random(seed),
            stall=stall,
            header_bits=dut.header_bits,
        )
        result["received"] = await check.deliver(messages, schedule, "test", **options)
        result["check"] = check

    simulate(dut, bench)
    return scoreboard, schedule, result


@pytest.mark.parametrize(
    ("leaves", "w", "seed", "stall"), [(8, 8, 1, 0.3), (8, 4, 2, 0.6), (4, 4, 3, 0.0)]
)
def test_stream_tree_delivers_every_message_once(leaves, w, seed, stall):
    dut = LeisersonStreamTree(leaves, w=w, seed=seed)
    rng = random.Random(seed)
    messages = random_messages(leaves, 3 * leaves, rng) + message_set("permutation", leaves, rng)
    scoreboard, schedule, result = run(dut, messages, seed, stall=stall)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert len(schedule) > 1  # several delivery cycles, one after another
    assert result["received"] == len(messages) == scoreboard.checked
    if stall:
        assert result["check"].backpressure_cycles > 0  # receivers really stalled


def test_eager_cycles_and_dropped_messages():
    # Each delivery cycle offered while the one before runs (an empty one among them), the
    # receivers holding its messages until then; messages sent with an edge index a switch
    # lacks vanish, the others arrive once (docs/leiserson.md, "Coverage").
    dut = LeisersonStreamTree(8, w=8)
    rng = random.Random(4)
    messages = filling_sets(8)[0][1] + message_set("permutation", 8, rng)
    cycles, wires = schedule_first_fit(dut.layout, messages)
    schedule = cycles[:1] + [[]] + cycles[1:]
    drop = set(range(0, len(messages), 3))
    scoreboard, _, result = run(
        dut, messages, 4, schedule=schedule, eager=True, drop=drop, wires=wires
    )
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    dropped = result["check"].dropped
    assert 0 < dropped <= len(drop) and result["received"] == len(messages) - dropped
    points = result["coverage"].as_dict()["points"]
    assert points["cycle"]["bins"]["waits: running"] > 0
    assert points["tx"]["bins"]["refused: running"] > 0
    assert points["load/C1/up"]["bins"]["full"] > 0


def test_broken_model_is_caught():
    dut = LeisersonStreamTree(4, w=4)
    messages = random_messages(4, 6, random.Random(5))
    scoreboard, _, _ = run(dut, messages, 5, mutate=True)
    assert scoreboard.mismatches == 1


def test_custom_capacities_use_several_leaf_wires():
    # Two wires per leaf: a leaf's second message of a cycle goes out on wire 1 and the
    # receiver gives them lowest wire first.
    dut = LeisersonStreamTree(4, [4, 4, 2], seed=1)
    assert dut.wires == 2
    rng = random.Random(9)
    messages = random_messages(4, 14, rng)
    scoreboard, _, result = run(dut, messages, 9)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert result["received"] == len(messages)


@pytest.mark.parametrize("leaves", [4, 8, 16, 32])
def test_frame_bounds_cover_every_scheduled_message(leaves):
    layout = TreeLayout.universal(leaves, seed=leaves)
    rng = random.Random(leaves)
    messages = random_messages(leaves, 4 * leaves, rng)
    longest = slowest = 0
    for cycle in schedule_theorem1(leaves, messages, layout_capacities(layout)):
        plan = plan_cycle(layout, messages, cycle)
        frames = {}
        wire = {}
        for p in plan.messages:
            k = wire.setdefault(p.src, 0)
            wire[p.src] += 1
            frames[(p.src, k)] = [1, *p.header, *([0] * 8)]
            longest = max(longest, len(p.header))
        slowest = max([slowest] + [a.latency for a in deliver(layout, frames).arrivals])
    assert longest <= header_bits_bound(layout)
    assert slowest <= latency_bound(layout)
    assert cycle_length(layout, 8) == latency_bound(layout) + 1 + header_bits_bound(layout) + 8


def test_bad_data_bits_is_one_line():
    with pytest.raises(ValueError, match="data_bits"):
        LeisersonStreamTree(4, data_bits=0)


ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")


def run_cocotb(simulator, leaves, frames, tmp_path, *, mutation=False, backpressure=30):
    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    bench = {"frames": frames, "mutation": mutation, "backpressure": backpressure}
    return run_bench(
        get_design("leiserson-stream"),
        {"leaves": leaves, "w": 0, "seed": 0, "data_bits": 8},
        simulator,
        seed=1,
        bench={**bench, "coverage": True},
        root=tmp_path,
    )


@pytest.mark.cocotb
# A Verilator build of 8 leaves takes minutes: 4 leaves on it, a slow point (Icarus by default).
@pytest.mark.parametrize(
    ("simulator", "leaves"),
    [pytest.param("icarus", 8, marks=ICARUS), pytest.param("verilator", 4, marks=pytest.mark.slow)],
)
def test_cocotb_small_tree(simulator, leaves, tmp_path):
    result = run_cocotb(simulator, leaves, 20, tmp_path, backpressure=50)
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0 and s["delivery_cycles"] == 20
    assert s["messages_checked"] == sum(m["received"] for m in s["message_sets"]) > 20
    assert s["backpressure_cycles"] > 0 and s["dropped"] > 0
    # Every bin of the model's cover points (docs/leiserson.md, "Coverage").
    assert s["coverage"]["holes"] == [], s["coverage"]


@pytest.mark.cocotb
@pytest.mark.slow  # the default point (16 leaves) on Verilator through the command line
def test_cocotb_coverage_closes_at_the_default_point(tmp_path, capsys):
    import json

    from fattree.scripts.main import main

    argv = ["sim", "leiserson-stream", "--coverage", "--json", "--build-root", str(tmp_path)]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    coverage = out["summary"]["coverage"]
    assert coverage["holes"] == [] and coverage["hit"] == coverage["bins"] == 81
    assert code == 0 and out["passed"]


@pytest.mark.cocotb
@ICARUS
def test_cocotb_broken_reference_is_caught(tmp_path):
    result = run_cocotb("icarus", 4, 2, tmp_path, mutation=True)
    assert not result.passed
    assert result.summary["mismatches"] == 1


@pytest.mark.cocotb
@pytest.mark.slow
@pytest.mark.parametrize(("simulator", "leaves"), [("verilator", 16), ("icarus", 32)])
def test_cocotb_larger_trees(simulator, leaves, tmp_path):
    if simulator == "icarus" and shutil.which("iverilog") is None:
        pytest.skip("no iverilog")
    result = run_cocotb(simulator, leaves, 30, tmp_path)
    assert result.passed, result.summary.get("first_mismatch") or result.log
    assert result.summary["messages_checked"] > 30
