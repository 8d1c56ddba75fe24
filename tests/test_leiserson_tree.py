"""A whole Leiserson fat-tree (amaranth.sim) delivering off-line schedules bit-serially."""

import random

import pytest
from amaranth.sim import Simulator

from fattree.hdl.leiserson_tree import LeisersonFatTree
from fattree.sim.models.leiserson_schedule import (
    frame_bits,
    layout_capacities,
    load_factor,
    plan_cycle,
    schedule_theorem1,
    theorem1_bound,
)
from fattree.sim.models.leiserson_tree import deliver

DATA_BITS = 8


def random_set(n, m, rng):
    out = []
    while len(out) < m:
        a, b = rng.randrange(n), rng.randrange(n)
        if a != b:
            out.append((a, b))
    return out


def run_schedule(dut, messages, seed):
    """Schedule ``messages`` off-line, drive every delivery cycle through the RTL, and compare
    every leaf's receive wires cycle by cycle with the tree model. Returns what arrived."""
    layout = dut.layout
    n = layout.leaves
    rng = random.Random(seed)
    caps = layout_capacities(layout)
    cycles = schedule_theorem1(n, messages, caps)
    assert len(cycles) <= theorem1_bound(n, messages, caps)
    waves = []  # per delivery cycle: (drive[t][leaf], expect[t][leaf], sent)
    for cycle in cycles:
        plan = plan_cycle(layout, messages, cycle)
        frames, sent, offsets = {}, {}, {}
        for mp in plan.messages:
            wire = sum(1 for key in frames if key[0] == mp.src)
            data = rng.getrandbits(DATA_BITS)
            frames[(mp.src, wire)] = frame_bits(mp, data, DATA_BITS)
            sent[(mp.src, wire)] = (mp.index, data)
            offsets[(mp.src, wire)] = rng.randrange(3)  # senders need not start together
        model = deliver(layout, frames)
        assert model.lost == [] and model.collisions == []
        length = max(len(f) + offsets[k] for k, f in frames.items())
        length += max(a.latency for a in model.arrivals) + 3
        drive = [[0] * n for _ in range(length)]
        expect = [[0] * n for _ in range(length)]
        for (src, wire), frame in frames.items():
            for k, b in enumerate(frame):
                drive[offsets[(src, wire)] + k][src] |= b << wire
        for a in model.arrivals:
            assert a.where[0] == "leaf"
            t0 = offsets[(a.src, a.src_wire)] + a.latency
            for k, b in enumerate(a.bits):
                expect[t0 + k][a.where[1]] |= b << a.wire
        waves.append((drive, expect, sent, model))

    seen = []

    async def bench(ctx):
        for drive, _expect, _sent, _model in waves:
            got = []
            for t, row in enumerate(drive):
                ctx.set(dut.start, int(t == 0))
                for leaf in range(n):
                    ctx.set(dut.send[leaf], row[leaf])
                got.append([ctx.get(dut.recv[leaf]) for leaf in range(n)])
                assert ctx.get(dut.root_o) == 0
                await ctx.tick()
            seen.append(got)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()

    delivered = []
    for (_drive, expect, sent, model), got in zip(waves, seen, strict=True):
        assert got == expect
        for a in model.arrivals:
            index, data = sent[(a.src, a.src_wire)]
            assert a.where == ("leaf", messages[index][1])
            assert a.bits == tuple([1] + [(data >> (DATA_BITS - 1 - b)) & 1 for b in range(8)])
            delivered.append(index)
    return cycles, delivered


@pytest.mark.parametrize(("w", "seed"), [(8, 1), (4, 2)])
def test_tree_delivers_schedule(w, seed):
    dut = LeisersonFatTree(8, w=w)
    rng = random.Random(seed)
    perm = list(range(8))
    rng.shuffle(perm)
    messages = random_set(8, 12, rng) + [(i, perm[i]) for i in range(8) if perm[i] != i]
    assert load_factor(8, messages, layout_capacities(dut.layout)) > 1
    cycles, delivered = run_schedule(dut, messages, seed)
    assert sorted(delivered) == list(range(len(messages)))  # each exactly once, data intact
    assert len(cycles) >= 2


def test_tree_with_user_profile_and_two_leaf_wires():
    dut = LeisersonFatTree(4, [3, 3, 2])
    messages = [(0, 3), (0, 2), (1, 3), (2, 0), (3, 1), (1, 0), (2, 1), (3, 2)]
    cycles, delivered = run_schedule(dut, messages, 3)
    assert sorted(delivered) == list(range(len(messages)))


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
