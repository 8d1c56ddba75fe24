"""cocotb bench of the RN1 networks with endpoints behind AXI4-Stream ports (``fattree sim
rn1-bidelta-stream --ports axis``, :mod:`fattree.hdl.rn1.axis`), driven by cocotbext-axi as a
user outside Amaranth would drive them.

Per endpoint ``k``: an ``AxiStreamSource`` on ``s_axis_<k>`` and an ``AxiStreamSink`` on
``m_axis_<k>`` (``byte_lanes=1``: one beat per byte, frames framed by ``tlast``), each paused
at random (bench knob ``backpressure``, percent). Traffic as the native bench's
(:func:`fattree.sim.checks.rn1_endpoint.messages`): random destinations (``frames`` messages
in all), then a hot spot (every message to endpoint 0), with now and then a frame longer than
``max_bytes``; every frame is queued at once, ``tdest`` its destination.

The expectation is the reference model's: the network's model with its endpoints, run alone
on the same frames (:func:`fattree.sim.checks.rn1_endpoint.run_stream_model`), delivers every
frame of at most ``max_bytes`` bytes once at its destination and drops the others at their
sender. Checks (summary keys):

* ``message_mismatches``: per endpoint, the frames received (byte tuples, sorted: timing, and
  so the order of frames from different senders, is the simulator's here) against those
  expected; a frame still missing at the cycle limit fails too;
* ``counter_mismatches``: afterwards each endpoint's ``sent_<k>``, ``received_<k>`` and
  ``dropped_<k>`` against the frames it sent, received and had dropped.
"""

from __future__ import annotations

import random
import time
from collections import Counter

import cocotb
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamFrame, AxiStreamSink, AxiStreamSource

from fattree.sim.axis_ends import axis_end, start_axis
from fattree.sim.checks.rn1_endpoint import Traffic, messages, run_stream_model
from fattree.sim.cocotb_runner import bench_config, write_summary
from fattree.sim.models.rn1_endpoint import RN1BideltaStreamModel, RN1FatTreeStreamModel
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.rn1_endpoint import TIMEOUT

#: The model of each design, from its parameters (as the native bench's).
MODELS = {
    "rn1-bidelta-stream": lambda p: RN1BideltaStreamModel(
        p["endpoints"], p["seed"], p["retry"], p["max_bytes"], p.get("timeout", TIMEOUT)
    ),
    "rn1-fat-tree": lambda p: RN1FatTreeStreamModel(p["seed"], p["retry"], p["max_bytes"]),
}

CHECKS = ("message_mismatches", "counter_mismatches")


@cocotb.test()
async def axis_traffic(dut):
    config = bench_config()
    p, knobs = config["params"], config["bench"]
    model = MODELS[config["design"]](p)
    n, mb = len(model.endpoints), p["max_bytes"]
    frames = knobs.get("frames", 200)
    percent = knobs["backpressure"]
    rng = random.Random(config["seed"])
    scoreboard = Scoreboard(CHECKS, mutate=knobs.get("mutation", False))

    per_endpoint = max(1, -(-frames // n))
    overlong = Traffic().overlong
    phases = [
        (name, messages(name, n, per_endpoint, mb, rng, overlong)) for name in ("random", "hotspot")
    ]
    # The model on the same frames: it raises if one went astray there.
    run_stream_model(model, phases, config["seed"], max_bytes=mb)
    want = [Counter() for _ in range(n)]
    sent, dropped = [0] * n, [0] * n
    for _, queues in phases:
        for src, queue in enumerate(queues):
            for dest, data in queue:
                if len(data) <= mb:
                    want[dest][tuple(data)] += 1
                    sent[src] += 1
                else:
                    dropped[src] += 1

    sources = [axis_end(dut, f"s_axis_{k}", AxiStreamSource, rng, percent) for k in range(n)]
    sinks = [axis_end(dut, f"m_axis_{k}", AxiStreamSink, rng, percent) for k in range(n)]
    await start_axis(dut)
    for _, queues in phases:
        for src, queue in enumerate(queues):
            for dest, data in queue:
                sources[src].send_nowait(AxiStreamFrame(list(data), tdest=dest))

    got = [Counter() for _ in range(n)]
    total = sum(sum(c.values()) for c in want)
    # Generous: the model's cycles with always-ready users, times the pauses' slowdown.
    limit = 20 * model.endpoints[0].cycle + 20_000
    started = time.perf_counter()
    cycles = received = 0

    def drain():
        nonlocal received
        for k, sink in enumerate(sinks):
            while not sink.empty():
                got[k][tuple(sink.recv_nowait().tdata)] += 1
                received += 1

    idle = lambda: all(s.idle() for s in sources) and all(s.idle() for s in sinks)  # noqa: E731
    while cycles < limit and not (received >= total and idle()):
        await RisingEdge(dut.aclk)
        drain()
        cycles += 1
    for _ in range(200):  # any duplicate comes out within a few round trips
        await RisingEdge(dut.aclk)
        drain()
    cycles += 200
    for k in range(n):
        scoreboard.checked += sum(want[k].values())
        where = f"frames received at endpoint {k}"
        if got[k] != want[k]:
            lost, extra = dict(want[k] - got[k]), dict(got[k] - want[k])
            scoreboard.fail(
                "message_mismatches", f"{where}: lost {lost}, unexpected or duplicated {extra}"
            )
        else:
            exp = sorted(want[k].elements())
            scoreboard.compare(
                "message_mismatches", where, sorted(got[k].elements()), exp, [str(f) for f in exp]
            )
    if received < total:
        scoreboard.fail("message_mismatches", f"{total - received} frames not in {limit} cycles")
    for key, values in (
        ("sent", sent),
        ("received", [sum(c.values()) for c in want]),
        ("dropped", dropped),
    ):
        have = [int(getattr(dut, f"{key}_{k}").value) for k in range(n)]
        scoreboard.compare("counter_mismatches", f"{key}_<k>", have, values)
    seconds = time.perf_counter() - started
    write_summary(
        config,
        scoreboard.summary(
            cycles,
            frames_sent=total,
            frames_received=received,
            frames_dropped=sum(dropped),
            retries=sum(int(getattr(dut, f"retries_{k}").value) for k in range(n)),
            backpressure=percent,
            model_cycles=model.endpoints[0].cycle,
            seconds=round(seconds, 3),
        ),
    )
    scoreboard.raise_on_mismatch()
