"""Reset in the middle of traffic, for every design (amaranth.sim).

Each test runs the design's own lock-step check (sim/checks/) with random traffic, stops it
at a random cycle (seeded) while messages are in flight, holds the ``sync`` domain's reset
for one to three cycles with the inputs idle, and then asserts:

* every register of the design is back at its reset value (found from the elaborated design:
  every signal assigned in a clocked domain, named by its place in the hierarchy), so no
  circuit is held, no output is valid, no message, counter or buffer entry survives;
* the design then works again: a fresh reference model, started at the reset, agrees with it
  through the same check, cycle by cycle and message by message, until every message of a new
  round of traffic is delivered (a few hundred cycles).

What a register check cannot see, memory contents (``Memory`` keeps its data through a reset),
is listed by :func:`memories` and shows up in the second check if it matters.
"""

from __future__ import annotations

import random

import pytest
from amaranth import ClockDomain, Module, Signal
from amaranth.hdl._mem import MemoryInstance
from amaranth.sim import Simulator

from fattree.sim.scoreboard import Scoreboard


class Interrupt(Exception):
    """Raised by the check's ``tick`` at the reset cycle: the traffic stops mid-flight."""


def _design(sim: Simulator):
    # The elaborated design the simulator runs (its signals are the ones ctx.get reads).
    return sim._design


def registers(sim: Simulator) -> dict[str, Signal]:
    """Every signal assigned in a clocked domain, by hierarchical name."""
    found = {}
    for fragment, info in _design(sim).fragments.items():
        for domain, statements in fragment.statements.items():
            if domain == "comb":
                continue
            for statement in statements:
                for signal in statement._lhs_signals():
                    name = info.signal_names.get(signal, signal.name)
                    found[".".join((*info.name[1:], name))] = signal
    return found


def memories(sim: Simulator) -> list[str]:
    """Hierarchical names of the memories (their contents survive a reset)."""
    return [
        ".".join(info.name[1:])
        for fragment, info in _design(sim).fragments.items()
        if isinstance(fragment, MemoryInstance)
    ]


def reset_in_traffic(dut, before, after, idle, *, seed: int, earliest: int, latest: int):
    """Run ``before(ctx, tick)`` until a random cycle in ``earliest .. latest``, hold the
    ``sync`` domain's reset for 1..3 cycles with ``idle(ctx)`` inputs, then run
    ``after(ctx, tick)``.

    Returns a report: the reset cycle and length, the registers away from their reset value
    just before the reset (the traffic really was in flight) and just after it (``stale``:
    must be none; ``kept``: ``reset_less`` data registers, which keep their value by design and
    must not matter), the memories, and whatever ``after`` returned."""
    rng = random.Random(seed)
    at, hold = rng.randint(earliest, latest), rng.randint(1, 3)
    top = Module()
    top.domains.sync = sync = ClockDomain()  # the domain's own reset, the Verilog's rst port
    top.submodules.dut = dut
    sim = Simulator(top)
    sim.add_clock(1e-6)
    regs = registers(sim)
    report = {"at": at, "hold": hold, "memories": memories(sim), "registers": len(regs)}

    def away(ctx) -> list[str]:
        return sorted(name for name, s in regs.items() if ctx.get(s) != s.init)

    async def bench(ctx):
        cycles = 0

        async def tick_until_reset():
            nonlocal cycles
            if cycles == at:
                raise Interrupt
            cycles += 1
            await ctx.tick()

        try:
            await before(ctx, tick_until_reset)
        except Interrupt:
            pass
        report["interrupted"] = cycles == at
        report["busy_before"] = away(ctx)
        idle(ctx)
        ctx.set(sync.rst, 1)
        for _ in range(hold):
            await ctx.tick()
        ctx.set(sync.rst, 0)
        after_reset = away(ctx)
        report["stale"] = [n for n in after_reset if not regs[n].reset_less]
        report["kept"] = [n for n in after_reset if regs[n].reset_less]
        report["after"] = await after(ctx, ctx.tick)

    sim.add_testbench(bench)
    sim.run()
    return report


def assert_recovered(report, scoreboard: Scoreboard, messages: int) -> None:
    assert report["interrupted"], f"the traffic ended before cycle {report['at']}: no reset in it"
    assert report["busy_before"], "nothing was in flight at the reset"
    problems = []
    if report["stale"]:
        problems.append(f"not reset: {report['stale'][:8]}")
    if scoreboard.mismatches:
        problems.append(
            f"{scoreboard.mismatches} mismatches against a fresh model after the reset at cycle "
            f"{report['at']}; first: {scoreboard.first_mismatch}"
        )
    assert not problems, "; ".join(problems)
    assert scoreboard.checked == messages > 0


