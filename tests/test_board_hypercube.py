"""The hypercube's board self-test (fattree.boards.hypercube_selftest) in amaranth.sim: the
replayed runs agree with the reference model (messages, referrals, longest time in network),
an injected fault, broken networks and a wrong expected trace are caught, and ``fattree build
hypercube --simulate`` decodes the UART status lines."""

import dataclasses
import json
import random

import pytest
from amaranth import Module
from amaranth.lib import wiring

from fattree.boards import get_selftest
from fattree.boards.hypercube_selftest import (
    PRIMING,
    HypercubeHarness,
    SourcesTwin,
    expected_run,
    hypercube_selftest,
    pack_payload,
    payload_fields,
)
from fattree.boards.selftest import SelfTestCore, simulate_status
from fattree.hdl.hypercube import HypercubeNetwork
from fattree.scripts.main import main
from fattree.sim.models.hypercube import HypercubeModel
from fattree.sim.testbench import simulate
from fattree.spec.traffic import bit_reversal

COUNTERS = ("cycles", "checked", "rejects", "maxlat", "errors", "runs", "error", "ok")
SMALL = {"dim": 2, "procs": 1, "buffers": 1, "data_bits": 16}


def run_core(core, cycles):
    """The core's counters after ``cycles`` clock cycles from reset."""
    got = {}

    async def bench(ctx):
        await ctx.tick().repeat(cycles)
        got.update({name: ctx.get(getattr(core, name)) for name in COUNTERS})

    simulate(core, bench)
    return got


def small_core(*, fault_log2=None, network=None, **options):
    harness = HypercubeHarness(**SMALL, network=network, **options)
    return SelfTestCore(harness, blink_log2=4, fault_log2=fault_log2)


@pytest.mark.parametrize(
    "params, pattern",
    [
        ({"dim": 2, "procs": 2, "buffers": 2, "data_bits": 16}, "random"),
        ({"dim": 3, "procs": 1, "buffers": 1, "data_bits": 16}, "random"),
        ({"dim": 2, "procs": 2, "buffers": 0, "data_bits": 16}, "transpose"),
        ({"dim": 2, "procs": 1, "buffers": 1, "data_bits": 16}, "hotspot"),
    ],
)
def test_replayed_runs_agree_with_the_model(params, pattern):
    # Two whole runs (priming and the model's run each): every counter is twice what the
    # reference model says one run does, and nothing is flagged.
    core = hypercube_selftest(params, seed=3, blink_log2=4, pattern=pattern, messages=6)
    harness = core.harness
    trace = harness.trace
    assert trace == expected_run(*params.values(), traffic_seed=3, pattern=pattern, messages=6)
    processors = (1 << params["dim"]) * params["procs"]
    senders = processors - 1 if pattern == "hotspot" else processors  # transpose: no fixed point
    if pattern == "transpose" and params["dim"] + 1 == 3:
        senders = processors - 2  # 3-bit transpose (rotate by 1) fixes 000 and 111
    assert trace.messages == 6 * senders
    assert sum(mask.bit_count() for _, mask, _ in trace.deliveries) == trace.messages
    period = harness.run_period
    assert period == trace.cycles + PRIMING
    # Two more cycles: the core's registered sums take them; they prime the third run.
    got = run_core(core, 2 * period + 2)
    assert got["errors"] == 0 and got["error"] == 0 and got["ok"] == 1
    assert got["runs"] == 2 and got["cycles"] == 2 * period + 2
    assert got["checked"] == 2 * trace.messages
    assert got["rejects"] == 2 * trace.rejects
    assert got["maxlat"] == trace.max_latency > 0
    if pattern == "hotspot":
        # Everyone to processor 0, one delivery a cycle: buffers fill and nodes refer.
        assert trace.rejects > 0 and trace.max_latency >= trace.messages // 2


def test_sources_are_a_function_of_the_seed_alone():
    # Each source's destinations do not depend on when its messages are taken.
    def destinations(ready):
        twin = SourcesTwin(2, 2, None, seed=5, messages=10)
        seen = [[] for _ in range(8)]
        for t in range(400):
            valid, dest, _ = twin.outputs(t)
            taken = twin.clock([ready(t, g) for g in range(8)])
            for g in range(8):
                if taken[g]:
                    assert valid[g]
                    seen[g].append(dest[g])
        assert twin.done()
        return seen

    rng = random.Random(1)
    always = destinations(lambda t, g: 1)
    assert destinations(lambda t, g: rng.random() < 0.3) == always
    assert all(len(d) == 10 for d in always)
    assert len({d for dests in always for d in dests}) == 8  # random, every processor hit
    other = SourcesTwin(2, 2, None, seed=6, messages=10)
    assert [other.destination(g) for g in range(8)] != [always[g][0] for g in range(8)]


