"""The RN1 network's board self-test (fattree.boards.rn1_selftest) in amaranth.sim: the
replayed runs agree with the reference model (messages, retries, longest latency), an injected
fault, broken networks and a wrong expected trace are caught, and ``fattree build
rn1-bidelta-stream --simulate`` decodes the UART status lines."""

import dataclasses
import json
import random

import pytest
from amaranth import Module
from amaranth.lib import wiring

from fattree.boards import get_selftest
from fattree.boards.rn1_selftest import (
    CODE_INIT,
    PRIMING,
    RN1FatTreeHarness,
    RN1Harness,
    SourcesTwin,
    check_byte,
    expected_fat_tree_run,
    expected_run,
    header_word,
    message_fields,
    rn1_selftest,
)
from fattree.boards.selftest import SelfTestCore, simulate_status
from fattree.hdl.rn1.bidelta_stream import RN1BideltaStream
from fattree.hdl.rn1.fat_tree import RN1FatTreeStream
from fattree.scripts.main import main
from fattree.sim.models.rn1_endpoint import RN1BideltaStreamModel, RN1FatTreeStreamModel
from fattree.sim.testbench import simulate

COUNTERS = ("cycles", "checked", "rejects", "maxlat", "errors", "runs", "error", "ok")
SMALL = {"endpoints": 4, "seed": 1, "retry": "immediate", "max_bytes": 4}


def run_core(core, cycles):
    """The core's counters after ``cycles`` clock cycles from reset."""
    got = {}

    async def bench(ctx):
        await ctx.tick().repeat(cycles)
        got.update({name: ctx.get(getattr(core, name)) for name in COUNTERS})

    simulate(core, bench)
    return got


def small_core(*, fault_log2=None, network=None, **options):
    harness = RN1Harness(**SMALL, network=network, **options)
    return SelfTestCore(harness, blink_log2=4, fault_log2=fault_log2)


@pytest.mark.parametrize(
    "params, pattern, messages",
    [
        (SMALL, "random", 8),
        # Each run is seconds of amaranth.sim: the other retry modes are slow points.
        pytest.param(
            {"endpoints": 4, "seed": 2, "retry": "round", "max_bytes": 8},
            "hotspot",
            6,
            marks=pytest.mark.slow,
        ),
        pytest.param(
            {"endpoints": 4, "seed": 3, "retry": "backoff", "max_bytes": 6},
            "bit-reversal",
            6,
            marks=pytest.mark.slow,
        ),
        pytest.param(
            {"endpoints": 16, "seed": 1, "retry": "immediate", "max_bytes": 8},
            "random",
            2,
            marks=pytest.mark.slow,  # ~10 s alone, 28 s on the loaded machine
        ),
    ],
)
def test_replayed_runs_agree_with_the_model(params, pattern, messages):
    # Two whole runs (priming and the model's run each): every counter is twice what the
    # reference model says one run does, and nothing is flagged.
    core = rn1_selftest(params, seed=3, blink_log2=4, pattern=pattern, messages=messages)
    harness = core.harness
    trace = harness.trace
    assert trace == expected_run(
        *params.values(), traffic_seed=3, pattern=pattern, messages=messages
    )
    n = params["endpoints"]
    senders = {"random": n, "hotspot": n - 1, "bit-reversal": n - 2}[pattern]  # 00, 11 fixed
    assert trace.messages == messages * senders
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
        # Three senders for endpoint 0's two receive buffers: heads meet and are BLOCKED.
        assert trace.rejects > 0


