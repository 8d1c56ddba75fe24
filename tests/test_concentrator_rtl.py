"""Concentrator stages and switches (amaranth.sim): Python matchings become disjoint paths."""

import random

import pytest

from fattree.hdl.concentrator import ConcentratorSwitch, PartialConcentrator
from fattree.sim.testbench import simulate
from fattree.spec.concentrator_graph import BipartiteGraph, build_cascade


def bits(value, width):
    return [(value >> (width - 1 - b)) & 1 for b in range(width)]


def cascade_frame(cascade, routing, i, data, data_bits):
    frame = [1]
    for t, stage in enumerate(cascade.stages):
        frame += bits(routing.choices[t][routing.paths[i][t]], stage.graph.decision_bits)
    return frame + bits(data, data_bits)


def check_no_double_drive(ctx, stage, graph):
    """Every output of the stage is switched onto by at most one input; returns the paths."""
    driving = {}
    for k, row in enumerate(graph.adjacency):
        if ctx.get(stage.passing[k]):
            e = ctx.get(stage.choice[k])
            if e < len(row):
                assert row[e] not in driving, f"output {row[e]} driven by {driving[row[e]]}, {k}"
                driving[row[e]] = k
    return driving


def run_switch(cascade, deliveries, data_bits=6, seed=0):
    """Drive several delivery cycles; each is (active inputs, offsets). Compare every cycle
    of every output with the expected waveform and check the stage paths."""
    rng = random.Random(seed)
    dut = ConcentratorSwitch(cascade)
    latency = sum(stage.graph.decision_bits + 1 for stage in cascade.stages)
    header = sum(stage.graph.decision_bits for stage in cascade.stages)
    period = 4 + header + data_bits + latency + 3
    total = period * len(deliveries)
    drive = [[0] * cascade.r for _ in range(total)]
    expect = [[0] * cascade.s for _ in range(total)]
    starts = []
    paths_wanted = []
    for d, active in enumerate(deliveries):
        t0 = d * period
        starts.append(t0)
        routing = cascade.route(active)
        assert routing.lost == []
        paths_wanted.append((t0, routing))
        for i in active:
            offset = rng.randrange(4)
            data = rng.getrandbits(data_bits)
            frame = cascade_frame(cascade, routing, i, data, data_bits)
            for k, b in enumerate(frame):
                drive[t0 + offset + k][i] = b
            out = routing.outputs[i]
            arrive = t0 + offset + latency
            received = [1] + bits(data, data_bits)
            for k, b in enumerate(received):
                expect[arrive + k][out] = b
    seen = []

    async def bench(ctx):
        for t in range(total):
            ctx.set(dut.start, int(t in starts))
            ctx.set(dut.i, sum(b << k for k, b in enumerate(drive[t])))
            await ctx.tick()
            seen.append([(ctx.get(dut.o) >> j) & 1 for j in range(cascade.s)])
            for stage, built in zip(dut.stages, cascade.stages, strict=True):
                check_no_double_drive(ctx, stage, built.graph)
            # Once every header has passed, the stage registers hold exactly the matching.
            for t0, routing in paths_wanted:
                if t == t0 + period - 2:
                    for s_idx, (stage, built) in enumerate(
                        zip(dut.stages, cascade.stages, strict=True)
                    ):
                        held = {
                            k: ctx.get(stage.choice[k])
                            for k in range(built.graph.r)
                            if ctx.get(stage.passing[k])
                        }
                        assert held == routing.choices[s_idx]

    simulate(dut, bench)
    # seen[t] is the output after the clock edge ending cycle t, i.e. visible in cycle t + 1.
    assert [[0] * cascade.s] + seen[:-1] == expect


@pytest.mark.parametrize(
    ("r", "s"), [pytest.param(24, 8, marks=pytest.mark.slow), (12, 4), (16, 11), (3, 1)]
)
def test_switch_realises_python_matchings(r, s):
    cascade = build_cascade(r, s)
    rng = random.Random(r + s)
    deliveries = [rng.sample(range(r), rng.randint(1, cascade.guaranteed)) for _ in range(4)] + [
        rng.sample(range(r), cascade.guaranteed)
    ]
    run_switch(cascade, deliveries, seed=r)


def test_identity_switch_is_wires():
    # s >= r: no stage, input k drives output k, the extra outputs stay 0.
    dut = ConcentratorSwitch(build_cascade(3, 5))

    async def bench(ctx):
        for value in range(8):
            ctx.set(dut.i, value)
            assert ctx.get(dut.o) == value

    simulate(dut, bench, period=None)


def test_full_load_and_empty_cycles():
    cascade = build_cascade(12, 4)
    run_switch(cascade, [list(range(4)), [], [8, 9, 10, 11], [0, 11]], seed=5)


def test_out_of_range_edge_drops_the_message():
    # Input 0 has degree 2 but asks for edge 3 (2 decision bits, as input 1 has degree 3):
    # nothing comes out, nothing is driven.
    graph = BipartiteGraph(3, 3, ((0, 1), (0, 1, 2), (2,)), kind="test")
    assert graph.decision_bits == 2
    dut = PartialConcentrator(graph)
    frame = [1, 1, 1, 1, 0, 1]  # M, edge 3 (2 bits), data
    outputs = []

    async def bench(ctx):
        ctx.set(dut.start, 1)
        for t in range(len(frame) + 4):
            ctx.set(dut.i, frame[t] if t < len(frame) else 0)
            await ctx.tick()
            ctx.set(dut.start, 0)
            outputs.append(ctx.get(dut.o))
            assert check_no_double_drive(ctx, dut, graph) == {}

    simulate(dut, bench)
    assert outputs == [0] * len(outputs)


def test_parameter_errors():
    with pytest.raises(TypeError, match=r"^graph must be a BipartiteGraph, not 3$"):
        PartialConcentrator(3)
    with pytest.raises(TypeError, match=r"^cascade must be a Cascade, not None$"):
        ConcentratorSwitch(None)