SLOW = pytest.mark.slow

# Two seeds in the default run, a third with --run-slow.
SEEDS = [1, 2, pytest.param(3, marks=pytest.mark.slow)]


# -- selector ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_selector(seed):
    from fattree.hdl.selector import Selector
    from fattree.sim.checks.selector import CHECKS, SelectorCheck

    width = 4
    dut = Selector(width)
    rng = random.Random(seed)

    def frames(count):
        return [[rng.getrandbits(width) for _ in range(rng.randint(2, 6))] for _ in range(count)]

    def check(ctx, tick, scoreboard):
        def read():
            return ctx.get(dut.start_o), ctx.get(dut.one), ctx.get(dut.zero)

        def drive(start, word):
            ctx.set(dut.start, start)
            ctx.set(dut.i, word)

        return SelectorCheck(width, scoreboard, read, drive, tick)

    first, second = Scoreboard(CHECKS), Scoreboard(CHECKS)
    sent = frames(30)

    async def before(ctx, tick):
        await check(ctx, tick, first).run(frames(40))

    async def after(ctx, tick):
        await check(ctx, tick, second).run(sent)

    def idle(ctx):
        ctx.set(dut.start, 0)
        ctx.set(dut.i, 0)

    report = reset_in_traffic(dut, before, after, idle, seed=seed, earliest=5, latest=120)
    assert first.failures["cycle_mismatches"] == 0, first.first_mismatch
    assert_recovered(report, second, len(sent) * width)


# -- circuit tree ------------------------------------------------------------------------------


def stream_check(check_class, model_of, signals, outputs, inputs, stall, rng):
    """A lock-step check (circuit tree, hypercube) whose read/drive go through ``signals``."""

    def make(ctx, tick, scoreboard):
        def read():
            return [[ctx.get(s) for s in signals[name]] for name in outputs]

        def drive(*values):
            for name, value in zip(inputs, values, strict=True):
                for s, v in zip(signals[name], value, strict=True):
                    ctx.set(s, v)

        return check_class(model_of(), scoreboard, read, drive, tick, stall=stall, rng=rng)

    def idle(ctx):
        for name in inputs:
            for s in signals[name]:
                ctx.set(s, 0)

    return make, idle


@pytest.mark.parametrize(
    "seed, retry",
    [(1, "immediate"), (2, "round"), (3, "backoff"), pytest.param(4, "immediate", marks=SLOW)],
)
def test_circuit_tree(seed, retry):
    from fattree.hdl.circuit_tree import CircuitFatTree
    from fattree.sim.checks.circuit_tree import (
        CHECKS,
        INPUTS,
        OUTPUTS,
        CircuitTreeCheck,
        dut_signals,
    )
    from fattree.sim.models.circuit import CircuitTreeModel, traffic

    leaves, width, length = 8, 2, 2
    dut = CircuitFatTree(leaves, width, length, seed, retry)
    rng = random.Random(seed)
    make, idle = stream_check(
        CircuitTreeCheck,
        lambda: CircuitTreeModel(leaves, width, length, seed, retry),
        dut_signals(dut, leaves),
        OUTPUTS,
        INPUTS,
        0.3,
        rng,
    )
    first, second = Scoreboard(CHECKS), Scoreboard(CHECKS)
    queues = traffic("random", leaves, width, length, rng, messages=4)

    async def before(ctx, tick):
        hot = traffic("hotspot", leaves, width, length, rng, messages=3)
        await make(ctx, tick, first).phase("before", hot, 10_000)

    async def after(ctx, tick):
        await make(ctx, tick, second).phase("after", queues, 10_000)

    report = reset_in_traffic(dut, before, after, idle, seed=seed, earliest=10, latest=150)
    assert first.failures["cycle_mismatches"] == 0, first.first_mismatch
    assert_recovered(report, second, sum(len(q) for q in queues))


