"""The RN1 endpoint interface (hdl/rn1/endpoint.py) against its cycle-exact model and the
protocol of docs/dehon.md ("Endpoints"): one endpoint alone with stand-ins for the network,
directed timing, and the bidelta network with an endpoint on every node (rn1-bidelta-stream),
in amaranth.sim and as a cocotb bench."""

import argparse
import json
import random
import shutil
from collections import Counter

import numpy as np
import pytest
from amaranth.hdl import Value

from fattree.designs import get_design
from fattree.hdl.rn1.bidelta_stream import RN1BideltaStream
from fattree.hdl.rn1.endpoint import RN1Endpoint
from fattree.sim.checks.rn1_endpoint import (
    CHECKS,
    STEER,
    STREAM_OUTPUTS,
    HeadMeetings,
    StreamCheck,
    Traffic,
    held_hotspot,
    meeting_rounds,
    messages,
    model_outputs,
    run_model,
    run_stream_model,
    simulate_endpoint,
    simulate_stream,
    stream_ports,
)
from fattree.sim.experiments import registry
from fattree.sim.experiments.rn1_endpoint_retries import LoadDriver
from fattree.sim.models.rn1_endpoint import RN1BideltaStreamModel, RN1EndpointModel
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate
from fattree.spec.bits import pack_fields
from fattree.spec.lfsr import LFSRModel
from fattree.spec.rn1 import BLOCKED, CONNECTED, word
from fattree.spec.rn1_bidelta import bidelta
from fattree.spec.rn1_endpoint import (
    GIVE_UP,
    TIMEOUT,
    backoff_cycles,
    endpoint_seed,
    head,
    head_bits,
    path_routers,
    status_cycles,
    tx_fields,
)

RETRIES = ("immediate", "round", "backoff")
#: The retry modes for checks that take seconds each: the other modes are slow points.
SLOW_BUT_FIRST = [RETRIES[0], *(pytest.param(r, marks=pytest.mark.slow) for r in RETRIES[1:])]


# Definitions.


@pytest.mark.parametrize("n", [4, 16, 64, 256])
def test_head_is_the_bidelta_head_and_a_bit_permutation(n):
    net = bidelta(n, 3)
    bits = head_bits(n)
    for dest in range(n):
        h = head(n, dest)
        assert h == net.head(dest) and net.destination(h) == dest
        assert h == sum(((dest >> b) & 1) << k for k, b in enumerate(bits) if b is not None)


def test_backoff_window_doubles_up_to_the_cap():
    assert [backoff_cycles(k, 0xFFFF) for k in (1, 2, 3, 8, 9, 20)] == [4, 12, 28, 1020, 1020, 1020]
    assert backoff_cycles(3, 0b1010) == 4 * 0b010
    with pytest.raises(ValueError, match="blocked must be at least 1, not 0"):
        backoff_cycles(0, 1)


def test_endpoint_seeds_are_spread():
    """A hash of (seed, endpoint): non-zero, nearly all different (16 bits for 256 endpoints
    may collide, harmlessly), and another network seed gives other seeds."""
    seeds = [endpoint_seed(1, e) for e in range(256)]
    assert 0 not in seeds and len(set(seeds)) > 250
    assert sum(a == endpoint_seed(2, e) for e, a in enumerate(seeds)) < 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retry": "later"}, "retry must be one of 'immediate', 'round', 'backoff'"),
        ({"max_bytes": 0}, "max_bytes must be between 1 and 64, not 0"),
        ({"endpoints": 8}, "endpoints must be one of 4, 16, 64, 256, not 8"),
        ({"seed": 0}, "seed must be between 1 and 65535, not 0"),
    ],
)
def test_endpoint_parameter_errors(kwargs, message):
    for cls in (RN1Endpoint, RN1EndpointModel):
        with pytest.raises(ValueError, match=message):
            cls(**kwargs)


