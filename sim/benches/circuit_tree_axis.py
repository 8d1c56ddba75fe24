"""cocotb bench of the circuit tree's AXI4-Stream top (``circuit_tree_axis``, docs/axis.md),
driven by cocotbext-axi as a user outside Amaranth would drive it.

Per leaf ``k``: an ``AxiStreamSource`` on ``s_axis_<k>`` and an ``AxiStreamSink`` on
``m_axis_<k>`` (``AxiStreamBus.from_prefix``; clock ``aclk``, reset ``aresetn`` active low;
``byte_lanes=1``: one AXI "byte" is one network word of ``width`` bits, whatever the width),
each with a random pause generator: a source idles, and a sink holds ``tready`` low, in a
cycle with the probability of the bench knob ``backpressure`` (percent, default from the
design table).

Traffic is the reference model's (:func:`fattree.sim.models.circuit.traffic`): random
(``frames`` messages in all), transpose, bit reversal, a random cyclic shift and a hot spot,
all queued at once, one frame of ``length`` words per message with ``tdest`` its destination.
The expectation is the model run alone on the same traffic
(:func:`fattree.sim.models.circuit.run_model`): the messages each leaf receives. The bench
knows nothing of the RTL but its port names; the cycle-exact comparison is the native bench's
job (``sim/benches/circuit_tree.py``). Checks (summary keys):

* ``message_mismatches``: per leaf, the frames received (as word tuples, sorted: the network
  may reorder messages from different sources) against the model's, so every frame is
  delivered exactly once, at the right leaf, with its data; a frame still missing when the
  cycle limit is reached fails too;
* ``dropped_mismatches``: afterwards every leaf sends malformed frames (one word short, when
  ``length > 1``; one word long; addressed to itself): none may come out anywhere, and each
  leaf's ``dropped_<k>`` must count exactly those.
"""

from __future__ import annotations

import random
import time
from collections import Counter

import cocotb
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamFrame, AxiStreamSink, AxiStreamSource

from fattree.sim.axis_ends import axis_end, start_axis
from fattree.sim.checks.circuit_tree import MODELS, bench_phases
from fattree.sim.cocotb_runner import bench_config, write_summary
from fattree.sim.models.circuit import run_model
from fattree.sim.scoreboard import Scoreboard

CHECKS = ("message_mismatches", "dropped_mismatches")


def words(data: int, width: int, length: int) -> tuple[int, ...]:
    """A message's ``length`` words, word 0 (the low bits) first: the frame's beats."""
    mask = (1 << width) - 1
    return tuple((data >> (width * i)) & mask for i in range(length))


class Leaves:
    """One cocotbext-axi source and sink per leaf, and what each sink has received."""

    def __init__(self, dut, leaves: int, rng: random.Random, percent: int):
        self.sources, self.sinks = [], []
        for k in range(leaves):
            self.sources.append(axis_end(dut, f"s_axis_{k}", AxiStreamSource, rng, percent))
            self.sinks.append(axis_end(dut, f"m_axis_{k}", AxiStreamSink, rng, percent))
        self.received: list[list[tuple[int, ...]]] = [[] for _ in range(leaves)]

    def drain(self) -> None:
        for k, sink in enumerate(self.sinks):
            while not sink.empty():
                self.received[k].append(tuple(sink.recv_nowait().tdata))

    def count(self) -> int:
        return sum(map(len, self.received))

    def idle(self) -> bool:
        return all(s.idle() for s in self.sources) and all(s.idle() for s in self.sinks)


async def run_until(dut, leaves: Leaves, want: int, limit: int, settle: int) -> int:
    """Clock until ``want`` frames arrived and everything is idle (at most ``limit`` cycles),
    then ``settle`` more cycles to see any duplicate; returns the cycles run."""
    cycles = 0
    while cycles < limit and not (leaves.count() >= want and leaves.idle()):
        await RisingEdge(dut.aclk)
        leaves.drain()
        cycles += 1
    for _ in range(settle):
        await RisingEdge(dut.aclk)
    leaves.drain()
    return cycles + settle


@cocotb.test()
async def axis_traffic(dut):
    config = bench_config()
    p = config["params"]
    n, width, length = p["leaves"], p["width"], p["length"]
    frames = config["bench"].get("frames", 200)
    percent = config["bench"]["backpressure"]
    rng = random.Random(config["seed"])
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))

    phases = [queues for _, queues in bench_phases(n, width, length, rng, frames)]
    queues = [[m for phase in phases for m in phase[k]] for k in range(n)]
    model = run_model(MODELS[config["design"]](p), queues)
    want = [[] for _ in range(n)]
    for leaf, data in model["received"]:
        want[leaf].append(words(data, width, length))
    total = sum(map(len, want))

    leaves = Leaves(dut, n, rng, percent)
    await start_axis(dut)

    for k, queue in enumerate(queues):
        for dest, data in queue:
            leaves.sources[k].send_nowait(
                AxiStreamFrame(list(words(data, width, length)), tdest=dest)
            )
    started = time.perf_counter()
    # Generous: the model's own time with always-ready receivers, times the pauses' slowdown.
    limit = 20 * model["cycles"] * length + 10_000
    cycles = await run_until(dut, leaves, total, limit, settle=20 * length + 50)
    for k in range(n):
        got, exp = sorted(leaves.received[k]), sorted(want[k])
        scoreboard.checked += len(exp)
        where = f"frames received at leaf {k}"
        if len(got) == len(exp):
            names = [f"frame {i} (sorted)" for i in range(len(exp))]
            scoreboard.compare("message_mismatches", where, got, exp, names)
        else:
            lost, extra = dict(Counter(exp) - Counter(got)), dict(Counter(got) - Counter(exp))
            scoreboard.fail(
                "message_mismatches", f"{where}: lost {lost}, unexpected or duplicated {extra}"
            )
    if leaves.count() < total:
        scoreboard.fail(
            "message_mismatches", f"{total - leaves.count()} frames not delivered in {limit} cycles"
        )

    # Malformed frames: each is dropped and counted at its sender, none comes out.
    bad = 0
    for k in range(n):
        other = (k + 1) % n
        frames_k = [[1] * (length + 1)]  # one word too many
        if length > 1:
            frames_k.append([2] * (length - 1))  # one word short
        frames_k.append([3] * length)  # to itself
        for tdata in frames_k:
            leaves.sources[k].send_nowait(
                AxiStreamFrame(tdata, tdest=k if tdata[0] == 3 else other)
            )
        bad = len(frames_k)
    before = leaves.count()
    cycles += await run_until(dut, leaves, before, limit, settle=20 * length + 50)
    for k in range(n):
        scoreboard.compare(
            "dropped_mismatches",
            f"dropped_{k} after the malformed frames",
            int(getattr(dut, f"dropped_{k}").value),
            bad,
        )
    if leaves.count() != before:
        scoreboard.fail(
            "dropped_mismatches", f"{leaves.count() - before} malformed frames came out"
        )
    seconds = time.perf_counter() - started

    write_summary(
        config,
        scoreboard.summary(
            cycles,
            frames_sent=total,
            frames_received=before,
            malformed_frames=bad * n,
            backpressure=percent,
            model_cycles=model["cycles"],
            seconds=round(seconds, 3),
        ),
    )
    scoreboard.raise_on_mismatch()