def test_model_trace_is_the_models_deliveries():
    # The trace against a plain run of the model with the twin's messages: each delivery is
    # a message that was sent, to its destination, once.
    trace = expected_run(2, 2, 2, 16, traffic_seed=2, pattern="bit-reversal", messages=4)
    fields = dict(trace.fields)
    twin = SourcesTwin(2, 2, fields, seed=2, pattern="bit-reversal", messages=4)
    model = HypercubeModel(2, 2, 2, 16)
    sent = []
    for t in range(60):
        valid, dest, data = twin.outputs(t)
        out = model.step(valid, dest, data)
        sent += [(g, dest[g], data[g]) for g, r in enumerate(twin.clock(out.tx_ready)) if r]
    assert len(sent) == 4 * 4  # 000, 010, 101 and 111 map to themselves
    assert all(d == bit_reversal(g, 3) for g, d, _ in sent)
    assert sorted((d.src, d.dest, d.data) for d in model.delivered) == sorted(sent)
    assert trace.messages == len(sent)
    assert trace.max_latency == max(d.latency for d in model.delivered)
    # The stamp holds the longest time in network: no latency wraps around.
    assert fields["stamp"] == max(2, trace.max_latency.bit_length())
    xor = 0
    for _, _, data in sent:
        xor ^= data
    for _, _, x in trace.deliveries:
        xor ^= x
    assert xor == 0  # the trace's payloads are the ones sent
    fields = payload_fields(2, 2, 16, 4)
    # Payload layout: src, dest, seq, check, stamp, pad.
    word = pack_payload(fields, 5, 3, 2, 9)
    assert word & 7 == 5 and word >> 3 & 7 == 3 and word >> 6 & 7 == 2 and word >> 12 == 9


def test_injected_fault_is_counted():
    core = small_core(fault_log2=5)
    period = core.harness.run_period
    cycles = 2 * period + 2
    got = run_core(core, cycles)
    # One fault every 32 cycles, each one cycle of disagreement with the trace, counted two
    # cycles later; the priming cycles and the last cycle of a run are not compared.
    compared = [c for c in range(31, cycles - 2, 32) if PRIMING <= c % period < period - 1]
    assert got["errors"] == len(compared) > 0 and got["error"] == 1 and got["ok"] == 0
    assert got["checked"] == 2 * core.harness.trace.messages  # the network itself is fine