def test_network_parameter_errors():
    with pytest.raises(ValueError, match="retry must be one of"):
        RN1BideltaStream(16, 1, "sometimes")
    with pytest.raises(ValueError, match="max_bytes must be between 1 and 64, not 65"):
        RN1BideltaStream(16, 1, "round", 65)


# One endpoint, directed.


def _directed(dut, steps, cycles):
    """Drive ``steps[c]`` (``(signal, value)`` pairs) in cycle ``c``, each back to 0 after
    that cycle unless it is the transmit payload or ``rx.ready``; the outputs per cycle."""
    trace = []
    held = (dut.tx.payload.as_value(), dut.rx.ready)

    async def bench(ctx):
        for c in range(cycles):
            for sig, value in steps.get(c, []):
                ctx.set(sig, value)
            trace.append(
                {
                    "o0": ctx.get(Value.cast(dut.o[0].fwd)),
                    "o1": ctx.get(Value.cast(dut.o[1].fwd)),
                    "i_bk0": ctx.get(Value.cast(dut.i[0].bk)),
                    "tx_ready": ctx.get(dut.tx.ready),
                    "rx": (ctx.get(dut.rx.valid), ctx.get(dut.rx.payload.as_value())),
                    **{k: ctx.get(getattr(dut, k)) for k in ("sent", "retries", "received")},
                }
            )
            await ctx.tick()
            for sig, _ in steps.get(c, []):
                if not any(sig is h for h in held):
                    ctx.set(sig, 0)

    simulate(dut, bench)
    return trace


def _beat(dut, n, data, dest, last):
    """One transmit beat: ``tx.valid`` and the packed payload."""
    payload = pack_fields(tx_fields(n), data=data, dest=dest, last=last)
    return [(dut.tx.payload.as_value(), payload), (dut.tx.valid, 1)]


def test_open_send_blocked_retry_on_the_other_output_connected():
    """The timing diagram of docs/dehon.md: a two-byte message to endpoint 6 of 16 (head
    0x09: direction 1 at stage 0, 2 at stage 1), BLOCKED, sent again at once on output 1,
    CONNECTED."""
    dut = RN1Endpoint(16, "immediate", 1, 4)
    h = head(16, 6)
    assert h == 0x09
    steps = {
        0: _beat(dut, 16, 0xA1, 6, 0),
        1: _beat(dut, 16, 0xA2, 0, 1),
        8: [(Value.cast(dut.o[0].bk), word(0, BLOCKED))],
        14: [(Value.cast(dut.o[1].bk), word(0, CONNECTED))],
    }
    trace = _directed(dut, steps, 17)
    b = word(1, 0)
    assert [t["o0"] for t in trace] == [0, 0, 0, b | h, b | 0xA1, b | 0xA2] + [0] * 11
    assert [t["o1"] for t in trace] == [0] * 10 + [b | h, b | 0xA1, b | 0xA2] + [0] * 4
    assert [t["tx_ready"] for t in trace] == [1, 1] + [0] * 13 + [1, 1]
    assert [t["retries"] for t in trace][8:10] == [0, 1]
    assert [t["sent"] for t in trace][14:16] == [0, 1]