# -- hypercube ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_hypercube(seed):
    from fattree.hdl.hypercube import HypercubeNetwork
    from fattree.sim.checks.hypercube import CHECKS, INPUTS, OUTPUTS, HypercubeCheck
    from fattree.sim.models.hypercube import HypercubeModel, traffic

    dim, procs, buffers, bits = 3, 2, 1, 8
    dut = HypercubeNetwork(dim, procs, buffers, bits)
    g = dut.processors
    signals = {
        "tx_valid": [dut.tx[i].valid for i in range(g)],
        "tx_ready": [dut.tx[i].ready for i in range(g)],
        "tx_dest": [dut.tx[i].payload.dest for i in range(g)],
        "tx_data": [dut.tx[i].payload.data for i in range(g)],
        "rx_valid": [dut.rx[i].valid for i in range(g)],
        "rx_ready": [dut.rx[i].ready for i in range(g)],
        "rx_data": [dut.rx[i].payload.data for i in range(g)],
        "refer": [dut.refer[n] for n in range(dut.nodes)],
    }
    rng = random.Random(seed)
    make, idle = stream_check(
        HypercubeCheck,
        lambda: HypercubeModel(dim, procs, buffers, bits),
        signals,
        OUTPUTS,
        INPUTS,
        0.3,
        rng,
    )
    first, second = Scoreboard(CHECKS), Scoreboard(CHECKS)
    phases = [
        ("random", traffic("random", dim, procs, bits, rng, messages=6)),
        ("permutation", traffic("permutation", dim, procs, bits, rng)),
        ("hotspot", traffic("hotspot", dim, procs, bits, rng, messages=3)),
    ]

    async def before(ctx, tick):
        hot = traffic("hotspot", dim, procs, bits, rng, messages=3)
        await make(ctx, tick, first).phase("before", hot, 10_000)

    async def after(ctx, tick):
        check = make(ctx, tick, second)
        for name, queues in phases:
            await check.phase(name, queues, 10_000)

    report = reset_in_traffic(dut, before, after, idle, seed=seed, earliest=5, latest=40)
    assert first.failures["cycle_mismatches"] == 0, first.first_mismatch
    assert_recovered(report, second, sum(len(q) for _, queues in phases for q in queues))


# -- Leiserson tree, bit-serial and behind streams ---------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_leiserson_tree(seed):
    from fattree.hdl.leiserson_tree import LeisersonFatTree
    from fattree.sim.checks.leiserson_tree import CHECKS, LeisersonTreeCheck
    from fattree.sim.models.leiserson_schedule import (
        layout_capacities,
        random_messages,
        schedule_theorem1,
    )

    n = 8
    dut = LeisersonFatTree(n, w=4, seed=seed)
    layout = dut.layout
    rng = random.Random(seed)

    def check(ctx, tick, scoreboard):
        def read():
            return [ctx.get(dut.recv[leaf]) for leaf in range(n)], ctx.get(dut.root_o)

        def drive(start, row):
            ctx.set(dut.start, start)
            for leaf in range(n):
                ctx.set(dut.send[leaf], row[leaf])

        return LeisersonTreeCheck(layout, scoreboard, read, drive, tick)

    def idle(ctx):
        ctx.set(dut.start, 0)
        for leaf in range(n):
            ctx.set(dut.send[leaf], 0)

    def schedule(messages):
        return schedule_theorem1(n, messages, layout_capacities(layout))

    first, second = Scoreboard(CHECKS), Scoreboard(CHECKS)
    messages = random_messages(n, 16, rng)
    old = random_messages(n, 24, rng)

    async def before(ctx, tick):
        await check(ctx, tick, first).deliver(old, schedule(old), rng, "before")

    async def after(ctx, tick):
        await check(ctx, tick, second).deliver(messages, schedule(messages), rng, "after")

    # A delivery cycle is a few tens of clock cycles: the reset lands inside one.
    report = reset_in_traffic(dut, before, after, idle, seed=seed, earliest=3, latest=60)
    assert first.failures["cycle_mismatches"] == 0, first.first_mismatch
    assert_recovered(report, second, len(messages))


