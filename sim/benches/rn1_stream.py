"""cocotb bench of the RN1 networks with an endpoint interface on every node, driven through
their streams: :class:`fattree.hdl.rn1.bidelta_stream.RN1BideltaStream` (``rn1-bidelta-stream``)
and :class:`fattree.hdl.rn1.fat_tree.RN1FatTreeStream` (``rn1-fat-tree``, 64 nodes); the
design's name picks the model (:data:`MODELS`).

Per endpoint ``e``: a stream user on ``tx__<e>__*`` that offers frames (one beat per byte,
``dest`` on the first, ``last`` on the last; a valid beat held until taken, idle cycles at
random; now and then a frame longer than ``max_bytes``, which must be dropped and counted),
and one on ``rx__<e>__*`` that holds ``ready`` low ``backpressure`` percent of the cycles.
Phases: random destinations (``frames`` messages in all), then a hot spot (every message to
endpoint 0), then bursts (every endpoint a one-byte message to one destination, offered
from the same cycle; :data:`BURST_MESSAGES` in all). For ``rn1-bidelta-stream``, then the
stress phases (:data:`STRESSED`): a hot spot whose receivers hold off for a while
(:func:`~fattree.sim.checks.rn1_endpoint.held_hotspot`: BLOCKED nine times in a row and
more, back-off waits of 64 cycles and more), and rounds that make the endpoints' heads meet at
the router in ways not met yet, tried on a copy of the model first
(:func:`~fattree.sim.checks.rn1_endpoint.meeting_rounds`: which inputs, which outputs held,
the random bit). Its model counts its cover points in every run, with or without
``--coverage``; then the phases that steer into what is left of them: a hot spot with
receivers stalled 99 % of the cycles (:func:`~fattree.sim.checks.rn1_endpoint.steering_phases`,
only while holes are left), and rounds tried on a copy of the model first that close the rest
(:func:`~fattree.sim.checks.rn1_endpoint.hole_rounds`, reported as ``steered``).
:class:`fattree.sim.checks.rn1_endpoint.StreamCheck` runs both checks:

* cycle by cycle, every output (``tx__e__ready``, ``rx__e__valid``, the ``rx`` beat while
  valid, the counters ``sent``, ``retries``, ``received``, ``dropped``, ``timeouts``) against
  the design's model (the network's model with the endpoint models, same seeds);
* message by message: each delivered exactly once, to its destination, with its bytes; the
  counters at the end against the traffic.

The summary gives the retries per message and the share delivered on the first try. A run
that has failed skips the phases left, so a broken design fails within a few phases' time.
"""

from __future__ import annotations

import random
import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.checks.rn1_endpoint import (
    CHECKS,
    STEER,
    HeadMeetings,
    StreamCheck,
    Traffic,
    held_hotspot,
    hole_rounds,
    meeting_rounds,
    messages,
    steering_phases,
)
from fattree.sim.cocotb_runner import ChangedInputs, bench_config, clock_and_reset, write_summary
from fattree.sim.models.rn1_endpoint import RN1BideltaStreamModel, RN1FatTreeStreamModel
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.bits import pack_fields
from fattree.spec.rn1_endpoint import TIMEOUT, tx_fields

COUNTERS = ("sent", "retries", "received", "dropped", "timeouts")
#: Messages of the burst phase, all endpoints to one destination at once in each round:
#: 24 rounds of 4 endpoints, 6 of 16, 2 of 64 (a round serialises at its destination).
BURST_MESSAGES = 96

#: Candidate rounds tried on a copy of the model to close the coverage's holes (none when
#: the phases before left no hole).
HOLE_TRIES = 400

#: Candidate rounds tried on a copy of the model for heads meeting at a router in new ways
#: (:func:`~fattree.sim.checks.rn1_endpoint.meeting_rounds`).
MEETING_TRIES = 80

#: Designs that get the stress phases (:func:`_stress`): the bidelta's, whose first-stage
#: routers :class:`~fattree.sim.checks.rn1_endpoint.HeadMeetings` watches.
STRESSED = ("rn1-bidelta-stream",)

#: The model of each design this bench runs, built from the design's parameters.
MODELS = {
    "rn1-bidelta-stream": lambda p: RN1BideltaStreamModel(
        p["endpoints"], p["seed"], p["retry"], p["max_bytes"], p.get("timeout", TIMEOUT)
    ),
    "rn1-fat-tree": lambda p: RN1FatTreeStreamModel(p["seed"], p["retry"], p["max_bytes"]),
}


class Ports:
    """The flattened Verilog ports: ``tx__e__valid/ready/payload`` (payload ``data``,
    ``dest``, ``last`` packed low bits first), ``rx__e__valid/ready/payload`` (``data``,
    ``last``), and the counters ``sent__e`` ..."""

    def __init__(self, dut, n: int):
        self.n = n
        self.fields = tx_fields(n)

        def ports(fmt):
            return [getattr(dut, fmt.format(e)) for e in range(n)]

        self.tx_valid, self.tx_payload = ports("tx__{}__valid"), ports("tx__{}__payload")
        self.rx_ready = ports("rx__{}__ready")
        self.tx_ready, self.rx_valid = ports("tx__{}__ready"), ports("rx__{}__valid")
        self.rx_payload = ports("rx__{}__payload")
        self.counters = {key: ports(key + "__{}") for key in COUNTERS}
        self.writer = ChangedInputs((self.tx_valid, self.tx_payload, self.rx_ready))

    def drive(self, inputs) -> None:
        tx = inputs["tx"]
        payload = [pack_fields(self.fields, data=d, dest=t, last=la) for _, d, t, la in tx]
        self.writer.write(([v for v, *_ in tx], payload, inputs["rx_ready"]))

    def sample(self) -> dict[str, list[int]]:
        out = {
            "tx_ready": [int(s.value) for s in self.tx_ready],
            "rx_valid": [int(s.value) for s in self.rx_valid],
        }
        out["rx_beat"] = [
            int(p.value) if v else 0 for p, v in zip(self.rx_payload, out["rx_valid"], strict=True)
        ]
        for key, handles in self.counters.items():
            out[key] = [int(s.value) for s in handles]
        return out