def test_sources_are_a_function_of_the_seed_alone():
    # Each source's messages (destinations, lengths, data bytes) do not depend on when the
    # endpoint takes its beats; only the time stamps in the headers do.
    fields = message_fields(16, 8, 8)
    h = sum(fields.values()) // 8

    def messages(ready):
        twin = SourcesTwin(16, fields, seed=5, messages=6)
        for t in range(2000):
            twin.clock(t, [ready(t, g) for g in range(16)])
        assert twin.done()
        out = []
        for g in range(16):
            for seq, _, data in twin.pending[g]:
                word = int.from_bytes(bytes(data[:h]), "little")
                stamp_at = sum(fields.values()) - fields["stamp"]
                assert data[-1] == check_byte(data[:-1])
                assert word & ((1 << fields["src"]) - 1) == g
                out.append((g, seq, word & ((1 << stamp_at) - 1), data[h:-1]))
        return out

    rng = random.Random(1)
    always = messages(lambda t, g: 1)
    assert messages(lambda t, g: rng.random() < 0.3) == always
    assert len(always) == 16 * 6
    dests = {word >> 4 & 15 for _, _, word, _ in always}
    lengths = {len(data) for _, _, _, data in always}
    assert len(dests) == 16 and lengths == {0, 1, 2, 3}  # random, every endpoint, every length
    other = SourcesTwin(16, fields, seed=6)
    assert [other.beat(g) for g in range(16)] != [SourcesTwin(16, fields, seed=5).beat(g)
                                                  for g in range(16)]  # fmt: skip


@pytest.mark.parametrize(
    "network, nodes, messages",
    [
        ("bidelta", 4, 5),
        # The 64-node fat-tree: every node sends to the next (a sibling, or across the levels
        # of the unit tree at 3 -> 4, 15 -> 16, 63 -> 0), two messages each.
        ("fat-tree", 64, 2),
    ],
)
def test_model_trace_is_the_models_deliveries(network, nodes, messages):
    # The trace against a plain run of the model with the twin's messages: each delivered
    # message is one that was sent, to its destination, once, and its bytes arrive in order.
    if network == "bidelta":
        trace = expected_run(
            nodes, 2, "immediate", 6, traffic_seed=2, pattern="shift", messages=messages
        )
        model = RN1BideltaStreamModel(nodes, 2, "immediate", 6)
    else:
        trace = expected_fat_tree_run(
            2, "immediate", 6, traffic_seed=2, pattern="shift", messages=messages
        )
        model = RN1FatTreeStreamModel(2, "immediate", 6)
    fields = dict(trace.fields)
    h = sum(fields.values()) // 8
    twin = SourcesTwin(nodes, fields, seed=2, pattern="shift", messages=messages)
    sent, got = [], []
    frames = [[] for _ in range(nodes)]
    for t in range(trace.cycles):
        tx = twin.outputs()
        ready = [ep.tx_ready for ep in model.endpoints]
        for e, ep in enumerate(model.endpoints):
            if ep.rx_valid:
                frames[e].append(ep.rx_data)
                if ep.rx_last:
                    got.append((t, e, bytes(frames[e])))
                    frames[e] = []
        model.step(tx, [1] * nodes)
        before = [len(p) for p in twin.pending]
        twin.clock(t, ready)
        sent += [(g, tx[g][2], bytes(twin.pending[g][-1][2])) for g in range(nodes)
                 if len(twin.pending[g]) > before[g]]  # fmt: skip
    assert len(sent) == nodes * messages
    assert all(d == (g + 1) % nodes for g, d, _ in sent)
    assert sorted((d, m) for _, d, m in got) == sorted((d, m) for _, d, m in sent)
    assert trace.messages == len(sent)
    # The trace: per cycle, who ends a message and the XOR of header and check byte.
    want = {}
    for t, e, m in got:
        mask, xor = want.get(t, (0, 0))
        want[t] = (mask | 1 << e, xor ^ int.from_bytes(m[:h] + m[-1:], "little"))
    assert trace.deliveries == tuple((t, mask, xor) for t, (mask, xor) in sorted(want.items()))
    assert sum(ep.retries for ep in model.endpoints) == trace.rejects
    # The stamp holds the longest latency: no latency wraps around.
    assert fields["stamp"] == max(4, trace.max_latency.bit_length())


