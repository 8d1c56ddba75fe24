"""The Leiserson tree's board self-test (fattree.boards.leiserson_selftest) in amaranth.sim:
replayed runs deliver every message of the schedule, checked, with no error; a fault and
broken trees are caught."""

import json

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring

from fattree.boards import get_selftest
from fattree.boards.leiserson_selftest import LeisersonTreeHarness, leiserson_selftest, plan_run
from fattree.boards.selftest import SelfTestCore
from fattree.hdl.leiserson_tree import LeisersonFatTree
from fattree.scripts.main import main
from fattree.sim.testbench import simulate

COUNTERS = ("cycles", "checked", "errors", "runs", "error", "ok")


def run_core(core, cycles):
    got = {}

    async def bench(ctx):
        await ctx.tick().repeat(cycles)
        got.update({name: ctx.get(getattr(core, name)) for name in COUNTERS})

    simulate(core, bench)
    return got


@pytest.mark.parametrize(
    "leaves, w, pattern, lead",
    [(8, 0, "random", 0), (8, 4, "random", 0), (8, 0, "bit-reversal", 0), (8, 4, "random", 2)],
)
def test_replayed_runs_deliver_every_message(leaves, w, pattern, lead):
    core = leiserson_selftest(
        {"leaves": leaves, "w": w, "seed": 0, "start_lead": lead},
        seed=2,
        blink_log2=4,
        pattern=pattern,
    )
    harness = core.harness
    period = harness.cycles + 1  # a priming cycle and the schedule's cycles
    got = run_core(core, 2 * period + 2)
    assert got["runs"] == 2 and got["errors"] == 0 and got["ok"] == 1
    assert got["checked"] == 2 * len(harness.plan.messages) > 0


def test_plan_matches_messages():
    plan = plan_run(8, 0, 0, traffic_seed=3)
    # Every message's M bit appears once in the receive rows: as many rising edges as messages
    # (the tree's receive wires idle between messages).
    rises = 0
    for leaf in range(8):
        wave = [row[leaf] & 1 for row in plan.expect]
        rises += sum(1 for a, b in zip([0, *wave], wave, strict=False) if b and not a)
    assert rises >= plan.delivery_cycles > 0
    assert sum(plan.start) == plan.delivery_cycles
    assert len(plan.messages) == 24  # three per leaf


def test_plan_with_start_early():
    # The plan for a tree with start_lead = 2 is the plain plan behind two quiet rows, with
    # `start` where it was: two rows before the delivery cycle it begins.
    plain, early = (plan_run(8, 4, 0, traffic_seed=3, start_lead=d) for d in (0, 2))
    quiet = [(0,) * 8] * 2
    assert list(early.drive) == quiet + list(plain.drive)
    assert list(early.expect) == quiet + list(plain.expect)
    assert list(early.start) == list(plain.start) + [0, 0]


def test_a_late_start_is_caught():
    # A tree with start_lead = 2 under the plan for start_lead = 0: every `start` two cycles
    # late, and the replay must see it.
    harness = LeisersonTreeHarness(
        8, tree=lambda n, w, s: LeisersonFatTree(n, w=w or None, seed=s, start_lead=2)
    )
    core = SelfTestCore(harness, blink_log2=4)
    got = run_core(core, harness.cycles + 3)
    assert got["errors"] > 0 and got["error"] == 1


class _Broken(wiring.Component):
    def __init__(self, how, leaves, w, seed):
        self.inner = LeisersonFatTree(leaves, w=w or None, seed=seed)
        self.how = how
        super().__init__(self.inner.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self.inner
        n = len(self.send)
        m.d.comb += [inner.start.eq(self.start), inner.root_i.eq(self.root_i)]
        m.d.comb += self.root_o.eq(inner.root_o)
        for i in range(n):
            m.d.comb += inner.send[i].eq(self.send[i])
            src = {0: 1, 1: 0}.get(i, i) if self.how == "swap" else i
            m.d.comb += self.recv[i].eq(inner.recv[src])
        if self.how == "late":
            late = Signal.like(inner.recv[3])
            m.d.sync += late.eq(inner.recv[3])
            m.d.comb += self.recv[3].eq(late)
        return m


@pytest.mark.parametrize("how", ["swap", "late"])
def test_checker_catches_broken_trees(how):
    harness = LeisersonTreeHarness(8, tree=lambda *a: _Broken(how, *a))
    core = SelfTestCore(harness, blink_log2=4)
    got = run_core(core, harness.cycles + 3)
    assert got["errors"] > 0 and got["error"] == 1


# The command line's --simulate runs take ~25 s each on a loaded machine; start_lead = 2's
# harness runs above in the default set, its command-line runs with --run-slow.
@pytest.mark.parametrize("lead", [0, pytest.param(2, marks=pytest.mark.slow)])
def test_injected_fault_is_counted(capsys, lead):
    args = ["build", "leiserson-tree", "-p", "leaves=8", "-p", f"start_lead={lead}"]
    code = main([*args, "--simulate", "3600", "--json", "--inject-fault"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["errors"] > 0 and data["checked"] > 0 and data["verdict"] == "PASS"
    assert data["selftest"]["messages_per_run"] == 24
    assert data["params"]["start_lead"] == lead


@pytest.mark.slow
def test_simulated_board_run_at_start_lead_2(capsys):
    args = ["build", "leiserson-tree", "-p", "leaves=8", "-p", "start_lead=2"]
    code = main([*args, "--simulate", "3600", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["errors"] == 0 and data["checked"] >= 2 * 24 and data["verdict"] == "PASS"
    assert data["selftest"]["run_cycles"] == len(plan_run(8, start_lead=2).start) + 1


#: The Leiserson tree's ULX3S-85F point: the largest measured to fit and close timing at the
#: board clock (docs/boards.md); w = n as the design's default gives.
ULX3S_POINT = {"leaves": 32}


def test_board_points():
    selftest = get_selftest("leiserson-tree")
    assert selftest.defaults_for("icebreaker") == {"leaves": 8}
    assert selftest.defaults_for("ulx3s-85f") == ULX3S_POINT
    assert selftest.defaults_for("versa-ecp5", "ecp5") == ULX3S_POINT


def _report_only(top, board_, out, name, **extra):
    """build_bitstream's stand-in: no tools, a report (the core is left unelaborated)."""
    return {
        "bitstream": str(out / f"{name}.bit"),
        "bytes": 1,
        "seconds": 0.1,
        "luts": 5,
        "ffs": 6,
        "lut_capacity": 10,
        "cells": {},
        "fmax_mhz": 40.0,
        "target_mhz": 25.0,
        "timing_pass": True,
        "nextpnr_log": "log",
    }


@pytest.mark.parametrize("more, leaves", [([], ULX3S_POINT["leaves"]), (["-p", "leaves=16"], 16)])
def test_ulx3s_point_and_the_old_one(capsys, tmp_path, monkeypatch, built_but_unused, more, leaves):
    # `fattree build leiserson-tree --board ulx3s-85f` builds the board's point (w = n, three
    # messages a leaf); the old, smaller point (16 leaves) is one -p away.
    from fattree.scripts import build

    monkeypatch.setattr(build, "build_bitstream", _report_only)
    argv = ["build", "leiserson-tree", "--board", "ulx3s-85f", "--build-root", str(tmp_path), *more]
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["params"]["leaves"] == leaves and data["params"]["w"] == 0
    assert data["selftest"]["messages_per_run"] == 3 * leaves
    assert f"leaves{leaves}-" in data["build_dir"]
