"""The RN1 endpoint interface against its cycle-exact model, in lock step: one endpoint alone
(the network played by random, protocol-following stand-ins), and a network with an endpoint
on every node (``rn1-bidelta-stream``, ``rn1-fat-tree``) driven through its streams.

Checks (scoreboard keys):

* ``cycle_mismatches``: every output, every cycle, against the model: per endpoint
  ``tx_ready``, ``rx_valid``, the ``rx`` beat (``data | last << 8``, while valid),
  the counters ``sent``, ``retries``, ``received``, ``dropped``; alone also the network
  side (``o_fwd``, ``i_bk`` of both links).
* ``message_mismatches`` (network): every message is delivered exactly once, to its
  destination, with its bytes, whatever the backpressure; a frame longer than ``max_bytes``
  is delivered nowhere and counted in its sender's ``dropped``; at the end each endpoint's
  ``sent`` is the number of its messages and ``received`` the number delivered to it, and
  the ``retries`` of all endpoints are the BLOCKED statuses the network returned.

The user side is driven as a stream user would: a transmit beat, once valid, stays valid
with the same payload until taken; idle cycles between beats at random; ``rx.ready`` low at
random (``backpressure`` percent of the cycles).

``read()`` gives the outputs as a dict of lists (one entry per endpoint), ``drive(inputs)``
sets the inputs (a dict of lists), ``tick()`` waits one cycle.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ...spec.rn1 import BLOCKED, CONNECTED, ctrl_of, data_of, direction, word
from ...spec.rn1_bidelta import ENDPOINT_LINKS
from ..coverage import closing_rounds
from ..models.rn1_endpoint import RN1BideltaStreamModel, RN1EndpointModel, RN1FatTreeStreamModel
from ..scoreboard import Scoreboard

__all__ = [
    "CHECKS",
    "PATTERNS",
    "STREAM_OUTPUTS",
    "Traffic",
    "messages",
    "model_outputs",
    "StreamCheck",
    "EndpointCheck",
    "simulate_stream",
    "simulate_endpoint",
    "run_model",
    "run_stream_model",
    "stream_ports",
    "STEER",
    "steering_phases",
    "hole_rounds",
    "HeadMeetings",
    "held_hotspot",
    "meeting_rounds",
]

CHECKS = ("cycle_mismatches", "message_mismatches")
PATTERNS = ("random", "hotspot")
#: Per-endpoint outputs of the network with endpoints, in the order they are compared.
STREAM_OUTPUTS = (
    "tx_ready",
    "rx_valid",
    "rx_beat",
    "sent",
    "retries",
    "received",
    "dropped",
    "timeouts",
)


@dataclass(frozen=True)
class Traffic:
    """How the stream users behave: ``idle`` (percent of cycles a transmit beat is held
    back), ``backpressure`` (percent of cycles ``rx.ready`` is low), ``overlong``
    (probability that a frame is 1..3 bytes longer than ``max_bytes``), ``hold`` (cycles
    from a phase's start in which every receiver is not ready)."""

    idle: int = 20
    backpressure: int = 20
    overlong: float = 0.05
    hold: int = 0


def messages(
    pattern: str, endpoints: int, count: int, max_bytes: int, rng: random.Random, overlong=0.0
) -> list[list[tuple[int, list[int]]]]:
    """Per endpoint, ``count`` messages ``(dest, bytes)``: ``random`` destinations (itself
    included: the network routes that too) or ``hotspot`` (all to endpoint 0); 1 ..
    ``max_bytes`` bytes, or with probability ``overlong`` 1..3 bytes too many."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    queues = []
    for _ in range(endpoints):
        queue = []
        for _ in range(count):
            dest = rng.randrange(endpoints) if pattern == "random" else 0
            n = rng.randint(1, max_bytes)
            if rng.random() < overlong:
                n = max_bytes + rng.randint(1, 3)
            queue.append((dest, [rng.getrandbits(8) for _ in range(n)]))
        queues.append(queue)
    return queues


def model_outputs(eps: list[RN1EndpointModel]) -> dict[str, list[int]]:
    """The outputs :data:`STREAM_OUTPUTS` of the endpoint models (``rx_beat`` 0 while not
    valid: the hardware's payload then is whatever its buffer holds)."""
    return {
        "tx_ready": [ep.tx_ready for ep in eps],
        "rx_valid": [ep.rx_valid for ep in eps],
        "rx_beat": [(ep.rx_data | ep.rx_last << 8) if ep.rx_valid else 0 for ep in eps],
        "sent": [ep.sent for ep in eps],
        "retries": [ep.retries for ep in eps],
        "received": [ep.received for ep in eps],
        "dropped": [ep.dropped for ep in eps],
        "timeouts": [ep.timeouts for ep in eps],
    }


class _Source:
    """One endpoint's transmit side: offers its queue's frames beat by beat."""

    def __init__(self, queue, rng: random.Random, idle: int, endpoints: int):
        self.queue = list(queue)
        self.endpoints = endpoints
        self.rng, self.idle = rng, idle
        self.beat = 0
        self.valid = 0

    def offer(self) -> tuple[int, int, int, int]:
        """``(valid, data, dest, last)`` for this cycle; a valid beat stays until taken."""
        if not self.valid and self.queue and self.rng.randrange(100) >= self.idle:
            self.valid = 1
        if not self.valid:
            return (0, 0, 0, 0)
        dest, data = self.queue[0]
        last = int(self.beat == len(data) - 1)
        # Only the first beat's dest counts: the others carry another one.
        return (1, data[self.beat], (dest + self.beat) % self.endpoints, last)

    def taken(self) -> None:
        self.valid = 0
        dest, data = self.queue[0]
        self.beat += 1
        if self.beat == len(data):
            self.queue.pop(0)
            self.beat = 0


@dataclass
class _Phase:
    """One phase of :class:`StreamCheck`: its traffic, what must arrive, the counters it
    started from, and what has arrived so far."""

    name: str
    queues: list
    sources: list[_Source]
    ready_rng: random.Random
    #: Messages that must arrive, ``(dest, bytes)`` -> count.
    want: Counter
    #: Per endpoint, its messages that cannot be sent: too long, or from an endpoint with
    #: both outputs cut (dropped and counted in ``dropped``).
    unsent: list[int]
    #: The counters at the phase's start, per endpoint, and how many messages had ended.
    base: dict[str, list[int]]
    base_hist: list[int]
    #: Per endpoint, the bytes of the frame arriving.
    frames: list[list[int]]
    delivered: list[int]
    #: The cycle of the last delivery (or of the phase's start).
    progress: int
    #: The cycle the phase started in.
    start: int
    got: Counter = field(default_factory=Counter)
    #: The cycle of the first mismatch, once there is one.
    failed_at: int | None = None


class StreamCheck:
    """Drives phases of messages into the network with endpoints and checks it against
    ``model`` (:class:`RN1BideltaStreamModel`, :class:`RN1FatTreeStreamModel`).
    :attr:`cycle` counts every phase's cycles; :attr:`stats` gathers what the bench reports."""

    #: Once a check has failed, cycles without a delivered message after which a phase ends,
    #: and cycles after the first failure after which it ends anyway (a broken design that
    #: keeps delivering, wrongly, would otherwise run to the limit).
    patience = 2000
    after_failure = 5000

    def __init__(
        self,
        model: RN1BideltaStreamModel | RN1FatTreeStreamModel,
        scoreboard: Scoreboard,
        read: Callable[[], dict[str, list[int]]],
        drive: Callable[[dict[str, list]], None],
        tick: Callable[[], Awaitable],
        *,
        max_bytes: int,
        rng: random.Random | None = None,
        traffic: Traffic | None = None,
    ):
        self.model = model
        self.scoreboard = scoreboard
        self.read, self.drive, self.tick = read, drive, tick
        self.max_bytes = max_bytes
        self.rng = rng if rng is not None else random.Random(0)
        self.traffic = traffic or Traffic()
        self.n = len(model.endpoints)
        self.cycle = 0
        self.stats: Counter = Counter()
        self.blocked_per_message: list[int] = []
        #: Called with the model before each of its steps (:class:`HeadMeetings`), or None.
        self.watch: Callable | None = None

    async def phase(self, name: str, queues, limit: int = 100_000, settle: int = 64) -> int:
        """Send every queue (one per endpoint) until every message is delivered and
        ``settle`` more cycles passed (at most ``limit`` cycles); returns the messages."""
        run = self._start_phase(name, queues)
        start, quiet_since = self.cycle, None
        while self.cycle - start < limit:
            if self._gave_up(run):
                break
            await self._cycle(run)
            if self._all_done(run):
                quiet_since = self.cycle if quiet_since is None else quiet_since
                if self.cycle - quiet_since >= settle:
                    break
        else:
            self.scoreboard.fail(
                "message_mismatches",
                f"{name}: {sum(run.got.values())} of {sum(run.want.values())} messages "
                f"delivered in {limit} cycles",
            )
        self._check_phase(run)
        return sum(run.want.values())

    def _start_phase(self, name: str, queues) -> _Phase:
        """The phase's sources, what must arrive, and the counters it starts from."""
        n, mb, eps = self.n, self.max_bytes, self.model.endpoints
        sources = [
            _Source(q, random.Random(self.rng.getrandbits(32)), self.traffic.idle, n)
            for q in queues
        ]
        ready_rng = random.Random(self.rng.getrandbits(32))
        # An endpoint with both outputs cut (a fault) cannot send: each of its messages is
        # dropped after GIVE_UP timeouts, and counted.
        cut = set(getattr(self.model, "dead_outputs", ()))
        mute = [2 * e in cut and 2 * e + 1 in cut for e in range(n)]
        want = Counter(
            (d, tuple(b))
            for e, q in enumerate(queues)
            for d, b in q
            if len(b) <= mb and not mute[e]
        )
        return _Phase(
            name=name,
            queues=queues,
            sources=sources,
            ready_rng=ready_rng,
            want=want,
            unsent=[sum(len(b) > mb or mute[e] for _, b in q) for e, q in enumerate(queues)],
            base={
                key: [getattr(ep, key) for ep in eps]
                for key in ("sent", "retries", "received", "dropped", "timeouts")
            },
            base_hist=[len(ep.blocked_per_message) for ep in eps],
            frames=[[] for _ in range(n)],
            delivered=[0] * n,
            progress=self.cycle,
            start=self.cycle,
        )

    def _gave_up(self, run: _Phase) -> bool:
        """Whether a phase that failed already ends now: too long after its first mismatch,
        or nothing delivered for :attr:`patience` cycles (a broken design that stopped
        delivering would run to the limit: what fattree mutants would count as a timeout)."""
        sb = self.scoreboard
        if sb.mismatches and run.failed_at is None:
            run.failed_at = self.cycle
        if run.failed_at is not None and self.cycle - run.failed_at > self.after_failure:
            sb.fail(
                "message_mismatches",
                f"{run.name}: phase ended {self.after_failure} cycles after the first mismatch "
                f"(cycle {run.failed_at})",
            )
            return True
        if sb.mismatches and self.cycle - run.progress > self.patience:
            sb.fail(
                "message_mismatches",
                f"{run.name}: nothing delivered for {self.patience} cycles after a mismatch "
                f"(cycle {self.cycle}); phase ended",
            )
            return True
        return False

    async def _cycle(self, run: _Phase) -> None:
        """One cycle: every output compared with the model's, the users' beats and readiness
        driven into both, the clock, and the beats taken on either side counted."""
        n, eps = self.n, self.model.endpoints
        seen = self.read()
        want_out = model_outputs(eps)
        names = [f"{key}[{e}]" for key in STREAM_OUTPUTS for e in range(n)]
        self.scoreboard.compare(
            "cycle_mismatches",
            f"{run.name} cycle {self.cycle}",
            [v for key in STREAM_OUTPUTS for v in seen[key]],
            [v for key in STREAM_OUTPUTS for v in want_out[key]],
            names,
        )
        tx = [s.offer() for s in run.sources]
        held = self.cycle - run.start < self.traffic.hold
        rx_ready = [
            int(run.ready_rng.randrange(100) >= self.traffic.backpressure and not held)
            for _ in range(n)
        ]
        self.drive({"tx": tx, "rx_ready": rx_ready})
        if self.watch is not None:
            self.watch(self.model)
        self.model.step(tx, rx_ready)
        self.cycle += 1
        await self.tick()
        for e in range(n):
            if tx[e][0] and seen["tx_ready"][e]:
                run.sources[e].taken()
            if seen["rx_valid"][e] and rx_ready[e]:
                beat = seen["rx_beat"][e]
                run.frames[e].append(beat & 0xFF)
                if beat >> 8:
                    run.got[(e, tuple(run.frames[e]))] += 1
                    run.delivered[e] += 1
                    run.frames[e] = []
                    run.progress = self.cycle

    def _all_done(self, run: _Phase) -> bool:
        """Every message arrived, and every sender is done with its last one (one that
        cannot be sent ends only when it is given up)."""
        return (
            sum(run.got.values()) >= sum(run.want.values())
            and not any(s.queue for s in run.sources)
            and all(ep.tx_ready for ep in self.model.endpoints)
        )

    def _check_phase(self, run: _Phase) -> None:
        """At the phase's end: the messages delivered against those sent, and the counters,
        read from the design, against what the traffic says they must be."""
        sb, n, eps, name = self.scoreboard, self.n, self.model.endpoints, run.name
        sb.checked += sum(run.want.values())
        if run.got != run.want:
            sb.fail(
                "message_mismatches",
                f"{name}: messages missing {dict(run.want - run.got)}, "
                f"unexpected {dict(run.got - run.want)}",
            )
        if any(run.frames):
            sb.fail("message_mismatches", f"{name}: frames without last: {run.frames}")
        seen = self.read()
        expect = {
            "sent": [len(q) - run.unsent[e] for e, q in enumerate(run.queues)],
            "received": run.delivered,
            "dropped": run.unsent,
        }
        for key, values in expect.items():
            have = [seen[key][e] - run.base[key][e] for e in range(n)]
            if have != values:
                sb.fail("message_mismatches", f"{name}: {key} counters {have}, want {values}")
        retries = sum(seen["retries"][e] - run.base["retries"][e] for e in range(n))
        timeouts = sum(seen["timeouts"][e] - run.base["timeouts"][e] for e in range(n))
        hist = [b for e, ep in enumerate(eps) for b in ep.blocked_per_message[run.base_hist[e] :]]
        if retries + timeouts != sum(hist):
            sb.fail(
                "message_mismatches",
                f"{name}: {retries} retries and {timeouts} timeouts counted, "
                f"{sum(hist)} failed attempts seen",
            )
        self.blocked_per_message += hist
        self.stats["messages"] += sum(run.want.values())
        self.stats["retries"] += retries
        self.stats["timeouts"] += timeouts
        self.stats["first_try"] += sum(b == 0 for b in hist)
        self.stats["dropped"] += sum(run.unsent)


class EndpointCheck:
    """One :class:`RN1Endpoint` against :class:`RN1EndpointModel`, the network played by
    stand-ins: a *network output* per link of the endpoint that answers each of its
    transmissions (after its close, 0..``max_delay`` cycles later) CONNECTED or, with
    probability ``blocked``, BLOCKED; a *remote sender* per input that sends transmissions
    of 0 .. ``max_bytes + 1`` bytes after a head and waits for the answer. Every output is
    compared every cycle; the answers the remote senders see are counted.

    A fault: with probability ``silent`` a transmission gets no answer at all (a dead link
    or router on its way), and link ``dead`` (0 or 1; None: neither) never answers."""

    def __init__(
        self, model, scoreboard, read, drive, tick, *, rng=None, blocked=0.3, silent=0.0, dead=None
    ):
        self.model, self.scoreboard = model, scoreboard
        self.read, self.drive, self.tick = read, drive, tick
        self.rng = rng if rng is not None else random.Random(0)
        self.blocked, self.silent, self.dead = blocked, silent, dead
        self.cycle = 0
        self.stats: Counter = Counter()

    async def run(self, cycles: int, traffic: Traffic | None = None, go_every: int = 7) -> None:
        sb, rng, m = self.scoreboard, self.rng, self.model
        traffic = traffic or Traffic()
        mb = m.max_bytes
        source = _Source(
            messages("random", m.endpoints, cycles // 4, mb, rng, traffic.overlong)[0],
            random.Random(rng.getrandbits(32)),
            traffic.idle,
            m.endpoints,
        )
        # Network outputs: per link, cycles until the answer (None: no close seen yet).
        prev_fwd = [0, 0]
        answer_in: list = [None, None]
        answer: list = [0, 0]
        # Remote senders: words still to send per input, and whether one waits.
        words: list[list[int]] = [[], []]
        waiting = [False, False]
        names = list(STREAM_OUTPUTS) + ["busy", "o_fwd0", "o_fwd1", "i_bk0", "i_bk1"]
        for _ in range(cycles):
            seen = self.read()
            want = {k: v[0] for k, v in model_outputs([m]).items()}
            want |= {"busy": m.busy, "o_fwd0": m.o_fwd[0], "o_fwd1": m.o_fwd[1]}
            want |= {"i_bk0": m.i_bk[0], "i_bk1": m.i_bk[1]}
            sb.compare(
                "cycle_mismatches",
                f"cycle {self.cycle}",
                [seen[k] for k in names],
                [want[k] for k in names],
                names,
            )
            o_bk = [0, 0]
            i_fwd = [0, 0]
            for k in range(ENDPOINT_LINKS):
                fwd = seen[f"o_fwd{k}"]
                if ctrl_of(prev_fwd[k]) and not ctrl_of(fwd):
                    answer_in[k] = rng.randint(0, 3)
                    answer[k] = BLOCKED if rng.random() < self.blocked else CONNECTED
                    if k == self.dead or rng.random() < self.silent:
                        answer_in[k] = None
                        self.stats["unanswered"] += 1
                prev_fwd[k] = fwd
                if answer_in[k] is not None:
                    if answer_in[k] == 0:
                        o_bk[k] = word(0, answer[k])
                        answer_in[k] = None
                        self.stats["blocked_sent" if answer[k] == BLOCKED else "connected"] += 1
                    else:
                        answer_in[k] -= 1
                status = seen[f"i_bk{k}"]
                if waiting[k] and status in (word(0, CONNECTED), word(0, BLOCKED)):
                    waiting[k] = False
                    self.stats["remote_" + ("ok" if status == word(0, CONNECTED) else "no")] += 1
                if not words[k] and not waiting[k] and rng.random() < 0.2:
                    n = rng.choice([0, 1, mb, mb + 1, rng.randint(1, mb)])
                    words[k] = [word(1, rng.getrandbits(8)) for _ in range(n + 1)] + [0]
                if words[k]:
                    i_fwd[k] = words[k].pop(0)
                    waiting[k] = not words[k]
            tx = source.offer()
            rx_ready = int(rng.randrange(100) >= traffic.backpressure)
            go = int(self.cycle % go_every == 0)
            self.drive({"tx": tx, "rx_ready": rx_ready, "o_bk": o_bk, "i_fwd": i_fwd, "go": go})
            m.step(*tx, rx_ready, o_bk, i_fwd, go)
            self.cycle += 1
            await self.tick()
            if tx[0] and seen["tx_ready"]:
                source.taken()
        self.stats["sent"] = m.sent
        self.stats["retries"] = m.retries
        self.stats["received"] = m.received
        self.stats["dropped"] = m.dropped
        self.stats["timeouts"] = m.timeouts


def stream_ports(ctx, dut, n):
    """``read`` and ``drive`` of an :class:`RN1BideltaStream` or ``RN1FatTreeStream`` of
    ``n`` endpoints in
    amaranth.sim (``ctx``), as :class:`StreamCheck` calls them."""

    def read():
        out = {
            "tx_ready": [ctx.get(dut.tx[e].ready) for e in range(n)],
            "rx_valid": [ctx.get(dut.rx[e].valid) for e in range(n)],
            "sent": [ctx.get(dut.sent[e]) for e in range(n)],
            "retries": [ctx.get(dut.retries[e]) for e in range(n)],
            "received": [ctx.get(dut.received[e]) for e in range(n)],
            "dropped": [ctx.get(dut.dropped[e]) for e in range(n)],
            "timeouts": [ctx.get(dut.timeouts[e]) for e in range(n)],
        }
        out["rx_beat"] = [
            ctx.get(dut.rx[e].payload.as_value()) if out["rx_valid"][e] else 0 for e in range(n)
        ]
        return out

    def drive(inputs):
        for e in range(n):
            valid, data, dest, last = inputs["tx"][e]
            ctx.set(dut.tx[e].valid, valid)
            ctx.set(dut.tx[e].payload.data, data)
            ctx.set(dut.tx[e].payload.dest, dest)
            ctx.set(dut.tx[e].payload.last, last)
            ctx.set(dut.rx[e].ready, inputs["rx_ready"][e])

    return read, drive


def simulate_stream(
    dut,
    model: RN1BideltaStreamModel | RN1FatTreeStreamModel,
    phases,
    seed: int,
    *,
    max_bytes: int,
    traffic: Traffic | None = None,
    mutate: bool = False,
):
    """Run ``phases`` (``(name, count per endpoint)``) of messages through ``dut`` (an
    :class:`RN1BideltaStream` or ``RN1FatTreeStream``) in amaranth.sim against ``model``;
    returns the scoreboard and the check."""
    from ..testbench import simulate

    n = len(model.endpoints)
    scoreboard = Scoreboard(CHECKS, mutate=mutate)
    rng = random.Random(seed)
    traffic = traffic or Traffic()
    result = {}

    async def bench(ctx):
        read, drive = stream_ports(ctx, dut, n)
        check = StreamCheck(
            model,
            scoreboard,
            read,
            drive,
            ctx.tick,
            max_bytes=max_bytes,
            rng=rng,
            traffic=traffic,
        )
        for name, count in phases:
            queues = messages(name, n, count, max_bytes, rng, traffic.overlong)
            await check.phase(name, queues)
        result["check"] = check

    simulate(dut, bench)
    return scoreboard, result["check"]


def simulate_endpoint(dut, model: RN1EndpointModel, cycles: int, seed: int, **knobs):
    """One :class:`RN1Endpoint` against ``model`` for ``cycles`` cycles in amaranth.sim
    (:class:`EndpointCheck`); returns the scoreboard and the check."""
    from amaranth.hdl import Value

    from ..testbench import simulate

    scoreboard = Scoreboard(CHECKS)
    result = {}

    async def bench(ctx):
        def read():
            out = {
                "tx_ready": ctx.get(dut.tx.ready),
                "rx_valid": ctx.get(dut.rx.valid),
                "busy": ctx.get(dut.busy),
            }
            out["rx_beat"] = ctx.get(dut.rx.payload.as_value()) if out["rx_valid"] else 0
            for key in ("sent", "retries", "received", "dropped", "timeouts"):
                out[key] = ctx.get(getattr(dut, key))
            for k in range(ENDPOINT_LINKS):
                out[f"o_fwd{k}"] = ctx.get(Value.cast(dut.o[k].fwd))
                out[f"i_bk{k}"] = ctx.get(Value.cast(dut.i[k].bk))
            return out

        def drive(inputs):
            valid, data, dest, last = inputs["tx"]
            ctx.set(dut.tx.valid, valid)
            ctx.set(dut.tx.payload.data, data)
            ctx.set(dut.tx.payload.dest, dest)
            ctx.set(dut.tx.payload.last, last)
            ctx.set(dut.rx.ready, inputs["rx_ready"])
            ctx.set(dut.go, inputs["go"])
            for k in range(ENDPOINT_LINKS):
                ctx.set(Value.cast(dut.o[k].bk), inputs["o_bk"][k])
                ctx.set(Value.cast(dut.i[k].fwd), inputs["i_fwd"][k])

        check = EndpointCheck(
            model, scoreboard, read, drive, ctx.tick, rng=random.Random(seed), **knobs
        )
        await check.run(cycles)
        result["check"] = check

    simulate(dut, bench)
    return scoreboard, result["check"]


def run_model(
    endpoints: int,
    seed: int,
    retry: str,
    phases,
    traffic_seed: int = 1,
    *,
    max_bytes: int = 8,
    traffic: Traffic | None = None,
):
    """The :class:`StreamCheck` loop on the model of ``rn1-bidelta-stream`` alone
    (:func:`run_stream_model`); returns the check and the model."""
    model = RN1BideltaStreamModel(endpoints, seed, retry, max_bytes)
    check = run_stream_model(model, phases, traffic_seed, max_bytes=max_bytes, traffic=traffic)
    return check, model


def run_stream_model(
    model: RN1BideltaStreamModel | RN1FatTreeStreamModel,
    phases,
    traffic_seed: int = 1,
    *,
    max_bytes: int = 8,
    traffic: Traffic | None = None,
) -> StreamCheck:
    """The :class:`StreamCheck` loop on ``model`` alone (its outputs read back as the
    design's): what the network with endpoints does with ``phases`` (``(pattern, count per
    endpoint)``, or ``(name, queues)`` with the queues of :func:`messages`' form) of traffic,
    for the experiments and the policy comparisons. Returns the check (``stats``,
    ``blocked_per_message``, ``cycle``); AssertionError if a message went astray."""
    import asyncio

    endpoints = len(model.endpoints)
    rng = random.Random(traffic_seed)
    traffic = traffic or Traffic(overlong=0.0)

    async def tick():
        return None

    check = StreamCheck(
        model,
        Scoreboard(CHECKS),
        lambda: model_outputs(model.endpoints),
        lambda inputs: None,
        tick,
        max_bytes=max_bytes,
        rng=rng,
        traffic=traffic,
    )

    async def main():
        for name, count in phases:
            queues = (
                count
                if isinstance(count, list)
                else messages(name, endpoints, count, max_bytes, rng, traffic.overlong)
            )
            await check.phase(name, queues)

    asyncio.run(main())
    if check.scoreboard.mismatches:
        raise AssertionError(check.scoreboard.first_mismatch)
    return check


#: The users of the rounds that close coverage holes: no idle beats, no over-long frames,
#: receivers always ready, so a round runs on the design exactly as on the model's copy.
STEER = Traffic(idle=0, backpressure=0, overlong=0.0)


def steering_phases(model: RN1BideltaStreamModel, max_bytes: int, rng, *, stalls: bool = True):
    """Phases that steer into the protocol's rarer situations while ``model.coverage`` has
    holes, as ``(name, queues, traffic)``: ``hotspot-stalled``, every endpoint sending two
    messages to endpoint 0 while the receivers are not ready in 99 % of the cycles, so that
    its buffers stay full and the senders meet long runs of BLOCKED from the receiver
    (eight and more in a row, the back-off window at its cap); none with ``stalls`` False
    (receivers always ready)."""
    if stalls and model.coverage.holes():
        queues = messages("hotspot", len(model.endpoints), 2, max_bytes, rng)
        yield "hotspot-stalled", queues, Traffic(idle=0, backpressure=99, overlong=0.0)


def hole_rounds(model: RN1BideltaStreamModel, max_bytes: int, rng, *, tries: int):
    """Rounds of a few messages that close the holes of ``model.coverage``, each tried on a
    copy of the model first (users as :data:`STEER`): yields ``(name, queues)``, one round
    that hits a hole at a time, until no hole is left or ``tries`` candidates were tried.
    A candidate: 2 to ``n`` senders, their messages to one or two destinations, of one
    length (their heads meet in one cycle) or of random lengths; or to one destination, of
    two lengths one byte apart (heads one cycle apart: the most a round of
    ``retry="round"`` spreads them, so later heads find outputs held; with ``max_bytes``
    1, after a dropped frame of two or three bytes)."""
    n = len(model.endpoints)

    def candidate():
        spread = rng.choice((0, 1, max_bytes))  # lengths L .. L + spread
        senders = rng.sample(range(n), rng.randint(2, n))
        # Heads a cycle apart meet at the last stage only on the way to one destination.
        dests = [rng.randrange(n) for _ in range(1 if spread == 1 else rng.randint(1, 2))]
        length = rng.randint(1, max_bytes - min(spread, max_bytes - 1))
        queues = [[] for _ in range(n)]
        for e in senders:
            size = min(max_bytes, rng.randint(length, length + spread))
            queues[e] = [(rng.choice(dests), [rng.getrandbits(8) for _ in range(size)])]
            if spread == 1 and max_bytes == 1:  # one length only: a dropped frame first,
                queues[e].insert(0, (dests[0], [0] * rng.randint(2, 3)))  # 2 or 3 cycles
        return queues

    def reach(queues):
        return _tried(model, queues, max_bytes)

    for k, queues in closing_rounds(model, tries, candidate, reach):
        yield f"steer-{k}", queues


def _tried(model: RN1BideltaStreamModel, queues, max_bytes: int):
    """The coverage a round would reach: the phase run on a copy of ``model`` as the check
    runs it (users as :data:`STEER`)."""
    twin = model.clone()
    _run_on(twin, queues, max_bytes)
    return twin.coverage


def held_hotspot(endpoints: int, max_bytes: int, rng, *, hold: int = 3000):
    """``(name, queues, traffic)`` of a hot spot whose receivers are all not ready for the
    first ``hold`` cycles: endpoint 0's two buffers fill at once, and every other message
    meets BLOCKED from the receiver over and over, so the back-off runs through every
    window up to its cap (eight BLOCKED in a row and more) and draws waits of 64 cycles and
    more; then the receivers drain at random (20 % of the cycles not ready)."""
    queues = messages("hotspot", endpoints, 3, max_bytes, rng)
    return "hotspot-held", queues, Traffic(idle=0, backpressure=20, overlong=0.0, hold=hold)


class HeadMeetings:
    """The arbitrations of the first stage's routers of an :class:`RN1BideltaStreamModel`
    the endpoints' heads made: per router and direction, the inputs whose heads asked for
    it in one cycle (two or more), which of its two outputs were held, and the router's
    random bit for it. Called with the model before each of its steps
    (:attr:`StreamCheck.watch`); :attr:`seen` holds the keys met."""

    def __init__(self, model: RN1BideltaStreamModel):
        net = model.net.net
        # Endpoint link -> (router, input) of the first stage.
        self.entry = {source[1:]: sink[2:] for source, sink in net.links if source[0] == "ep_out"}
        self.prev = dict.fromkeys(self.entry, 0)
        self.seen: set[tuple] = set()

    def __call__(self, model: RN1BideltaStreamModel) -> None:
        asked: dict[tuple[int, int], list[int]] = {}
        for (e, k), (r, p) in self.entry.items():
            w = model.endpoints[e].o_fwd[k]
            if ctrl_of(w) and not ctrl_of(self.prev[e, k]):
                asked.setdefault((r, direction(data_of(w))), []).append(p)
            self.prev[e, k] = w
        for (r, d), inputs in asked.items():
            if len(inputs) < 2:
                continue
            router = model.net.routers[0, r]
            busy = (router.busy[2 * d], router.busy[2 * d + 1])
            self.seen.add((r, d, tuple(sorted(inputs)), busy, (router.lfsr.state >> d) & 1))


def meeting_rounds(
    model: RN1BideltaStreamModel, meetings: HeadMeetings, max_bytes: int, rng, *, tries: int
):
    """Rounds that make the endpoints' heads meet at a router in ways not met yet
    (:class:`HeadMeetings`), each tried on a copy of the model first (users as
    :data:`STEER`): yields ``(name, queues, settle)``, the phases of one round that met a
    new way, ``tries`` candidates in all. A candidate picks two to all endpoints, the
    output each is to use and one destination: first the endpoints not on that output
    send one byte to themselves (no two heads meet, so each succeeds at once and moves to
    its other output), then ``0 .. 7`` idle cycles (the routers' random bits move on),
    then each sends one message to the destination, all of one length (the heads meet in
    one cycle) or some a byte longer (their heads come a cycle later, to outputs held)."""
    n = len(model.endpoints)

    def candidate():
        senders = rng.sample(range(n), rng.randint(2, n))
        dest = rng.randrange(n)
        wanted = {e: rng.randrange(2) for e in senders}
        toggle = [
            [(e, [0])] if model.endpoints[e].port != wanted.get(e, 0) else [] for e in range(n)
        ]
        sizes = [1, max_bytes] if rng.random() < 0.5 else [rng.randint(1, max_bytes)]
        meet = [[] for _ in range(n)]
        for e in senders:
            meet[e] = [(dest, [rng.getrandbits(8) for _ in range(rng.choice(sizes))])]
        return [
            ("toggle", [q if e in wanted else [] for e, q in enumerate(toggle)], 8),
            ("idle", [[] for _ in range(n)], rng.randrange(8)),
            ("meet", meet, 8),
        ]

    for k in range(tries):
        phases = candidate()
        twin, watch = model.clone(), copy.deepcopy(meetings)
        before = len(watch.seen)
        for _, queues, settle in phases:
            _run_on(twin, queues, max_bytes, watch, settle=settle)
        if len(watch.seen) > before:
            for name, queues, settle in phases:
                yield f"{name}-{k}", queues, settle


def _run_on(twin, queues, max_bytes: int, watch=None, settle: int = 64) -> None:
    """The phase run to its end on the model ``twin`` alone, as the check runs it (users
    as :data:`STEER`), with ``watch`` (:attr:`StreamCheck.watch`)."""

    async def tick():
        return None

    outputs = lambda: model_outputs(twin.endpoints)  # noqa: E731
    check = StreamCheck(
        twin, Scoreboard(CHECKS), outputs, lambda _: None, tick, max_bytes=max_bytes, traffic=STEER
    )
    check.watch = watch
    # Nothing in the phase waits (the tick returns at once): run it to its end here, as
    # the bench may itself be running in an event loop.
    phase = check.phase("try", queues, limit=20_000, settle=settle)
    try:
        phase.send(None)
    except StopIteration:
        return
    raise AssertionError("a phase on the model alone waited")