def test_message_layout():
    assert message_fields(4, 4, 6) == {"src": 2, "dest": 2, "dlen": 1, "seq": 5, "stamp": 6}
    # 16 endpoints, max_bytes 8, 10-bit stamp: a 3-byte header, 0..3 data bytes, check byte.
    assert message_fields(16, 8, 10) == {"src": 4, "dest": 4, "dlen": 2, "seq": 4, "stamp": 10}
    fields = message_fields(16, 8, 10)
    word = header_word(fields, 5, 9, 3, 17, 0x3FF + 2)
    assert word & 15 == 5 and word >> 4 & 15 == 9 and word >> 8 & 3 == 3
    assert word >> 10 & 15 == 1 and word >> 14 == 1  # seq and stamp modulo their fields
    with pytest.raises(
        ValueError,
        match=r"^the rn1-bidelta-stream self-test needs max_bytes >= 3 \(a header with source, "
        r"destination, sequence number and a 6-bit time stamp, and a check byte\) for "
        r"endpoints=4, not 2$",
    ):
        message_fields(4, 2, 6)
    # Every single-bit error changes the check byte; so does swapping two different bytes.
    data = [0x12, 0x34, 0x56, 0x00]
    code = check_byte(data)
    assert check_byte([]) == CODE_INIT
    for k in range(len(data)):
        for bit in range(8):
            flipped = list(data)
            flipped[k] ^= 1 << bit
            assert check_byte(flipped) != code
    assert check_byte([0x34, 0x12, 0x56, 0x00]) != code
    assert check_byte([0x12, 0x34, 0x56]) != code  # a lost byte


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

    def __init__(self, how, net):
        self.net = net
        self.how = how
        super().__init__(self.net.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.net = net = self.net
        n = len(net.tx)
        for g in range(n):
            wiring.connect(m, wiring.flipped(self.tx[g]), net.tx[g])
            for name in ("sent", "retries", "received", "dropped"):
                m.d.comb += getattr(self, name)[g].eq(getattr(net, name)[g])
        if self.how == "lose-count":
            m.d.comb += self.received[1].eq(net.received[1] - 1)
        for d in range(n):
            src = {0: 1, 1: 0}.get(d, d) if self.how == "swap-rx" else d
            rx, out = net.rx[src], self.rx[d]
            m.d.comb += [out.valid.eq(rx.valid), out.payload.eq(rx.payload), rx.ready.eq(out.ready)]
            if self.how == "flip-data" and d == 2:
                m.d.comb += out.payload.data.eq(rx.payload.data ^ (1 << 6))
            if self.how == "drop" and d == 3:
                m.d.comb += out.valid.eq(0)
            if self.how == "hung":
                m.d.comb += out.valid.eq(0)
        return m


@pytest.mark.parametrize(
    "how",
    ["other-wiring", "lose-count"]
    # The same check on more kinds of breakage: each a whole run in amaranth.sim.
    + [
        pytest.param(how, marks=pytest.mark.slow)
        for how in ["swap-rx", "flip-data", "drop", "hung"]
    ],
)
def test_checker_catches_broken_networks(how):
    # A network wired by another seed delivers every message intact, only in other cycles:
    # the replay of the model's trace is what catches it. A received counter one short is
    # caught by the end-of-run check alone.
    def network(endpoints, seed, retry, max_bytes, timeout):
        seed += how == "other-wiring"
        return _Broken(how, RN1BideltaStream(endpoints, seed, retry, max_bytes, timeout))

    core = small_core(network=network)
    got = run_core(core, core.harness.run_period + 2)
    assert got["errors"] > 0 and got["error"] == 1 and got["ok"] == 0


def _wrong(trace, how):
    entries = list(trace.deliveries)
    cycle, mask, xor = entries[3]
    if how == "later":
        entries[3] = (cycle + 1, mask, xor)
    elif how == "other-endpoint":
        entries[3] = (cycle, mask ^ 0b11, xor)
    elif how == "other-payload":
        entries[3] = (cycle, mask, xor ^ 1)
    elif how == "one-message-more":
        return dataclasses.replace(trace, messages=trace.messages + 1)
    elif how == "one-retry-more":
        return dataclasses.replace(trace, rejects=trace.rejects + 1)
    return dataclasses.replace(trace, deliveries=tuple(entries))


@pytest.mark.parametrize(
    "how",
    ["later", "one-message-more"]
    + [
        pytest.param(how, marks=pytest.mark.slow)
        for how in ["other-endpoint", "other-payload", "one-retry-more"]
    ],
)
def test_a_wrong_expected_trace_is_caught(how):
    # The real network against a trace that is not the model's: the board must say so (with
    # the right trace it passes: test_build_simulate runs this point).
    harness = RN1Harness(**SMALL)
    harness.trace = _wrong(harness.trace, how)
    got = run_core(SelfTestCore(harness, blink_log2=4), harness.run_period + 2)
    assert got["errors"] > 0 and got["error"] == 1


def test_harness_bad_parameters():
    with pytest.raises(ValueError, match="^pattern must be one of random, transpose, "):
        RN1Harness(**SMALL, pattern="tornado")
    with pytest.raises(ValueError, match=r"^messages must be between 1 and 1024, not 0$"):
        RN1Harness(**SMALL, messages=0)
    with pytest.raises(ValueError, match=r"^endpoints must be one of 4, 16, 64, 256, not 8$"):
        RN1Harness(**dict(SMALL, endpoints=8))
    with pytest.raises(ValueError, match="^the rn1-bidelta-stream self-test has no option 'req"):
        get_selftest("rn1-bidelta-stream").build(
            SMALL, seed=1, blink_log2=3, fault_log2=None, requests=1
        )


@pytest.mark.slow  # the run of test_build_simulate[False], decoded in this process
def test_simulate_status_decodes_the_core():
    core = small_core()
    result = simulate_status(core, 3600)
    assert len(result["lines"]) == 1
    line = result["lines"][0]
    # The line is a snapshot taken when it starts, after 2**11 cycles: whole runs so far.
    period = core.harness.run_period
    runs = (2048 - 2) // period  # the core's sums lag two cycles
    trace = core.harness.trace
    assert line["cycles"] == 2048 and line["errors"] == 0
    assert runs * trace.messages <= line["checked"] <= (runs + 1) * trace.messages
    assert runs * trace.rejects <= line["rejects"] <= (runs + 1) * trace.rejects
    assert line["maxlat"] == trace.max_latency


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


SIM_ARGV = ["build", "rn1-bidelta-stream"]


# 3600 cycles of the whole core in amaranth.sim (half a minute): slow points. The default run
# has `build --simulate` on the other designs' boards, and this self-test's replay, fault
# count and checks in the tests above.
@pytest.mark.slow
@pytest.mark.parametrize("fault", [False, True])
def test_build_simulate(capsys, fault):
    argv = [*SIM_ARGV, "--simulate", "3600", "--json"] + (["--inject-fault"] if fault else [])
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    data = json.loads(out)
    assert data["lines"] == 1 and data["checked"] > 0 and data["verdict"] == "PASS"
    assert (data["errors"] > 0) == fault
    # The iCEBreaker's point.
    assert data["params"] == {
        "endpoints": 4, "seed": 1, "retry": "immediate", "max_bytes": 4, "timeout": 32
    }  # fmt: skip
    assert data["selftest"]["messages_per_run"] == 4 * 8


def test_build_bad_input_is_one_line(capsys):
    for argv, message in [
        (["-p", "max_bytes=2"], "the rn1-bidelta-stream self-test needs max_bytes >= 3 ("),
        (["--pattern", "tornado"], "pattern must be one of random, transpose, bit-reversal, "),
        (["--requests", "5"], "the rn1-bidelta-stream self-test has no option 'requests'; "),
        (["-p", "endpoints=8"], "endpoints must be one of 4, 16, 64, 256, not 8"),
        (["-p", "retry=never"], "parameter retry must be one of immediate, round, backoff"),
    ]:
        code, out, err = run_cli(capsys, *SIM_ARGV, *argv, "--simulate", "100")
        assert code == 2 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"fattree build: error: {message}"), lines