@pytest.mark.parametrize("seed", [1, 4, 0xACE1])
def test_backoff_waits_the_lfsr_window(seed):
    """Each BLOCKED in a row (k = 1, 2, ...) delays the next head by BACKOFF_SLOT * (x mod
    2^k) cycles beyond an immediate retry, x the LFSR's value in the cycle of the status."""
    dut = RN1Endpoint(4, "backoff", seed, 1)
    h = word(1, head(4, 3))
    events = {"heads": [], "status": []}

    async def bench(ctx):
        ctx.set(dut.tx.payload.as_value(), pack_fields(tx_fields(4), data=0x55, dest=3, last=1))
        ctx.set(dut.tx.valid, 1)
        prev = [0, 0]
        answer_at = None
        for c in range(400):
            fwd = [ctx.get(Value.cast(dut.o[k].fwd)) for k in (0, 1)]
            for k in (0, 1):
                if fwd[k] == h:
                    events["heads"].append(c)
                if prev[k] and not fwd[k]:  # the close
                    answer_at = (c + 2, k)
            prev = fwd
            status = 0
            if answer_at and answer_at[0] == c:
                k = answer_at[1]
                status = word(0, BLOCKED if len(events["status"]) < 5 else CONNECTED)
                ctx.set(Value.cast(dut.o[k].bk), status)
                events["status"].append(c)
                answer_at = None
            await ctx.tick()
            ctx.set(dut.tx.valid, 0)
            ctx.set(Value.cast(dut.o[0].bk), 0)
            ctx.set(Value.cast(dut.o[1].bk), 0)

    simulate(dut, bench)
    heads, status = events["heads"], events["status"]
    assert len(heads) == 6 and len(status) == 6
    waits = []
    for k, s in enumerate(status[:5], start=1):
        lfsr = LFSRModel(16, seed=seed)
        for _ in range(s):
            lfsr.clock()
        waits.append(backoff_cycles(k, lfsr.state))
        assert heads[k] == s + 2 + waits[-1]
    assert any(waits)


def test_a_busy_receiver_answers_blocked_and_loses_nothing():
    """rx.ready low: the first transmission on input 0 is taken (CONNECTED), the second finds
    the buffer full and is answered BLOCKED; once the user reads, the third is taken."""
    dut = RN1Endpoint(16, "immediate", 1, 4)
    f = Value.cast(dut.i[0].fwd)
    b = word(1, 0)

    def tx_words(start, data):
        return {start + k: [(f, w)] for k, w in enumerate([b | 0x99, *(b | d for d in data)])}

    steps = {**tx_words(0, [1, 2]), **tx_words(6, [3]), 12: [(dut.rx.ready, 1)]}
    steps.update(tx_words(20, [4]))
    trace = _directed(dut, steps, 28)
    answers = [(c, t["i_bk0"]) for c, t in enumerate(trace) if t["i_bk0"]]
    assert answers == [(4, word(0, CONNECTED)), (9, word(0, BLOCKED)), (23, word(0, CONNECTED))]
    beats = [t["rx"][1] for t in trace if t["rx"][0]]
    # Held until ready, then 1, 2 (last); then the third message, 4 (last).
    assert beats[-3:] == [1, 2 | 1 << 8, 4 | 1 << 8] and set(beats[:-3]) == {1}
    assert [t["received"] for t in trace][-1] == 2


# One endpoint, random, against the model.


@pytest.mark.parametrize("retry", RETRIES)
@pytest.mark.parametrize("max_bytes", [1, 4])
def test_endpoint_matches_model(retry, max_bytes):
    sb, check = simulate_endpoint(
        RN1Endpoint(16, retry, 0x1D, max_bytes),
        RN1EndpointModel(16, retry, 0x1D, max_bytes),
        1500,
        seed=max_bytes,
    )
    assert sb.mismatches == 0, sb.first_mismatch
    s = check.stats
    # Every path was taken: sent, retried, dropped; received and refused.
    assert s["sent"] > 20 and s["retries"] > 10 and s["dropped"] > 0
    assert s["remote_ok"] > 20 and s["remote_no"] > 20
    assert s["sent"] == s["connected"] and s["retries"] == s["blocked_sent"]


def test_endpoint_check_catches_a_wrong_model(monkeypatch):
    """A model that retries on the same output (the RTL alternates) is caught."""
    original = RN1EndpointModel.step

    def same_port(self, *args, **kwargs):
        port = self.port
        original(self, *args, **kwargs)
        if self.port != port and self.state == 1:  # PEND after BLOCKED
            self.port = port

    monkeypatch.setattr(RN1EndpointModel, "step", same_port)
    sb, _ = simulate_endpoint(
        RN1Endpoint(16, "immediate", 1, 4), RN1EndpointModel(16, "immediate", 1, 4), 400, 1
    )
    assert sb.failures["cycle_mismatches"] > 0


