"""The on-line Leiserson tree's board self-test (fattree.boards.leiserson_online_selftest) in
amaranth.sim: replayed runs deliver every message once, checked, with no error; a fault and a
network other than the model's are caught."""

import json

import pytest
from amaranth import Module
from amaranth.lib import wiring

from fattree.boards import get_selftest
from fattree.boards.leiserson_online_selftest import (
    LeisersonOnlineHarness,
    online_selftest,
    plan_run,
)
from fattree.boards.selftest import SelfTestCore
from fattree.hdl.leiserson_online import LeisersonOnline
from fattree.scripts.main import main
from fattree.sim.models.leiserson_online import run_online
from fattree.sim.testbench import simulate

COUNTERS = ("cycles", "checked", "errors", "runs", "error", "ok")
POINT = {"leaves": 8, "w": 0, "seed": 0, "data_bits": 14, "queue": 4}


def run_core(core, cycles):
    got = {}

    async def bench(ctx):
        await ctx.tick().repeat(cycles)
        got.update({name: ctx.get(getattr(core, name)) for name in COUNTERS})

    simulate(core, bench)
    return got


@pytest.mark.parametrize("pattern", ["random", pytest.param("hot-spot", marks=pytest.mark.slow)])
def test_replayed_runs_deliver_every_message(pattern):
    core = online_selftest(POINT, seed=2, blink_log2=4, pattern=pattern)
    harness = core.harness
    period = harness.run.cycles + 2  # the priming cycles and the run's
    got = run_core(core, 2 * period + 2)
    assert got["runs"] == 2 and got["errors"] == 0 and got["ok"] == 1
    assert got["checked"] == 2 * harness.run.messages > 0
    assert harness.run.lost > 0  # the run exercises losses and resends


def test_plan_is_the_experiments_run():
    # Messages offered from cycle 0 and receivers ready: the model's delivery cycles for the
    # run are run_online's for the same set (each leaf's queue holds its three in time).
    run = plan_run(8, 0, 0, 14, 4, traffic_seed=3)
    messages = [(src, dst) for src, table in enumerate(run.tables) for dst, _ in table]
    by_leaf = sorted(messages, key=lambda m: m[0])
    d, _ = run_online(run.layout, by_leaf)
    assert run.delivery_cycles == d
    assert sum(bin(mask).count("1") for _, mask, _ in run.deliveries) == run.messages == 24


class _Late(wiring.Component):
    """The design with leaf 3's receive stream one cycle late (registered)."""

    def __init__(self, inner):
        self.inner = inner
        super().__init__(inner.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self.inner
        m.d.comb += [self.cycle_start.eq(inner.cycle_start), self.error.eq(inner.error)]
        for i in range(inner.leaves):
            m.d.comb += [
                inner.tx[i].valid.eq(self.tx[i].valid),
                inner.tx[i].payload.eq(self.tx[i].payload),
                self.tx[i].ready.eq(inner.tx[i].ready),
                inner.rx[i].ready.eq(self.rx[i].ready),
            ]
            domain = m.d.sync if i == 3 else m.d.comb
            domain += [
                self.rx[i].valid.eq(inner.rx[i].valid),
                self.rx[i].payload.eq(inner.rx[i].payload),
            ]
        return m


def test_a_network_other_than_the_models_is_caught():
    harness = LeisersonOnlineHarness(
        8, data_bits=14, network=lambda n, w, s, d, q: _Late(LeisersonOnline(n, data_bits=d))
    )
    core = SelfTestCore(harness, blink_log2=4)
    got = run_core(core, harness.run.cycles + 4)
    assert got["errors"] > 0 and got["error"] == 1


def test_payload_too_small_is_one_line():
    with pytest.raises(ValueError, match=r"needs data_bits >= 10 .* for 16 leaves, not 8"):
        LeisersonOnlineHarness(16, data_bits=8)


def test_board_points():
    selftest = get_selftest("leiserson-online")
    assert selftest.defaults_for("icebreaker") == {"leaves": 8, "data_bits": 14}
    assert selftest.defaults_for("ulx3s-85f") == {"leaves": 16, "data_bits": 16}


# The command line's --simulate runs take ~25 s each on a loaded machine.
@pytest.mark.slow
@pytest.mark.parametrize("fault", [False, True])
def test_simulated_board_run(capsys, fault):
    args = ["build", "leiserson-online", "--board", "icebreaker", "--simulate", "3600", "--json"]
    code = main(args + (["--inject-fault"] if fault else []))
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["checked"] > 0 and data["verdict"] == "PASS"
    assert (data["errors"] > 0) if fault else (data["errors"] == 0)
    assert data["selftest"]["messages_per_run"] == 24
