"""The scheduler's board self-test (fattree.boards.scheduler_selftest) in amaranth.sim: its
runs agree with the reference model result for result, and a fault, wrong ports, a lost
result and a hung scheduler are caught."""

import json

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring

from fattree.boards.scheduler_selftest import (
    PRIMING,
    SchedulerHarness,
    commands,
    expected_results,
    scheduler_selftest,
)
from fattree.boards.selftest import SelfTestCore
from fattree.hdl.scheduler import LevelWiseScheduler, Op
from fattree.scripts.main import main
from fattree.sim.models.scheduler import SchedulerModel
from fattree.sim.testbench import simulate
from fattree.spec.topology import FatTree

COUNTERS = ("cycles", "checked", "rejects", "maxlat", "errors", "runs", "error", "ok")


def run_until(core, runs, limit=20000):
    """Counters once ``runs`` runs are over (and the next one's priming cycles have let the
    core's registered sums settle)."""
    got = {}

    async def bench(ctx):
        for _ in range(limit):
            if ctx.get(core.runs) == runs:
                break
            await ctx.tick()
        await ctx.tick().repeat(PRIMING)
        got.update({name: ctx.get(getattr(core, name)) for name in COUNTERS})

    simulate(core, bench)
    return got


@pytest.mark.parametrize("levels, w, seed", [(3, 4, 1), (2, 8, 7), (3, 2, 3)])
def test_runs_agree_with_the_model(levels, w, seed):
    core = scheduler_selftest(
        {"levels": levels, "w": w, "memory": "auto"}, seed=seed, blink_log2=4, requests=48
    )
    harness = core.harness
    got = run_until(core, 3)
    assert got["errors"] == 0 and got["error"] == 0 and got["ok"] == 1
    assert got["checked"] == 3 * 49  # the CLEAR and 48 SCHEDULEs, every result compared
    refused = harness.requests - harness.granted
    assert got["rejects"] == 3 * refused and 0 < refused < 48  # some, not all, refused
    # Requests one per clock and results always taken: the pipeline's own latency.
    assert got["maxlat"] == harness.dut.latency


def test_commands_and_expectation():
    cmds = commands(3, 4, 20, seed=5)
    assert cmds[0] == (int(Op.CLEAR), 0, 0) and len(cmds) == 21
    assert all(op == Op.SCHEDULE and 0 <= s < 64 and 0 <= d < 64 for op, s, d in cmds[1:])
    assert len({(s, d) for _, s, d in cmds[1:]}) > 15  # random, not a constant
    model = SchedulerModel(FatTree(3, 4))
    words = expected_results(3, 4, 20, seed=5)
    granted = [model.request(s, d).granted for _, s, d in cmds[1:]]
    assert [(word >> 14) & 1 for word in words[1:]] == [int(g) for g in granted]


class _Tampered(wiring.Component):
    """The real scheduler with its results changed on the way to the checker."""

    def __init__(self, how, levels, w, *, memory):
        self.inner = LevelWiseScheduler(levels, w, memory=memory)
        self.how = how
        self.latency = self.inner.latency
        super().__init__(self.inner.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self.inner
        wiring.connect(m, wiring.flipped(self.requests), inner.requests)
        res, out = inner.results, self.results
        m.d.comb += [out.valid.eq(res.valid), out.payload.eq(res.payload), res.ready.eq(out.ready)]
        if self.how == "wrong-port":
            with m.If(res.payload.granted & (res.payload.src[0:2] == 3)):
                m.d.comb += out.payload.ports[0].eq(res.payload.ports[0] ^ 1)
        elif self.how == "lost-result":
            seen = Signal(8)  # drop the 10th result
            with m.If(res.valid & res.ready):
                m.d.sync += seen.eq(seen + 1)
            with m.If(seen == 9):
                m.d.comb += out.valid.eq(0)
        elif self.how == "hung":
            m.d.comb += out.valid.eq(0)
        return m


@pytest.mark.parametrize("how", ["wrong-port", "lost-result", "hung"])
def test_checker_catches_broken_schedulers(how):
    harness = SchedulerHarness(3, 4, requests=48, scheduler=lambda *a, **k: _Tampered(how, *a, **k))
    core = SelfTestCore(harness, blink_log2=4)
    got = run_until(core, 1)
    assert got["errors"] > 0 and got["error"] == 1 and got["ok"] == 0


def test_injected_fault_is_counted():
    core = scheduler_selftest(
        {"levels": 3, "w": 4, "memory": "auto"}, seed=1, blink_log2=4, fault_log2=4, requests=48
    )
    got = run_until(core, 2)
    assert got["errors"] > 0 and got["error"] == 1
    assert got["checked"] == 2 * 49  # the results themselves are fine


def test_build_simulate_scheduler(capsys):
    for fault in (False, True):
        argv = ["build", "scheduler", "--requests", "100", "--simulate", "3700", "--json"]
        code = main(argv + (["--inject-fault"] if fault else []))
        out, err = capsys.readouterr()
        assert code == 0, err
        data = json.loads(out)
        assert data["params"] == {"levels": 3, "w": 4, "m": "", "memory": "auto"}
        assert data["checked"] > 0 and (data["errors"] > 0) == fault
        assert data["selftest"]["commands_per_run"] == 101


@pytest.mark.parametrize("levels, m, w, seed", [(3, 4, 2, 1), (3, 2, 4, 5)])
def test_m_not_w_runs_agree_with_the_model(levels, m, w, seed):
    # FT(l, m, w): the LFSR words are levels * log2(m) bits per node, the replayed words the
    # model's on the general tree.
    core = scheduler_selftest(
        {"levels": levels, "w": w, "m": m, "memory": "auto"}, seed=seed, blink_log2=4, requests=48
    )
    harness = core.harness
    assert harness.dut.tree.m == m and harness.dut.tree.w == w
    cmds = commands(levels, w, 48, seed, m)
    assert max(max(src, dst) for _, src, dst in cmds) < m**levels
    assert len({src for _, src, _ in cmds}) >= min(m**levels, 48) // 2  # the node range is used
    got = run_until(core, 2)
    assert got["errors"] == 0 and got["error"] == 0 and got["ok"] == 1
    assert got["checked"] == 2 * 49
    assert got["rejects"] == 2 * (harness.requests - harness.granted)
    assert got["maxlat"] == harness.dut.latency


def test_build_simulate_scheduler_m_not_w(capsys):
    argv = ["build", "scheduler", "-p", "m=8", "-p", "w=2", "--requests", "100"]
    code = main(argv + ["--simulate", "3700", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["params"] == {"levels": 3, "w": 2, "m": 8, "memory": "auto"}
    assert data["checked"] > 0 and data["errors"] == 0
    assert data["selftest"]["commands_per_run"] == 101