# The network with endpoints.


@pytest.mark.parametrize("retry", RETRIES)
def test_network_4_matches_model(retry):
    sb, check = simulate_stream(
        RN1BideltaStream(4, 5, retry, 4),
        RN1BideltaStreamModel(4, 5, retry, 4),
        [("random", 6), ("hotspot", 4)],
        seed=2,
        max_bytes=4,
    )
    assert sb.mismatches == 0, sb.first_mismatch
    assert sb.checked == check.stats["messages"] > 30
    assert check.stats["retries"] > 0 and check.stats["dropped"] > 0


@pytest.mark.slow  # the 4-endpoint network runs every retry mode in the default run
@pytest.mark.parametrize("retry", RETRIES)
def test_network_16_matches_model(retry):
    sb, check = simulate_stream(
        RN1BideltaStream(16, 1, retry, 3),
        RN1BideltaStreamModel(16, 1, retry, 3),
        [("random", 1), ("hotspot", 1)],
        seed=4,
        max_bytes=3,
        traffic=Traffic(backpressure=40),
    )
    assert sb.mismatches == 0, sb.first_mismatch
    assert check.stats["retries"] > 0


def test_network_check_fails_with_a_broken_reference():
    sb, _ = simulate_stream(
        RN1BideltaStream(4, 1, "immediate", 2),
        RN1BideltaStreamModel(4, 1, "immediate", 2),
        [("random", 2)],
        seed=1,
        max_bytes=2,
        mutate=True,
    )
    assert sb.failures["cycle_mismatches"] == 1


def test_messages_of_every_pattern():
    rng = random.Random(1)
    q = messages("hotspot", 16, 5, 4, rng, overlong=0.5)
    assert all(d == 0 for queue in q for d, _ in queue)
    lengths = {len(b) for queue in q for _, b in queue}
    assert lengths <= set(range(1, 8)) and max(lengths) > 4
    with pytest.raises(ValueError, match="pattern must be one of random, hotspot, not 'x'"):
        messages("x", 4, 1, 1, rng)


def test_backoff_cuts_the_retries_of_a_hot_spot():
    """Model only, 16 endpoints all sending to endpoint 0: immediate retry collides again and
    again; rounds halve that; back-off spreads the senders out (the circuit tree's finding,
    Strumpen and Krishnamurthy section 7)."""
    retries = {}
    for retry in RETRIES:
        check, _ = run_model(16, 1, retry, [("hotspot", 8)])
        assert check.stats["messages"] == 128
        retries[retry] = check.stats["retries"]
    assert retries["backoff"] * 3 < retries["round"] < retries["immediate"]


@pytest.mark.slow
@pytest.mark.parametrize("retry", RETRIES)
def test_network_64_model_delivers_every_message(retry):
    check, model = run_model(64, 2, retry, [("random", 4), ("hotspot", 2)])
    assert check.stats["messages"] == 64 * 6
    assert sum(ep.sent for ep in model.endpoints) == 64 * 6


@pytest.mark.slow
def test_network_64_matches_model():
    sb, _ = simulate_stream(
        RN1BideltaStream(64, 1, "backoff", 2),
        RN1BideltaStreamModel(64, 1, "backoff", 2),
        [("random", 1), ("hotspot", 1)],
        seed=9,
        max_bytes=2,
    )
    assert sb.mismatches == 0, sb.first_mismatch


# The experiment (dehon-endpoint-retries).


