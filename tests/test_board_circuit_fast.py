"""The fast circuit tree's board self-test (fattree.boards.circuit_fast_selftest, on the
circuit tree's harness): in amaranth.sim the replayed runs agree with the reference model
(messages, rejects, latency), an injected fault and broken networks are caught, a payload
left undefined while ``rx.valid`` is low is not read, and ``fattree build --simulate``
reports PASS."""

import json

import pytest
from amaranth import Module
from amaranth.lib import wiring

from fattree.boards import get_selftest
from fattree.boards.circuit_fast_selftest import (
    CircuitFastTreeHarness,
    circuit_tree_fast_selftest,
    expected_fast_run,
)
from fattree.boards.circuit_selftest import PRIMING, SourcesTwin
from fattree.boards.selftest import SelfTestCore, simulate_status
from fattree.hdl.circuit_fast.tree import CircuitFastTree
from fattree.scripts.main import main
from fattree.sim.models.circuit_fast import CircuitFastTreeModel
from fattree.sim.testbench import simulate

COUNTERS = ("cycles", "checked", "rejects", "maxlat", "errors", "runs", "error", "ok")
SMALL = {"leaves": 4, "width": 1, "length": 8, "seed": 1, "window": 2}


def run_core(core, cycles):
    """The core's counters after ``cycles`` clock cycles from reset."""
    got = {}

    async def bench(ctx):
        await ctx.tick().repeat(cycles)
        got.update({name: ctx.get(getattr(core, name)) for name in COUNTERS})

    simulate(core, bench)
    return got


def small_core(*, fault_log2=None, network=None, **options):
    options.setdefault("inject_cycles", 150)
    harness = CircuitFastTreeHarness(**SMALL, network=network, **options)
    return SelfTestCore(harness, blink_log2=4, fault_log2=fault_log2)