@cocotb.test()
async def traffic_phases(dut):
    config = bench_config()
    p, knobs = config["params"], config["bench"]
    model = MODELS[config["design"]](p)
    # Counted always where the model has cover points: the last phases steer into its
    # holes, with or without --coverage.
    coverage = model.start_coverage() if hasattr(model, "start_coverage") else None
    n, mb = len(model.endpoints), p["max_bytes"]
    frames = knobs.get("frames", 200)
    rng = random.Random(config["seed"])
    ports = Ports(dut, n)
    scoreboard = Scoreboard(CHECKS, mutate=knobs.get("mutation", False))
    traffic = Traffic(backpressure=knobs.get("backpressure", 20))
    check = StreamCheck(
        model,
        scoreboard,
        ports.sample,
        ports.drive,
        lambda: FallingEdge(dut.clk),
        max_bytes=mb,
        rng=random.Random(rng.getrandbits(32)),
        traffic=traffic,
    )
    ports.drive({"tx": [(0, 0, 0, 0)] * n, "rx_ready": [0] * n})
    # Cycle 0 of the model is the half cycle where this returns, in the reset state.
    await clock_and_reset(dut)
    per_endpoint = max(1, -(-frames // n))
    counts = {}
    started = time.perf_counter()
    for name in ("random", "hotspot"):
        queues = messages(name, n, per_endpoint, mb, rng, traffic.overlong)
        # A run that has failed skips the phases left: each would end only after its own
        # patience, and a failing mutant would run past its time limit.
        if not scoreboard.mismatches:
            counts[name] = await check.phase(name, queues, limit=20_000 * per_endpoint)
    # Bursts: every endpoint offers a one-byte message for the same destination from the same
    # cycle on (no idle beats), so their heads meet in one cycle and the losers retry in
    # step: the arbitration of three or more heads, and long BLOCKED streaks.
    check.traffic = Traffic(idle=0, backpressure=traffic.backpressure, overlong=0.0)
    counts["bursts"] = 0
    for burst in range(max(2, BURST_MESSAGES // n)):
        queues = [[(burst % n, [rng.getrandbits(8)])] for _ in range(n)]
        if not scoreboard.mismatches:
            counts["bursts"] += await check.phase("burst", queues, limit=20_000, settle=8)
    if config["design"] in STRESSED and not scoreboard.mismatches:
        await _stress(check, model, rng, counts)
    if coverage is not None and not scoreboard.mismatches:
        await _steer(check, model, rng, counts, backpressure=traffic.backpressure)
    seconds = time.perf_counter() - started
    stats, blocked = check.stats, check.blocked_per_message
    write_summary(
        config,
        scoreboard.summary(
            check.cycle,
            messages=counts,
            retries=stats["retries"],
            timeouts=stats["timeouts"],
            retries_per_message=round(stats["retries"] / max(1, stats["messages"]), 3),
            first_try=round(stats["first_try"] / max(1, stats["messages"]), 3),
            most_retries=max(blocked, default=0),
            dropped_frames=stats["dropped"],
            seconds=round(seconds, 3),
            cycles_per_second=round(check.cycle / seconds, 1) if seconds else None,
            **({"coverage": coverage.as_dict()} if knobs.get("coverage") else {}),
        ),
    )
    scoreboard.raise_on_mismatch()


async def _stress(check: StreamCheck, model, rng, counts: dict) -> None:
    """A hot spot whose receivers hold off for a while (long BLOCKED streaks: the back-off
    at its cap), then rounds that make heads meet at the router in ways not met yet (tried
    on a copy of the model first); none once the run has failed."""
    mb = check.max_bytes
    name, queues, traffic = held_hotspot(len(model.endpoints), mb, rng)
    check.traffic = traffic
    counts[name] = await check.phase(name, queues, limit=200_000)
    meetings = HeadMeetings(model)
    check.watch, check.traffic = meetings, STEER
    counts["meetings"] = 0
    tries = 0 if check.scoreboard.mismatches else MEETING_TRIES
    rounds = meeting_rounds(model, meetings, mb, random.Random(rng.getrandbits(32)), tries=tries)
    for name, queues, settle in rounds:
        counts["meetings"] += await check.phase(name, queues, limit=20_000, settle=settle)
        if check.scoreboard.mismatches:
            break
    check.watch = None


async def _steer(check: StreamCheck, model, rng, counts: dict, *, backpressure: int) -> None:
    """The phases that steer into the rules' rarer situations, then the rounds that close
    what they left of the model's coverage (tried on a copy of the model first)."""
    mb = check.max_bytes
    for name, queues, traffic in steering_phases(model, mb, rng, stalls=backpressure > 0):
        check.traffic = traffic
        counts[name] = await check.phase(name, queues, limit=200_000)
    check.traffic = STEER
    counts["steered"] = 0
    # A run that has failed already is not steered: the design no longer follows the model
    # the rounds are tried on, and a failing mutant would spend the tries for nothing.
    tries = 0 if check.scoreboard.mismatches else HOLE_TRIES
    for name, queues in hole_rounds(model, mb, random.Random(rng.getrandbits(32)), tries=tries):
        counts["steered"] += await check.phase(name, queues, limit=20_000)
        if check.scoreboard.mismatches:
            break