@pytest.mark.slow  # 250 cycles of the 16-endpoint network in amaranth.sim
def test_experiment_driver_on_the_rtl_agrees_with_the_model():
    """The experiment's load driver on the RTL, N = 16, back-off, load 0.3, 250 cycles: every
    output every cycle as the model's, so the experiment's figures are the hardware's."""
    n = 16
    dut = RN1BideltaStream(n, 1, "backoff", 3)
    model = RN1BideltaStreamModel(n, 1, "backoff", 3)
    driver = LoadDriver(n, 0.3, 3, random.Random(1))
    sb = Scoreboard(CHECKS)
    seen = {}

    async def bench(ctx):
        read, drive = stream_ports(ctx, dut, n)
        for cycle in range(250):
            seen.update(read())
            want = model_outputs(model.endpoints)
            for key in STREAM_OUTPUTS:
                sb.compare("cycle_mismatches", f"cycle {cycle} {key}", seen[key], want[key])
            tx = driver.offer()
            drive({"tx": tx, "rx_ready": [1] * n})
            model.step(tx, [1] * n)
            await ctx.tick()
            driver.taken(tx, seen["tx_ready"])
        seen.update(read())  # the counters after the last cycle

    simulate(dut, bench)
    assert sb.mismatches == 0, sb.first_mismatch
    blocked = [b for ep in model.endpoints for b in ep.blocked_per_message]
    assert sum(seen["sent"]) == len(blocked) > 30
    assert sum(seen["retries"]) >= sum(blocked) > 0  # (a message still retrying counts too)


def test_experiment_table():
    args = argparse.Namespace(
        endpoints=16, loads=[0.01, 1.0], retry=list(RETRIES), cycles=600, length=4, seed=1
    )
    result = registry()["dehon-endpoint-retries"].run(args)
    rows = {(r[0], r[1]): r for r in result.rows}
    assert len(rows) == 6
    for retry in RETRIES:
        light, heavy = rows[0.01, retry], rows[1.0, retry]
        # Light load: nearly every message opens at once, in the uncontended time
        # (L + 2s + 3 = 11 cycles for 4 bytes through 2 stages) or little more.
        # Rounds add the wait for the next round to every message.
        assert light[3] > 0.85 and 11 <= light[6] < (25 if retry == "round" else 15)
        # Full load: collisions, retries, longer messages.
        assert heavy[3] < light[3] and heavy[4] > light[4] and heavy[6] > light[6]


# The cocotb bench on the generated Verilog.

SIMULATORS = [
    pytest.param("verilator", marks=pytest.mark.slow),
    pytest.param(
        "icarus",
        marks=pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog"),
    ),
]