@pytest.mark.parametrize(
    "pattern, window, length",
    [("random", 1, 8), ("random", 2, 8), ("random", 4, 2), ("transpose", 2, 8), ("hotspot", 2, 8)],
)
def test_replayed_runs_agree_with_the_model(pattern, window, length):
    # Three whole runs: every counter is three times what the reference model says one run
    # does, and nothing is flagged.
    params = dict(SMALL, window=window, length=length, width=8 // length)
    core = circuit_tree_fast_selftest(
        params, seed=3, blink_log2=4, pattern=pattern, inject_cycles=120
    )
    trace = core.harness.trace
    assert trace == expected_fast_run(
        4, 8 // length, length, 1, window, traffic_seed=3, pattern=pattern, inject_cycles=120
    )
    assert trace.messages > 0 and trace.deliveries
    period = core.harness.run_period
    assert period == trace.cycles + PRIMING
    got = run_core(core, 3 * period + 2)
    assert got["errors"] == 0 and got["error"] == 0 and got["ok"] == 1
    assert got["runs"] == 3 and got["cycles"] == 3 * period + 2
    assert got["checked"] == 3 * trace.messages
    assert got["rejects"] == 3 * trace.rejects
    assert got["maxlat"] == trace.max_latency > 0
    if pattern == "hotspot":
        assert trace.rejects > 0  # everyone to node 0: heads meet there and are rejected


def _model_run(leaves, width, length, window, inject_cycles):
    """The model run by hand: per node, the cycles its messages were taken and its tx_done
    pulses came, and the most messages any node had in flight."""
    model = CircuitFastTreeModel(leaves, width, length, 1, window)
    twin = SourcesTwin(leaves, width, length, inject_cycles=inject_cycles)
    takes, dones = [[] for _ in range(leaves)], [[] for _ in range(leaves)]
    most = 0
    for cycle in range(inject_cycles + 400):
        valid, dest, data = twin.outputs()
        out = model.step(valid, dest, data)
        for n, taken in enumerate(twin.clock(out.tx_ready)):
            takes[n] += [cycle] * taken
            dones[n] += [cycle] * out.tx_done[n]
            most = max(most, len(takes[n]) - len(dones[n]))
    assert [len(t) for t in takes] == [len(d) for d in dones]  # every message acknowledged
    return takes, dones, most


def test_model_run_keeps_a_window_in_flight():
    # The sources offer the next message while earlier ones are in flight, up to the window,
    # and the model delivers every message exactly once.
    _, _, most = _model_run(8, 2, 8, 4, 100)
    assert most == 4
    trace = expected_fast_run(8, 2, 8, 1, 4, inject_cycles=100)
    assert sum(mask.bit_count() for _, mask, _ in trace.deliveries) == trace.messages
    # With one message in flight, the latency is each message's time from being taken to its
    # tx_done (at least the zero-load F + 2 cycles, F = 4 lg n - 1).
    takes, dones, most = _model_run(8, 2, 8, 1, 100)
    latencies = [d - t for n in range(8) for t, d in zip(takes[n], dones[n], strict=True)]
    assert most == 1 and min(latencies) == 4 * 3 - 1 + 2
    assert expected_fast_run(8, 2, 8, 1, 1, inject_cycles=100).max_latency == max(latencies)


def test_injected_fault_is_counted():
    core = small_core(fault_log2=6)
    period = core.harness.run_period
    cycles = 2 * period + 2
    got = run_core(core, cycles)
    # One fault every 64 cycles, each one cycle of disagreement with the trace, counted two
    # cycles later; the priming cycles and the last cycle of a run are not compared.
    compared = [c for c in range(63, cycles - 2, 64) if PRIMING <= c % period < period - 1]
    assert got["errors"] == len(compared) > 0 and got["error"] == 1 and got["ok"] == 0
    assert got["checked"] == 2 * core.harness.trace.messages  # the network itself is fine


class _Broken(wiring.Component):
    """The real fast tree with one thing changed between it and the checker."""

    def __init__(self, how, leaves, width, length, seed, window):
        if how == "other-window":
            window //= 2
        self.net = CircuitFastTree(leaves, width, length, seed, window)
        self.how = how
        super().__init__(self.net.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.net = net = self.net
        n = len(net.tx)
        for p in range(n):
            wiring.connect(m, wiring.flipped(self.tx[p]), net.tx[p])
            m.d.comb += [self.tx_done[p].eq(net.tx_done[p]), self.tx_reject[p].eq(net.tx_reject[p])]
        for d in range(n):
            src = {0: 1, 1: 0}.get(d, d) if self.how == "swap-rx" else d
            rx, out = net.rx[src], self.rx[d]
            m.d.comb += [out.valid.eq(rx.valid), out.payload.eq(rx.payload), rx.ready.eq(out.ready)]
            if self.how == "flip-data" and d == 2:
                m.d.comb += out.payload.data.eq(rx.payload.data ^ (1 << 7))
            if self.how == "drop" and d == 3:
                m.d.comb += out.valid.eq(0)
            if self.how == "noise-when-idle":
                # Not a fault: rx.payload is undefined while rx.valid is low.
                m.d.comb += out.payload.data.eq(rx.payload.data ^ ~rx.valid.replicate(8))
        return m


@pytest.mark.parametrize("how", ["other-window", "swap-rx", "flip-data", "drop"])
def test_checker_catches_broken_networks(how):
    # A tree with a smaller window delivers every message intact, only in other cycles: the
    # replay of the model's trace is what catches it.
    def network(*args):
        return _Broken(how, *args)

    core = small_core(network=network)
    got = run_core(core, core.harness.run_period + 2)
    assert got["errors"] > 0 and got["error"] == 1


def test_payload_is_read_only_when_valid():
    core = small_core(network=lambda *args: _Broken("noise-when-idle", *args))
    got = run_core(core, core.harness.run_period + 2)
    assert got["errors"] == 0 and got["checked"] == core.harness.trace.messages


def test_harness_bad_parameters():
    with pytest.raises(ValueError, match="^window must be a power of two"):
        CircuitFastTreeHarness(**dict(SMALL, window=3))
    with pytest.raises(ValueError, match="^pattern must be one of random, transpose, "):
        CircuitFastTreeHarness(**SMALL, pattern="tornado")
    with pytest.raises(
        ValueError,
        match=r"^the circuit-tree self-test needs width \* length >= 10 payload bits "
        r"\(source, destination, sequence number, check code\) for 16 leaves, not 8$",
    ):
        CircuitFastTreeHarness(16, 1, 8)
    with pytest.raises(ValueError, match="^the circuit-tree self-test has no option 'x'"):
        get_selftest("circuit-tree").build(SMALL, seed=1, blink_log2=3, fault_log2=None, x=1)


def test_simulate_status_decodes_the_core():
    core = small_core()
    line = simulate_status(core, 3600)["lines"][0]
    assert line["cycles"] == 2048 and line["errors"] == 0 and line["checked"] > 0
    assert line["maxlat"] == core.harness.trace.max_latency


SIM_ARGV = ["build", "circuit-tree", "-p", "leaves=4", "-p", "width=1", "-p", "length=8"]
SIM_ARGV += ["-p", "window=2", "--inject-cycles", "150", "--simulate", "3600", "--json"]


@pytest.mark.parametrize("fault", [False, True])
def test_build_simulate(capsys, fault):
    code = main(SIM_ARGV + (["--inject-fault"] if fault else []))
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["lines"] == 1 and data["checked"] > 0 and data["verdict"] == "PASS"
    assert (data["errors"] > 0) == fault
    params = dict(data["params"])
    assert params.pop("faults", "") == ""  # the fault-free tree
    assert params == {"leaves": 4, "width": 1, "length": 8, "seed": 1, "window": 2}
    assert data["selftest"]["inject_cycles"] == 150


def test_a_fault_list_is_refused():
    # The board replays the fault-free model's trace: a fault list is refused, not ignored.
    with pytest.raises(
        ValueError,
        match=r"^the circuit-tree self-test runs the fault-free tree; faults \(--param "
        r"faults\) are for fattree sim and verilog \(--inject-fault corrupts a checked bit "
        r"instead\)$",
    ):
        circuit_tree_fast_selftest(dict(SMALL, faults="eject:1"), blink_log2=4)


def test_board_points():
    selftest = get_selftest("circuit-tree")
    ulx3s = {"leaves": 16, "width": 8, "length": 2, "window": 8}
    assert selftest.defaults_for("icebreaker") == {
        "leaves": 8,
        "width": 2,
        "length": 8,
        "window": 2,
    }
    assert selftest.defaults_for("ulx3s-85f") == ulx3s
    assert selftest.defaults_for("ulx3s-12f", "ecp5") == ulx3s


@pytest.mark.slow
@pytest.mark.parametrize("board", ["icebreaker", "ulx3s-85f"])
def test_build_simulate_board_point(capsys, board):
    # The board's own point, one status line, with and without the fault.
    for fault in (False, True):
        argv = ["build", "circuit-tree", "--board", board, "--simulate", "3600", "--json"]
        code = main(argv + (["--inject-fault"] if fault else []))
        out, err = capsys.readouterr()
        assert code == 0, err
        data = json.loads(out)
        assert data["lines"] >= 1 and data["checked"] > 0 and (data["errors"] > 0) == fault