def test_board_points():
    selftest = get_selftest("rn1-bidelta-stream")
    # One primary router and four endpoints on the UP5K; the 16-endpoint network on the
    # ECP5-85F.
    assert selftest.defaults_for("icebreaker") == {"endpoints": 4, "max_bytes": 4}
    assert selftest.defaults_for("ulx3s-85f") == {"endpoints": 16}


@pytest.mark.slow
@pytest.mark.parametrize("board", ["icebreaker", "ulx3s-85f"])
def test_build_simulate_board_point(capsys, board):
    # The board's own point, long enough for three status lines, with and without the fault.
    for fault in (False, True):
        argv = [*SIM_ARGV, "--board", board, "--simulate", "8000", "--json"]
        code, out, err = run_cli(capsys, *argv + (["--inject-fault"] if fault else []))
        assert code == 0, err
        data = json.loads(out)
        assert data["lines"] >= 2 and data["checked"] > 0 and (data["errors"] > 0) == fault


# The 64-node fat-tree (rn1-fat-tree): the same harness around the other network and model.


def test_fat_tree_harness_bad_parameters():
    with pytest.raises(ValueError, match="^pattern must be one of random, transpose, "):
        RN1FatTreeHarness(pattern="tornado")
    with pytest.raises(ValueError, match=r"^messages must be between 1 and 1024, not 0$"):
        RN1FatTreeHarness(messages=0)
    with pytest.raises(
        ValueError,
        match=r"^the rn1-fat-tree self-test needs max_bytes >= 4 \(a header with source, "
        r"destination, sequence number and a 4-bit time stamp, and a check byte\) for "
        r"endpoints=64, not 3$",
    ):
        RN1FatTreeHarness(max_bytes=3)
    with pytest.raises(ValueError, match="^the rn1-fat-tree self-test has no option 'req"):
        get_selftest("rn1-fat-tree").build({}, seed=1, blink_log2=3, fault_log2=None, requests=1)