@pytest.mark.cocotb
@pytest.mark.parametrize("simulator", SIMULATORS)
def test_cocotb_bench(simulator, tmp_path):
    from fattree.sim.cocotb_runner import run_bench

    result = run_bench(
        get_design("rn1-bidelta-stream"),
        {"endpoints": 4, "seed": 3, "retry": "backoff", "max_bytes": 4},
        simulator,
        seed=5,
        bench={"frames": 32, "coverage": True},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0 and s["messages_checked"] > 50 and s["retries"] > 0
    # Every bin of the model's cover points hit at this point (docs/dehon.md, "Coverage of
    # the network with endpoints"), the back-off window at its cap among them.
    assert s["coverage"]["holes"] == [], s["coverage"]
    assert s["coverage"]["points"]["retry/backoff"]["bins"]["window capped"] > 0


@pytest.mark.cocotb
@pytest.mark.slow  # the default point, 16 endpoints, on Verilator: build and run
def test_cocotb_coverage_closes_at_the_default_point(tmp_path, capsys):
    from fattree.scripts.main import main

    argv = ["sim", "rn1-bidelta-stream", "--coverage", "--json", "--build-root", str(tmp_path)]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["coverage"]["holes"] == []
    assert code == 0 and out["passed"]


@pytest.mark.cocotb
def test_cocotb_bench_fails_with_a_broken_reference(tmp_path):
    if shutil.which("iverilog") is None:
        pytest.skip("no iverilog")
    from fattree.sim.cocotb_runner import run_bench

    result = run_bench(
        get_design("rn1-bidelta-stream"),
        {"endpoints": 4, "seed": 1, "retry": "immediate", "max_bytes": 2},
        "icarus",
        seed=1,
        bench={"frames": 8, "mutation": True},
        root=tmp_path,
    )
    assert not result.passed and result.summary["cycle_mismatches"] == 1


def test_soak_stimulus_and_expectation_cover_both_phases_and_drops():
    """The soak's model side (sim/soak/rn1_stream.py): one row of inputs and one of expected
    outputs per cycle, in the layout's column order, both phases, over-long frames dropped."""
    from fattree.sim.soak.rn1_stream import RN1BideltaStreamSoak

    params = {"endpoints": 4, "seed": 3, "retry": "immediate", "max_bytes": 4}
    soak = RN1BideltaStreamSoak(params, messages=600, seed=2)
    layout = soak.layout()
    chunks = list(soak.chunks(chunk=500))
    stimulus = np.concatenate([c[0] for c in chunks])
    expected = np.concatenate([c[1] for c in chunks])
    assert stimulus.shape == (soak.cycles, len(layout.inputs))
    assert expected.shape == (soak.cycles, len(layout.outputs))
    assert soak.failures == [] and soak.checked >= 600
    summary = soak.summary()
    assert set(summary["messages_by_phase"]) == {"random", "hotspot"}
    assert summary["dropped_frames"] > 0 and summary["retries"] > 0
    # Each message confirmed once: the senders' counters in the last row add up to them.
    sent = [layout.outputs.index(p) for p in layout.outputs if p.name.startswith("sent__")]
    assert int(expected[-1, sent].sum()) == soak.checked


# The status timeout (a broken network never holds a sender).


def test_timeout_parameter_errors():
    with pytest.raises(ValueError, match="timeout must be between 1 and 1024, not 0"):
        RN1Endpoint(16, timeout=0)
    # Shorter than the status's way back over the network: refused.
    with pytest.raises(ValueError, match=r"at least 7 \(the longest wait .*\), not 6"):
        RN1EndpointModel(16, timeout=6)
    with pytest.raises(ValueError, match="timeout must be at least 11"):
        RN1Endpoint(64, route="unit-tree", node=1, timeout=10)
    with pytest.raises(ValueError, match="dead_outputs must be between 0 and 7, not 8"):
        RN1BideltaStream(4, dead_outputs=[8])
    with pytest.raises(TypeError, match="dead_outputs must be a list of channels"):
        RN1BideltaStreamModel(4, dead_outputs="0")
    assert RN1BideltaStreamModel(4, dead_outputs=[3, 1, 3]).dead_outputs == (1, 3)


@pytest.mark.parametrize("n", [4, 16, 64, pytest.param(256, marks=pytest.mark.slow)])  # 256: 55 s
def test_longest_status_wait_of_a_working_network_is_status_cycles(n):
    """The bound the timeout rests on: in the model of a working bidelta network (random and
    hot-spot traffic, every blocking stage met) no attempt waits longer than
    ``status_cycles(stages)`` for its status, and that many cycles are waited."""
    model = RN1BideltaStreamModel(n, 1, "immediate", 2)
    waits: Counter = Counter()
    original = [ep.step for ep in model.endpoints]
    for ep, step in zip(model.endpoints, original, strict=True):

        def counted(*args, ep=ep, step=step):
            if ep.state == 3:  # WAIT: the cycle number of this wait is age + 1
                before = ep.age
                step(*args)
                if ep.state != 3:
                    waits[before + 1] += 1
            else:
                step(*args)

        ep.step = counted
    run_stream_model(model, [("random", 2 if n < 256 else 1), ("hotspot", 1)], max_bytes=2)
    stages = path_routers("bidelta", n)
    assert max(waits) == status_cycles(stages) < TIMEOUT
    assert sum(e.timeouts for e in model.endpoints) == 0


def test_timeout_gives_up_after_timeout_cycles_and_drops_after_give_up():
    """A message whose statuses never come: each attempt waits exactly ``timeout`` cycles
    (counted in ``timeouts``, the next attempt on the other output), and the GIVE_UP-th
    timeout drops it; the endpoint then takes the next frame."""
    m = RN1EndpointModel(4, "immediate", 1, 2, timeout=5)
    idle = (0, 0, 0, 0)
    quiet = [0, 0]
    steps = 0
    m.step(1, 0x11, 2, 0, 1, quiet, quiet)
    m.step(1, 0x22, 2, 1, 1, quiet, quiet)
    ports, tried = [], []
    while m.state != 0 and steps < 200:  # LOAD again
        if m.o_fwd[0] or m.o_fwd[1]:
            port = 0 if m.o_fwd[0] else 1
            if not ports or tried[-1] != steps - 1:
                ports.append(port)
            tried.append(steps)
        m.step(*idle, 1, quiet, quiet)
        steps += 1
    assert m.timeouts == GIVE_UP and m.dropped == 1 and m.sent == 0 and m.retries == 0
    assert ports == [0, 1, 0, 1]  # alternating outputs
    # Each attempt: head + 2 bytes out, then 5 cycles of waiting (the close among them).
    assert steps == GIVE_UP * (1 + 2 + 5)
    assert m.blocked_per_message == [GIVE_UP]
    assert m.tx_ready == 1


@pytest.mark.parametrize("retry", SLOW_BUT_FIRST)
def test_endpoint_matches_model_with_silent_network(retry):
    """The fault on one endpoint: output 0 is dead (no status ever), and output 1 leaves a
    fifth of its transmissions unanswered; RTL and model agree every cycle, every unanswered
    attempt times out (none hangs), some messages are dropped after GIVE_UP timeouts."""
    sb, check = simulate_endpoint(
        RN1Endpoint(16, retry, 0x1D, 3, timeout=9),
        RN1EndpointModel(16, retry, 0x1D, 3, timeout=9),
        3000,
        seed=7,
        blocked=0.2,
        silent=0.2,
        dead=0,
    )
    assert sb.mismatches == 0, sb.first_mismatch
    s = check.stats
    # Every unanswered attempt timed out (but the last few, whose wait may not be over).
    assert s["unanswered"] - 1 <= s["timeouts"] <= s["unanswered"]
    assert s["sent"] > 20 and s["retries"] > 0
    assert s["dropped"] > s["sent"] // 50  # gave up on some (besides over-long frames)


@pytest.mark.parametrize("retry", SLOW_BUT_FIRST)
def test_network_with_a_dead_endpoint_output_delivers_everything(retry):
    """Endpoint 0's output 0 is cut from the network: its attempts there time out and the
    next goes out on output 1, so all its messages still arrive, exactly once."""
    sb, check = simulate_stream(
        RN1BideltaStream(4, 5, retry, 3, dead_outputs=[0]),
        RN1BideltaStreamModel(4, 5, retry, 3, dead_outputs=[0]),
        [("random", 6), ("hotspot", 3)],
        seed=3,
        max_bytes=3,
    )
    assert sb.mismatches == 0, sb.first_mismatch
    eps = check.model.endpoints
    assert eps[0].timeouts > 0 and all(ep.timeouts == 0 for ep in eps[1:])
    assert check.stats["messages"] == sb.checked > 30


def test_network_with_a_mute_endpoint_drops_its_messages_and_goes_on():
    """Both outputs of endpoint 1 cut: each of its messages is dropped after GIVE_UP
    timeouts (counted), everyone else's arrives, and messages *to* endpoint 1 arrive too."""
    sb, check = simulate_stream(
        RN1BideltaStream(4, 2, "round", 2, dead_outputs=[2, 3]),
        RN1BideltaStreamModel(4, 2, "round", 2, dead_outputs=[2, 3]),
        [("random", 5)],
        seed=5,
        max_bytes=2,
    )
    assert sb.mismatches == 0, sb.first_mismatch
    mute = check.model.endpoints[1]
    assert mute.sent == 0 and mute.timeouts == GIVE_UP * mute.dropped and mute.dropped >= 5
    assert mute.received > 0


def test_cli_timeout_below_the_networks_wait_is_one_line(capsys):
    from fattree.scripts.main import main

    code = main(["verilog", "rn1-bidelta-stream", "-p", "timeout=6", "-o", "-"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1
    assert "timeout must be at least 7 (the longest wait for a status in this network)" in err


# The stress phases of the bench (sim/benches/rn1_stream.py, ``_stress``).


def _stress_run(dut, model, *, hold: int, tries: int, seed: int = 3):
    """The held hot spot, then the rounds of heads meeting in new ways, on ``dut`` (None: the
    model alone) against ``model``; returns the scoreboard, the check, the meetings and the
    longest back-off wait the endpoints drew."""
    scoreboard = Scoreboard(CHECKS)
    rng = random.Random(seed)
    waits = []
    result = {}

    def watch(m):
        meetings(m)
        waits.extend(ep.wait for ep in m.endpoints)

    async def bench(ctx=None):
        async def tick():
            return None

        if ctx is None:
            read, drive = (lambda: model_outputs(model.endpoints)), (lambda _: None)
        else:
            read, drive = stream_ports(ctx, dut, len(model.endpoints))
        check = StreamCheck(
            model, scoreboard, read, drive, ctx.tick if ctx else tick, max_bytes=2, rng=rng
        )
        name, queues, traffic = held_hotspot(len(model.endpoints), 2, rng, hold=hold)
        check.traffic, check.watch = traffic, watch
        await check.phase(name, queues, limit=100_000)
        check.traffic = STEER
        for name, queues, settle in meeting_rounds(model, meetings, 2, rng, tries=tries):
            await check.phase(name, queues, limit=20_000, settle=settle)
        result["check"] = check

    meetings = HeadMeetings(model)
    if dut is None:
        import asyncio

        asyncio.run(bench())
    else:
        simulate(dut, bench)
    return scoreboard, result["check"], meetings, max(waits)


def test_held_hotspot_runs_the_backoff_to_its_cap_on_the_model():
    # The receivers hold off: the senders meet BLOCKED nine times in a row and more (the
    # window at its cap, 8) and draw waits of 64 cycles and more.
    model = RN1BideltaStreamModel(4, 1, "backoff", 2, timeout=5)
    coverage = model.start_coverage()
    sb, check, _, longest_wait = _stress_run(None, model, hold=3000, tries=0)
    assert sb.mismatches == 0, sb.first_mismatch
    assert max(check.blocked_per_message) >= 9
    assert longest_wait >= 64
    assert coverage.hits["retry/backoff"]["window capped"] > 0


def test_meeting_rounds_meet_three_and_four_heads_in_new_ways():
    # Every round yielded on the model (after the held hot spot) adds a way heads meet at
    # the router: inputs, held outputs and the random bit; three and four heads for one
    # direction in one cycle among them, with both outputs free and with one held.
    model = RN1BideltaStreamModel(4, 1, "backoff", 2, timeout=5)
    sb, check, meetings, _ = _stress_run(None, model, hold=300, tries=60)
    assert sb.mismatches == 0, sb.first_mismatch
    assert len(meetings.seen) > 40
    sizes = Counter((len(inputs), busy) for _, _, inputs, busy, _ in meetings.seen)
    assert sizes[3, (0, 0)] and sizes[4, (0, 0)]
    assert any(sizes[k, b] for k in (2, 3, 4) for b in ((0, 1), (1, 0)))
    assert {bit for *_, bit in meetings.seen} == {0, 1}


def test_stress_phases_match_the_model_on_the_rtl():
    # The same phases, shorter, on the network's RTL (the bench's mutant point) against the
    # model, cycle by cycle.
    model = RN1BideltaStreamModel(4, 1, "backoff", 2, timeout=5)
    dut = RN1BideltaStream(4, 1, "backoff", 2, timeout=5)
    sb, check, meetings, _ = _stress_run(dut, model, hold=400, tries=12)
    assert sb.mismatches == 0, sb.first_mismatch
    assert check.stats["retries"] > 0 and len(meetings.seen) > 5