@pytest.mark.parametrize("seed", SEEDS)
def test_leiserson_stream(seed):
    from fattree.hdl.leiserson_stream import LeisersonStreamTree
    from fattree.sim.checks.leiserson_stream import CHECKS, LeisersonStreamCheck
    from fattree.sim.models.leiserson_schedule import (
        layout_capacities,
        random_messages,
        schedule_theorem1,
    )
    from fattree.sim.models.leiserson_stream import LeisersonStreamModel

    n = 8
    dut = LeisersonStreamTree(n, w=4, seed=seed)
    layout = dut.layout
    rng = random.Random(seed)

    def check(ctx, tick, scoreboard):
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

        return LeisersonStreamCheck(
            LeisersonStreamModel(layout, dut.data_bits),
            scoreboard,
            read,
            drive,
            tick,
            rng=rng,
            stall=0.3,
            header_bits=dut.header_bits,
        )

    def idle(ctx):
        ctx.set(dut.cycle_valid, 0)
        for i in range(n):
            ctx.set(dut.tx[i].valid, 0)
            ctx.set(dut.rx[i].ready, 0)

    def schedule(messages):
        return schedule_theorem1(n, messages, layout_capacities(layout))

    first, second = Scoreboard(CHECKS), Scoreboard(CHECKS)
    messages = random_messages(n, 16, rng)
    old = random_messages(n, 24, rng)

    async def before(ctx, tick):
        await check(ctx, tick, first).deliver(old, schedule(old), "before")

    async def after(ctx, tick):
        return await check(ctx, tick, second).deliver(messages, schedule(messages), "after")

    report = reset_in_traffic(dut, before, after, idle, seed=seed, earliest=5, latest=80)
    assert first.failures["cycle_mismatches"] == 0, first.first_mismatch
    assert_recovered(report, second, len(messages))
    assert report["after"] == len(messages)


# -- the level-wise scheduler ------------------------------------------------------------------


def scheduler_traffic(dut, levels, rng, scoreboard, commands, expected, tick, ctx):
    """Drive ``commands`` (valid and ready at random) and check each result in order."""
    from fattree.sim.checks.scheduler import ResultCheck
    from fattree.spec.topology import FatTree

    results = ResultCheck(FatTree(levels, dut.tree.w), expected, scoreboard)
    req, res = dut.requests, dut.results

    async def run():
        k = 0
        while scoreboard.checked < len(commands):
            valid = k < len(commands) and rng.random() < 0.8
            ready = rng.random() < 0.8
            ctx.set(req.valid, valid)
            if valid:
                op, src, dst, ports = commands[k]
                ctx.set(req.payload.op, op)
                ctx.set(req.payload.src, src)
                ctx.set(req.payload.dst, dst)
                for i, p in enumerate(ports):
                    ctx.set(req.payload.ports[i], p)
            ctx.set(res.ready, ready)
            if valid and ctx.get(req.ready):
                k += 1
            if ready and ctx.get(res.valid):
                results.check(
                    (
                        ctx.get(res.payload.op),
                        ctx.get(res.payload.src),
                        ctx.get(res.payload.dst),
                        ctx.get(res.payload.granted),
                        tuple(ctx.get(res.payload.ports[i]) for i in range(levels - 1)),
                    )
                )
            await tick()

    return run()


# The scheduler's link memories are block RAM, which a reset leaves as they were: the reset
# runs the CLEAR sequence (hdl/scheduler/component.py), so links granted before it are free
# after it, with or without a CLEAR command (before that fix 20-32 of 60 results were wrong).
@pytest.mark.parametrize("seed, clear", [(s, c) for c in (True, False) for s in (1, 2, 3)])
def test_scheduler(seed, clear):
    from fattree.hdl.scheduler import LevelWiseScheduler
    from fattree.sim.checks.scheduler import CHECKS
    from fattree.sim.models.scheduler_commands import CommandStream

    levels, w = 3, 2
    dut = LevelWiseScheduler(levels, w, memory="portable")
    rng = random.Random(seed)

    def commands(count, *, clear_first=False):
        stream = CommandStream(dut.tree)
        if clear_first:
            stream.clear()
        stream.random(rng, count, releases=0.2)
        return stream.commands, stream.expected

    first = Scoreboard(CHECKS, unit="results")
    second = Scoreboard(CHECKS, unit="results")
    new, expected = commands(60, clear_first=clear)

    async def before(ctx, tick):
        old, old_expected = commands(200)
        await scheduler_traffic(dut, levels, rng, first, old, old_expected, tick, ctx)

    async def after(ctx, tick):
        await scheduler_traffic(dut, levels, rng, second, new, expected, tick, ctx)

    def idle(ctx):
        ctx.set(dut.requests.valid, 0)
        ctx.set(dut.results.ready, 0)

    report = reset_in_traffic(dut, before, after, idle, seed=seed, earliest=20, latest=150)
    assert first.mismatches == 0, first.first_mismatch
    assert report["memories"], "the link memories are where the state is"
    assert_recovered(report, second, len(new))


# -- RN1: one router, the bidelta network, the unit tree ---------------------------------------