def test_fat_tree_board_point():
    # The design's own defaults on the ECP5-85F: 64 nodes, max_bytes 8, immediate retry.
    assert get_selftest("rn1-fat-tree").defaults_for("ulx3s-85f") == {}


def fat_tree_core(*, network=None, messages=2, fault_log2=None):
    harness = RN1FatTreeHarness(messages=messages, network=network)
    return SelfTestCore(harness, blink_log2=4, fault_log2=fault_log2)


@pytest.mark.slow  # the whole fat-tree and 64 sources and checkers in amaranth.sim
def test_fat_tree_run_agrees_with_the_model():
    core = fat_tree_core()
    trace = core.harness.trace
    assert trace == expected_fat_tree_run(messages=2)
    assert trace.messages == 2 * 64 and trace.rejects > 0
    got = run_core(core, core.harness.run_period + 2)
    assert got["errors"] == 0 and got["error"] == 0 and got["ok"] == 1 and got["runs"] == 1
    assert got["checked"] == trace.messages and got["rejects"] == trace.rejects
    assert got["maxlat"] == trace.max_latency > 0


@pytest.mark.slow
@pytest.mark.parametrize("how", ["other-wiring", "flip-data"])
def test_fat_tree_checker_catches_broken_networks(how):
    # Routers and endpoints seeded otherwise: every message intact, in other cycles (the
    # replay catches it); a data bit flipped on one receive stream (its check byte does).
    def network(seed, retry, max_bytes):
        seed += how == "other-wiring"
        return _Broken(how, RN1FatTreeStream(seed, retry, max_bytes))

    core = fat_tree_core(network=network)
    got = run_core(core, core.harness.run_period + 2)
    assert got["errors"] > 0 and got["error"] == 1 and got["ok"] == 0


# The board's point, 3600 cycles (one status line) of the whole core in amaranth.sim.
@pytest.mark.slow
@pytest.mark.parametrize("fault", [False, True])
def test_fat_tree_build_simulate(capsys, fault):
    argv = ["build", "rn1-fat-tree", "--board", "ulx3s-85f", "--simulate", "3600", "--json"]
    code, out, err = run_cli(capsys, *argv + (["--inject-fault"] if fault else []))
    assert code == 0, err
    data = json.loads(out)
    assert data["lines"] == 1 and data["checked"] > 0 and data["verdict"] == "PASS"
    assert (data["errors"] > 0) == fault
    assert data["params"] == {"seed": 1, "retry": "immediate", "max_bytes": 8}
    assert data["selftest"]["messages_per_run"] == 64 * 8