class _Broken(wiring.Component):
    """The real network with one thing changed between it and the checker."""

    def __init__(self, how, dim, procs, buffers, data_bits):
        if how == "fewer-buffers":
            buffers -= 1
        self.net = HypercubeNetwork(dim, procs, buffers, data_bits)
        self.how = how
        super().__init__(self.net.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.net = net = self.net
        n = len(net.tx)
        for g in range(n):
            wiring.connect(m, wiring.flipped(self.tx[g]), net.tx[g])
        for k in range(len(net.refer)):
            m.d.comb += self.refer[k].eq(net.refer[k])
        for d in range(n):
            src = {0: 1, 1: 0}.get(d, d) if self.how == "swap-rx" else d
            rx, out = net.rx[src], self.rx[d]
            m.d.comb += [out.valid.eq(rx.valid), out.payload.eq(rx.payload), rx.ready.eq(out.ready)]
            if self.how == "flip-data" and d == 2:
                m.d.comb += out.payload.data.eq(rx.payload.data ^ (1 << 7))
            if self.how == "drop" and d == 3:
                m.d.comb += out.valid.eq(0)
            if self.how == "hung":
                m.d.comb += out.valid.eq(0)
        return m


@pytest.mark.parametrize("how", ["fewer-buffers", "swap-rx", "flip-data", "drop", "hung"])
def test_checker_catches_broken_networks(how):
    # A network with one buffer slot fewer delivers every message intact, only in other
    # cycles: the replay of the model's trace is what catches it.
    def network(*args):
        return _Broken(how, *args)

    core = small_core(network=network)
    got = run_core(core, core.harness.run_period + 2)
    assert got["errors"] > 0 and got["error"] == 1 and got["ok"] == 0


def _wrong(trace, how):
    entries = list(trace.deliveries)
    cycle, mask, xor = entries[3]
    if how == "later":
        entries[3] = (cycle + 1, mask, xor)
    elif how == "other-processor":
        entries[3] = (cycle, mask ^ 0b11, xor)
    elif how == "other-payload":
        entries[3] = (cycle, mask, xor ^ 1)
    elif how == "one-message-more":
        return dataclasses.replace(trace, messages=trace.messages + 1)
    return dataclasses.replace(trace, deliveries=tuple(entries))


@pytest.mark.parametrize("how", ["later", "other-processor", "other-payload", "one-message-more"])
def test_a_wrong_expected_trace_is_caught(how):
    # The real network against a trace that is not the model's: the board must say so.
    harness = HypercubeHarness(**SMALL)
    right = run_core(SelfTestCore(HypercubeHarness(**SMALL), blink_log2=4), harness.run_period + 2)
    assert right["errors"] == 0
    harness.trace = _wrong(harness.trace, how)
    got = run_core(SelfTestCore(harness, blink_log2=4), harness.run_period + 2)
    assert got["errors"] > 0 and got["error"] == 1


def test_payload_fields():
    assert payload_fields(4, 2, 24, 4) == {
        "src": 5,
        "dest": 5,
        "seq": 5,
        "check": 5,
        "stamp": 4,
        "pad": 0,
    }
    assert payload_fields(1, 1, 64, 2)["pad"] == 28
    with pytest.raises(
        ValueError,
        match=r"^the hypercube self-test needs data_bits >= 16 \(source, destination, sequence "
        r"number, check code, a 4-bit time stamp\) for dim=4, procs=2, not 8$",
    ):
        payload_fields(4, 2, 8, 4)


def test_harness_bad_parameters():
    with pytest.raises(ValueError, match="^pattern must be one of random, transpose, "):
        HypercubeHarness(**SMALL, pattern="tornado")
    with pytest.raises(ValueError, match=r"^messages must be between 1 and 1024, not 0$"):
        HypercubeHarness(**SMALL, messages=0)
    with pytest.raises(ValueError, match=r"^dim must be between 1 and 6, not 7$"):
        HypercubeHarness(**dict(SMALL, dim=7))
    with pytest.raises(ValueError, match="^the hypercube self-test has no option 'requests'"):
        get_selftest("hypercube").build(SMALL, seed=1, blink_log2=3, fault_log2=None, requests=1)


def test_simulate_status_decodes_the_core():
    core = small_core()
    result = simulate_status(core, 3600)
    assert len(result["lines"]) == 1
    line = result["lines"][0]
    # The line is a snapshot taken when it starts, after 2**11 cycles: whole runs so far.
    period = core.harness.run_period
    runs, part = divmod(2048 - 2, period)  # the core's sums lag two cycles
    assert line["cycles"] == 2048 and line["errors"] == 0
    assert runs * core.harness.trace.messages <= line["checked"]
    assert line["checked"] <= (runs + 1) * core.harness.trace.messages
    assert line["maxlat"] == core.harness.trace.max_latency


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


SIM_ARGV = ["build", "hypercube", "-p", "dim=2", "-p", "procs=1", "-p", "buffers=1"]


@pytest.mark.parametrize("fault", [False, True])
def test_build_simulate(capsys, fault):
    argv = [*SIM_ARGV, "--simulate", "3600", "--json"] + (["--inject-fault"] if fault else [])
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    data = json.loads(out)
    assert data["lines"] == 1 and data["checked"] > 0 and data["verdict"] == "PASS"
    assert (data["errors"] > 0) == fault
    # The iCEBreaker's point, with the user's parameters on top.
    assert data["params"] == {"dim": 2, "procs": 1, "buffers": 1, "data_bits": 14}
    assert data["selftest"]["messages_per_run"] == 4 * 8


def test_build_bad_input_is_one_line(capsys):
    for argv, message in [
        (["-p", "data_bits=8"], "the hypercube self-test needs data_bits >= 10 (source, "),
        (["--pattern", "tornado"], "pattern must be one of random, transpose, bit-reversal, "),
        (["--requests", "5"], "the hypercube self-test has no option 'requests'; its options: "),
        (["-p", "data_bits=65"], "parameter data_bits must be 1..64, not 65"),
    ]:
        code, out, err = run_cli(capsys, *SIM_ARGV, *argv, "--simulate", "100")
        assert code == 2 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"fattree build: error: {message}"), lines
    # The point's own dim given again is refused as given twice, before its range is read.
    code, out, err = run_cli(capsys, *SIM_ARGV, "-p", "dim=7", "--simulate", "100")
    assert code == 2 and err.strip() == (
        "fattree build: error: --param dim given twice (dim=2, dim=7); give it once"
    )


def test_board_points():
    selftest = get_selftest("hypercube")
    # The largest cube that fits the UP5K (the 3-cube at two buffers does not) and the 4-cube
    # on the ECP5-85F (the 5-cube would need about 2.5 times its LUTs).
    assert selftest.defaults_for("icebreaker") == {
        "dim": 3,
        "procs": 1,
        "buffers": 1,
        "data_bits": 14,
    }
    assert selftest.defaults_for("ulx3s-85f")["dim"] == 4


@pytest.mark.slow
@pytest.mark.parametrize("board", ["icebreaker", "ulx3s-85f"])
def test_build_simulate_board_point(capsys, board):
    # The board's own point, long enough for two status lines, with and without the fault.
    for fault in (False, True):
        argv = ["build", "hypercube", "--board", board, "--simulate", "8000", "--json"]
        code, out, err = run_cli(capsys, *argv + (["--inject-fault"] if fault else []))
        assert code == 0, err
        data = json.loads(out)
        assert data["lines"] >= 2 and data["checked"] > 0 and (data["errors"] > 0) == fault