def rn1_reset(dut, model_of, layout, seed, *, count=3, latest=80):
    from fattree.sim.checks.rn1 import CHECKS, Knobs, RN1Check, transmissions

    n = layout.channels if layout is not None else 8
    rng = random.Random(seed)

    def check(ctx, tick, scoreboard):
        def read():
            return (
                [ctx.get(dut.o[k].fwd.as_value()) for k in range(n)],
                [ctx.get(dut.i[k].bk.as_value()) for k in range(n)],
            )

        def drive(i_fwd, o_bk):
            for k in range(n):
                ctx.set(dut.i[k].fwd.as_value(), i_fwd[k])
                ctx.set(dut.o[k].bk.as_value(), o_bk[k])

        return RN1Check(
            model_of(), scoreboard, read, drive, tick, rng=rng, knobs=Knobs(), layout=layout
        )

    def idle(ctx):
        for k in range(n):
            ctx.set(dut.i[k].fwd.as_value(), 0)
            ctx.set(dut.o[k].bk.as_value(), 0)

    first, second = Scoreboard(CHECKS), Scoreboard(CHECKS)
    phases = [(p, transmissions(p, count, rng, layout)) for p in ("random", "hotspot")]

    async def before(ctx, tick):
        old = transmissions("hotspot", count + 2, rng, layout)
        await check(ctx, tick, first).phase("before", old)

    async def after(ctx, tick):
        again = check(ctx, tick, second)
        for name, queues in phases:
            await again.phase(name, queues)

    report = reset_in_traffic(dut, before, after, idle, seed=seed, earliest=5, latest=latest)
    assert first.failures["cycle_mismatches"] == 0, first.first_mismatch
    assert_recovered(report, second, sum(len(q) for _, queues in phases for q in queues))


@pytest.mark.parametrize(
    "seed, mode", [(1, "primary"), (2, "alternate"), pytest.param(3, "primary", marks=SLOW)]
)
def test_rn1(seed, mode):
    from fattree.hdl.rn1.router import RN1Router
    from fattree.sim.models.rn1 import RN1Model

    rn1_reset(RN1Router(mode, seed), lambda: RN1Model(mode, seed), None, seed)


# Elaborating the 16-endpoint network takes ~11 s: one seed by default.
@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=SLOW), pytest.param(3, marks=SLOW)])
def test_rn1_bidelta(seed):
    from fattree.hdl.rn1.bidelta import RN1Bidelta
    from fattree.sim.checks.rn1 import bidelta_layout
    from fattree.sim.models.rn1 import RN1BideltaModel

    layout = bidelta_layout(RN1BideltaModel(16, seed).net)
    rn1_reset(RN1Bidelta(16, seed), lambda: RN1BideltaModel(16, seed), layout, seed, count=1)


@pytest.mark.slow  # 64 subtrees of RN1 routers: ~4 minutes
@pytest.mark.parametrize("seed", [1, 2])
def test_rn1_unit_tree(seed):
    from fattree.hdl.rn1.unit_tree import RN1UnitTree
    from fattree.sim.checks.rn1 import unit_tree_layout
    from fattree.sim.models.rn1 import RN1UnitTreeModel

    layout = unit_tree_layout(RN1UnitTreeModel(2, seed).tree)
    rn1_reset(RN1UnitTree(2, seed), lambda: RN1UnitTreeModel(2, seed), layout, seed, count=1)


# -- the harness itself ------------------------------------------------------------------------


def test_a_register_left_out_of_the_reset_is_found():
    # The register check is not vacuous: a reset_less register that traffic changed is
    # reported after the reset, and so is the recovery failure it causes.
    from amaranth import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    class Counter(wiring.Component):
        def __init__(self):
            super().__init__({"tick": In(1), "count": Out(4)})

        def elaborate(self, platform):
            m = Module()
            kept = Signal(4, reset_less=True)
            m.d.sync += kept.eq(kept + self.tick)
            m.d.comb += self.count.eq(kept)
            return m

    dut = Counter()
    seen = []

    async def before(ctx, tick):
        while True:
            ctx.set(dut.tick, 1)
            await tick()

    async def after(ctx, tick):
        seen.append(ctx.get(dut.count))

    def idle(ctx):
        ctx.set(dut.tick, 0)

    report = reset_in_traffic(dut, before, after, idle, seed=1, earliest=5, latest=9)
    assert report["interrupted"] and report["busy_before"] == ["dut.kept"]
    assert report["stale"] == [] and report["kept"] == ["dut.kept"]
    # It still counts from before the reset: what the fresh-model check of a design catches.
    assert seen == [report["at"]]
