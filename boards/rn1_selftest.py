"""Self-test of DeHon's RN1 networks with an endpoint per node, the bidelta
(``rn1-bidelta-stream``) and the 64-node fat-tree (``rn1-fat-tree``, :class:`RN1FatTreeHarness`:
the same harness around the other network and its model): on-chip message traffic from every
endpoint's user side, an independent checker on every receive stream, and the reference
model's delivery trace replayed on silicon cycle for cycle.

One *run* of :class:`RN1Harness` (the harness :class:`fattree.boards.selftest.SelfTestCore`
replays forever) goes like this:

* **Traffic.** Every endpoint ``g`` has a source on its ``tx`` stream that sends
  ``messages`` messages a run, one beat per byte, each beat offered until the endpoint takes
  it (every source offers from the run's first cycle: a full load). The source's own 15-bit
  LFSR steps 8 bits on every beat taken, so what it sends is a function of the seed alone,
  whatever the timing: on a message's first beat the LFSR's low bits give the destination
  (``pattern="random"``: any endpoint, itself included: the network routes that too) and the
  number of data bytes; every data byte is the LFSR's low byte. The fixed patterns of
  :mod:`fattree.spec.traffic` (``hotspot``: all to endpoint 0; ``transpose``,
  ``bit-reversal``, ``shift``) send every message to the pattern's destination (an endpoint
  mapped to itself sends nothing). Every receiver is always ready.
* **Message** (:func:`message_fields`): a header of ``H`` bytes (source, destination,
  number of data bytes, sequence number, time stamp: the cycle the source began to offer the
  message, low bits), 0 .. ``2^dlen - 1`` data bytes, and a check byte (:func:`check_byte`:
  a rotate-and-XOR code over every byte before it; every single-bit error changes it). At
  most ``max_bytes`` bytes, so the endpoint never drops one.
* **Checker**, which does not look inside the network or the endpoints: every message that
  comes out of a ``rx`` stream must be addressed to that endpoint (under a permutation, from
  the one source that sends there), have the length its header says and a right check byte;
  at the end of the run (quiescent: every source done, every endpoint idle, no message
  waiting) the numbers of messages taken and delivered must equal the model's, the XOR of
  the signatures (header and check byte) of all messages sent must equal that of all
  messages delivered (a lost or duplicated message shows): exactly once; each endpoint's own
  counters must agree (``sent`` = its messages, ``received`` = the model's deliveries to it,
  ``dropped`` = 0), and the retries counted the model's. The run has the model's length: a
  network that has not delivered everything by then (hung, slow, lossy) ends it with an
  error.
* **Replay.** :func:`expected_run` runs the cycle-exact reference model
  (:class:`fattree.sim.models.rn1_endpoint.RN1BideltaStreamModel`;
  :func:`expected_fat_tree_run` its ``RN1FatTreeStreamModel``) with the sources' Python
  twin (:class:`SourcesTwin`) at build time. Its delivery trace (for each cycle in which
  messages end on ``rx``: the cycle, which endpoints, the XOR of the messages' signatures)
  goes into block RAM and the checker compares the network against it cycle for cycle.
* ``rejects`` are the endpoints' retries (BLOCKED statuses, each followed by a new attempt);
  the latency is the longest time of a run's messages from the first cycle a source offered
  it to the cycle its last byte left the receiving endpoint (from the stamps, a registered
  maximum tree).

``fault`` inverts endpoint 0's delivery bit as the checker sees it: that cycle disagrees
with the trace, so the error count rises.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring

from ..hdl._validation import validates_parameters
from ..hdl.lfsr import LFSR
from ..hdl.rn1.bidelta_stream import RN1BideltaStream
from ..hdl.rn1.fat_tree import RN1FatTreeStream
from ..params import check_int_range
from ..sim.models.rn1_endpoint import (
    LOAD,
    R_IDLE,
    RN1BideltaStreamModel,
    RN1FatTreeStreamModel,
)
from ..spec.lfsr import LFSRModel, derive_seed
from ..spec.rn1_bidelta import check_endpoints
from ..spec.rn1_endpoint import (
    RN1_FAT_TREE,
    TIMEOUT,
    check_max_bytes,
    check_retry,
    check_timeout,
    dest_bits,
    path_routers,
)
from ..spec.rn1_tree import SUBTREES
from .selftest import (
    PRIMING,
    ReplaysTrace,
    RunTrace,
    SelfTestCore,
    check_against_trace,
    check_pattern,
    check_totals_at_end,
    harness_signature,
    largest_latency,
    latency_tail,
    messages_per_source,
    pattern_destinations,
    permutation_sources,
    popcount,
    start_after_priming,
)

__all__ = [
    "PRIMING",
    "CODE_INIT",
    "check_byte",
    "message_fields",
    "header_word",
    "SourcesTwin",
    "RunTrace",
    "expected_run",
    "expected_fat_tree_run",
    "model_trace",
    "RN1Harness",
    "RN1FatTreeHarness",
    "rn1_selftest",
    "rn1_fat_tree_selftest",
]

#: Start value of the check byte's code (so the all-zero message is not valid).
CODE_INIT = 0xA5
# Each source's LFSR: 15 bits, the trinomial x^15 + x^14 + 1, 8 fresh bits per beat taken.
_LFSR_WIDTH = 15
_LFSR_TAPS = (15, 14)
_LFSR_STEPS = 8
#: Seed path of the sources' LFSRs (distinct from the other self-tests' banks).
_TRAFFIC_PATH = 0xB1
#: Processing nodes of ``rn1-fat-tree`` (one unit-tree stage).
FAT_TREE_NODES = SUBTREES
#: The model's run may not be longer than this (the replay memory's cycle field).
_LIMIT = 1 << 20


def _rotl(code: int) -> int:
    return ((code << 1) | (code >> 7)) & 0xFF


def check_byte(data) -> int:
    """The check byte of a message's bytes (all before it): ``c = CODE_INIT``, then per byte
    ``c = rotl(c, 1) XOR byte``. Bit ``j`` of the code is the parity of one bit of each byte
    (a different one per position), so every single-bit error changes it."""
    code = CODE_INIT
    for byte in data:
        code = _rotl(code) ^ byte
    return code


def message_fields(
    endpoints: int, max_bytes: int, stamp_bits: int, design: str = "rn1-bidelta-stream"
) -> dict[str, int]:
    """Fields of a message's header, low bits first: ``src``, ``dest`` (``lg endpoints``
    bits each), ``dlen`` (bits of the number of data bytes), ``seq`` (the rest of the header
    bytes, at least 2 bits), ``stamp`` (``stamp_bits``). The header is as few bytes ``H`` as
    hold them; ``dlen`` is as wide as ``max_bytes - H - 1`` data bytes allow (the check byte
    is last). ``ValueError`` naming the ``max_bytes`` needed (and the ``design`` whose
    self-test it is) if even no data bytes fit."""
    b = dest_bits(endpoints)
    for h in range(1, max_bytes):
        data_max = max_bytes - h - 1
        dlen = (data_max + 1).bit_length() - 1
        spare = 8 * h - (2 * b + dlen + stamp_bits)
        if spare >= 2:
            return {"src": b, "dest": b, "dlen": dlen, "seq": spare, "stamp": stamp_bits}
    need = -(-(2 * b + stamp_bits + 2) // 8) + 1
    raise ValueError(
        f"the {design} self-test needs max_bytes >= {need} (a header with source, "
        f"destination, sequence number and a {stamp_bits}-bit time stamp, and a check byte) "
        f"for endpoints={endpoints}, not {max_bytes}"
    )


def header_word(fields: dict[str, int], src: int, dest: int, dlen: int, seq: int, stamp: int):
    """The header as one integer (``H`` bytes, byte 0 first on the wire): seq and stamp
    modulo their fields."""
    word, at = 0, 0
    for name, value in (("src", src), ("dest", dest), ("dlen", dlen), ("seq", seq),
                        ("stamp", stamp)):  # fmt: skip
        word |= (value & ((1 << fields[name]) - 1)) << at
        at += fields[name]
    return word


def _header_bytes(fields: dict[str, int]) -> int:
    return sum(fields.values()) // 8


def _unpack_header(fields: dict[str, int], word: int) -> dict[str, int]:
    out, at = {}, 0
    for name, bits in fields.items():
        out[name] = (word >> at) & ((1 << bits) - 1)
        at += bits
    return out


def _lfsr_seed(seed: int, g: int) -> int:
    return derive_seed(_LFSR_WIDTH, seed, _TRAFFIC_PATH, g)


class SourcesTwin:
    """The traffic sources in Python, register for register: :meth:`outputs` is the ``tx``
    beat ``(valid, data, dest, last)`` each offers in this cycle, :meth:`clock` advances one
    clock given the endpoints' ``tx.ready``. :attr:`pending` lists per source the messages
    taken whole and not yet delivered: ``(sequence number, offer cycle, bytes)``."""

    def __init__(self, endpoints, fields, *, seed=1, pattern="random", messages=8):
        self.n = endpoints
        self.fields = fields
        self.h = _header_bytes(fields)
        self.quota = messages_per_source(pattern, endpoints, messages)
        self.fixed = pattern_destinations(pattern, endpoints)
        self.lfsrs = [
            LFSRModel(_LFSR_WIDTH, taps=_LFSR_TAPS, seed=_lfsr_seed(seed, g), steps=_LFSR_STEPS)
            for g in range(endpoints)
        ]
        self.pos = [0] * endpoints
        self.count = [0] * endpoints
        self.dest = [0] * endpoints
        self.dlen = [0] * endpoints
        self.stamp = [0] * endpoints  # the cycle the message began to be offered
        self.code = [CODE_INIT] * endpoints
        self.bytes: list[list[int]] = [[] for _ in range(endpoints)]
        self.pending: list[list[tuple[int, int, list[int]]]] = [[] for _ in range(endpoints)]

    def _current(self, g: int) -> tuple[int, int]:
        if self.pos[g]:
            return self.dest[g], self.dlen[g]
        r = self.lfsrs[g].state
        dest = r & (self.n - 1) if self.fixed is None else self.fixed[g]
        b = self.fields["src"]
        return dest, (r >> b) & ((1 << self.fields["dlen"]) - 1)

    def beat(self, g: int) -> tuple[int, int, int, int]:
        if self.count[g] == self.quota[g]:
            return (0, 0, 0, 0)
        dest, dlen = self._current(g)
        pos = self.pos[g]
        if pos < self.h:
            word = header_word(self.fields, g, dest, dlen, self.count[g], self.stamp[g])
            data = (word >> 8 * pos) & 0xFF
        elif pos < self.h + dlen:
            data = self.lfsrs[g].state & 0xFF
        else:
            data = self.code[g]
        return (1, data, dest, int(pos == self.h + dlen))

    def outputs(self) -> list[tuple[int, int, int, int]]:
        return [self.beat(g) for g in range(self.n)]

    def clock(self, t: int, tx_ready: list[int]) -> None:
        """One clock at run cycle ``t``."""
        for g in range(self.n):
            valid, data, dest, last = self.beat(g)
            if not (valid and tx_ready[g]):
                continue
            if self.pos[g] == 0:
                self.dest[g], self.dlen[g] = self._current(g)
            self.bytes[g].append(data)
            if last:
                self.pending[g].append((self.count[g], self.stamp[g], self.bytes[g]))
                self.bytes[g] = []
                self.pos[g] = 0
                self.count[g] += 1
                self.code[g] = CODE_INIT
                self.stamp[g] = t + 1
            else:
                self.pos[g] += 1
                self.code[g] = _rotl(self.code[g]) ^ data
            self.lfsrs[g].clock()

    def done(self) -> bool:
        return self.count == self.quota


def _model_run(model, fields, traffic_seed, pattern, messages, design):
    """One run of the network ``model`` (a fresh stream model: its endpoints on every node)
    with the sources' twin: ``(cycles, deliveries, messages, retries, longest)``, ``cycles``
    including the tail. Each delivered message is checked against the one sent (the model
    must deliver what the twin sent, once)."""
    eps = model.endpoints
    n = len(eps)
    twin = SourcesTwin(n, fields, seed=traffic_seed, pattern=pattern, messages=messages)
    h = twin.h
    frames: list[list[int]] = [[] for _ in range(n)]
    deliveries = []
    longest = 0
    last = None
    t = 0
    tail = latency_tail(n)
    while last is None or t <= last + tail:
        if t >= _LIMIT:
            raise ValueError(
                f"the {design} model did not deliver every message in {_LIMIT} "
                "cycles; fewer messages per run"
            )
        tx = twin.outputs()
        ready = [ep.tx_ready for ep in eps]
        mask = xor = 0
        for e, ep in enumerate(eps):
            if not ep.rx_valid:
                continue
            frames[e].append(ep.rx_data)
            if ep.rx_last:
                msg, frames[e] = frames[e], []
                head = _unpack_header(fields, int.from_bytes(bytes(msg[:h]), "little"))
                # The oldest pending message of its source with its sequence number.
                pending = twin.pending[head["src"]]
                k = next(
                    k
                    for k, (seq, _, _) in enumerate(pending)
                    if seq % (1 << fields["seq"]) == head["seq"]
                )
                _, stamp, sent = pending.pop(k)
                assert sent == msg and head["dest"] == e, (e, msg, sent)
                longest = max(longest, t - stamp)
                mask |= 1 << e
                xor ^= int.from_bytes(bytes(msg[:h] + msg[-1:]), "little")
        if mask:
            deliveries.append((t, mask, xor))
        model.step(tx, [1] * n)
        twin.clock(t, ready)
        quiet = all(
            ep.state == LOAD and not any(ep.full) and all(s == R_IDLE for s in ep.rstate)
            for ep in eps
        )
        if last is None and twin.done() and quiet:
            last = t
        t += 1
    assert not any(twin.pending) and not any(frames)
    retries = sum(ep.retries for ep in eps)
    assert all(ep.retries < 0xFFFF for ep in eps)  # the harness counts the low bit's toggles
    return t, tuple(deliveries), sum(twin.quota), retries, longest


def expected_run(
    endpoints=4,
    seed=1,
    retry="immediate",
    max_bytes=8,
    *,
    traffic_seed=1,
    pattern="random",
    messages=8,
    timeout=TIMEOUT,
) -> RunTrace:
    """Run the reference model of ``rn1-bidelta-stream`` with the sources' twin until every
    message is delivered and every endpoint is idle: the trace the hardware must reproduce
    (:func:`model_trace`)."""

    def model():
        return RN1BideltaStreamModel(endpoints, seed, retry, max_bytes, timeout=timeout)

    return model_trace(
        model, endpoints, max_bytes, traffic_seed=traffic_seed, pattern=pattern,
        messages=messages,
    )  # fmt: skip


def expected_fat_tree_run(
    seed=1, retry="immediate", max_bytes=8, *, traffic_seed=1, pattern="random", messages=8
) -> RunTrace:
    """The same for ``rn1-fat-tree`` (64 nodes): its reference model
    (:class:`~fattree.sim.models.rn1_endpoint.RN1FatTreeStreamModel`) with the sources' twin."""

    def model():
        return RN1FatTreeStreamModel(seed, retry, max_bytes)

    return model_trace(
        model, FAT_TREE_NODES, max_bytes, traffic_seed=traffic_seed, pattern=pattern,
        messages=messages, design="rn1-fat-tree",
    )  # fmt: skip


def model_trace(
    model, endpoints, max_bytes, *, traffic_seed, pattern, messages,
    design="rn1-bidelta-stream",
) -> RunTrace:  # fmt: skip
    """Run ``model()`` (a new stream model of ``endpoints`` nodes for each try) with the
    sources' twin until every message is delivered and every endpoint is idle. The time stamp
    must hold the longest latency, and its width changes the header and so the timing: start
    with 4 bits and widen it until the run's longest latency fits."""
    stamp = 4
    while True:
        fields = message_fields(endpoints, max_bytes, stamp, design)
        cycles, deliveries, sent, retries, longest = _model_run(
            model(), fields, traffic_seed, pattern, messages, design
        )
        need = max(2, longest.bit_length())
        if need <= stamp:  # widens at most a few times: the stamp only grows
            return RunTrace(cycles, deliveries, sent, retries, longest, tuple(fields.items()))
        stamp = need


class RN1Harness(ReplaysTrace, wiring.Component):
    """Sources, an :class:`~fattree.hdl.rn1.bidelta_stream.RN1BideltaStream`, checker and replay
    memory: one run of the self-test (see the module documentation).

    Parameters
    ----------
    endpoints, seed, retry, max_bytes, timeout
        The network's parameters (as :class:`~fattree.hdl.rn1.bidelta_stream.RN1BideltaStream`);
        ``max_bytes`` must hold a header and a check byte (:func:`message_fields`).
    traffic_seed : int
        Seed of the sources' LFSRs.
    pattern : str
        ``"random"`` or a fixed pattern of :data:`fattree.spec.traffic.PATTERNS`.
    messages : int
        Messages each endpoint sends per run (1 .. 1024).
    latency_bits : int
        Width of the reported latency (it saturates).
    network : callable, optional
        ``network(endpoints, seed, retry, max_bytes, timeout)`` builds the network under test; tests
        pass broken ones.
    """

    @validates_parameters
    def __init__(
        self,
        endpoints=4,
        seed=1,
        retry="immediate",
        max_bytes=8,
        timeout=TIMEOUT,
        *,
        traffic_seed=1,
        pattern="random",
        messages=8,
        latency_bits=16,
        network=None,
    ):
        self.endpoints = check_endpoints(endpoints)
        self.seed = check_int_range("seed", seed, 0)
        self.retry = check_retry(retry)
        self.max_bytes = check_max_bytes(max_bytes)
        self.timeout = check_timeout(timeout, path_routers("bidelta", self.endpoints))
        self.network = network or RN1BideltaStream
        self._check_traffic(traffic_seed, pattern, messages, latency_bits)
        self._replay(
            expected_run(
                endpoints, seed, self.retry, max_bytes, traffic_seed=traffic_seed,
                pattern=pattern, messages=messages, timeout=self.timeout,
            )
        )  # fmt: skip

    def _check_traffic(self, traffic_seed, pattern, messages, latency_bits) -> None:
        self.traffic_seed = check_int_range("traffic_seed", traffic_seed, 0, (1 << 32) - 1)
        self.pattern = check_pattern(pattern)
        self.messages = check_int_range("messages", messages, 1, 1024)
        self.latency_bits = check_int_range("latency_bits", latency_bits, 2, 32)

    def _replay(self, trace: RunTrace) -> None:
        """Take the model's run ``trace`` and size the message, the replay and the ports."""
        self.trace = trace
        self.fields = dict(self.trace.fields)
        self.header_bytes = _header_bytes(self.fields)
        #: A message's signature: its header and its check byte.
        self.signature_bits = 8 * (self.header_bytes + 1)
        self._size_replay(self.endpoints, self.signature_bits)
        super().__init__(harness_signature(max(self.endpoints, 3).bit_length(), self.latency_bits))

    def _network_under_test(self):
        """The network with its endpoints, as the harness drives it."""
        return self.network(self.endpoints, self.seed, self.retry, self.max_bytes, self.timeout)

    def describe(self) -> dict:
        """The run the board replays, from the model: for reports."""
        h = self.header_bytes
        return {
            "pattern": self.pattern,
            "traffic_seed": self.traffic_seed,
            "messages_per_endpoint": self.messages,
            "run_cycles": self.run_period,  # the model's run and the priming cycles
            "messages_per_run": self.trace.messages,
            "retries_per_run": self.trace.rejects,
            "max_latency": self.trace.max_latency,
            "header_fields": dict(self.fields),
            # Shortest and longest message: header, data bytes, check byte.
            "message_bytes": [h + 1, h + 2 ** self.fields["dlen"]],
            **self._replay_description(),
        }

    def _received(self) -> list[int]:
        """Messages the model delivers to each endpoint in a run (from the trace)."""
        return [
            sum(mask >> e & 1 for _, mask, _ in self.trace.deliveries)
            for e in range(self.endpoints)
        ]

    def elaborate(self, platform):
        m = Module()
        n, f, trace = self.endpoints, self.fields, self.trace

        # The first PRIMING cycles after a reset load the replay memory's first entries; the
        # network and the sources start after them (run cycle 0).
        start = start_after_priming(m, self.cycle_bits)
        net = self._network_under_test()
        start.live.submodules.net = net

        quota = messages_per_source(self.pattern, n, self.messages)
        fixed = pattern_destinations(self.pattern, n)
        taken = []  # a whole message taken in this cycle (its last beat)
        sent_xor = 0
        for g in range(n):
            whole, signature = self._source(m, start, net, g, quota[g], fixed)
            taken.append(whole)
            sent_xor = sent_xor ^ (signature & whole.replicate(self.signature_bits))

        sources = permutation_sources(fixed)
        delivered = []
        bad = []
        latencies = []
        got_xor = 0
        stamp_now = start.t[: f["stamp"]] if f["stamp"] <= self.cycle_bits else start.t
        for d in range(n):
            done, wrong, signature, latency = self._receiver(m, net, d, sources.get(d), stamp_now)
            bad.append(done & wrong)
            delivered.append(done)
            got_xor = got_xor ^ (signature & done.replicate(self.signature_bits))
            latencies.append(latency)

        check = check_against_trace(
            m,
            start,
            deliveries=trace.deliveries,
            cycle_bits=self.cycle_bits,
            delivered=delivered,
            fault=self.fault,
            payload_xor=got_xor,
            xor_bits=self.signature_bits,
            bad=bad,
        )
        rejects = self._retries(m, net)
        # Exactly once, and the endpoints' own counters agree with the run.
        end, end_bad = check_totals_at_end(
            m,
            start,
            check,
            cycles=trace.cycles,
            cycle_bits=self.cycle_bits,
            counts=[
                ("sent", popcount(taken), trace.messages),
                ("got", popcount(delivered), trace.messages),
                ("retries", rejects, trace.rejects),
            ],
            sent_xor=sent_xor,
            # Every source done, every endpoint ready for a frame, nothing waiting.
            idle=(
                ~Cat(*(net.tx[g].valid for g in range(n))).any()
                & Cat(*(net.tx[g].ready for g in range(n))).all()
                & ~Cat(*(net.rx[g].valid for g in range(n))).any()
            ),
            also=[("counters_bad", self._counters_wrong(net, quota))],
        )
        report = largest_latency(m, latencies, f["stamp"], self.latency_bits)
        m.d.comb += [
            self.checked.eq(popcount(delivered)),
            self.rejects.eq(rejects),
            self.errors.eq(check.replay_bad + end_bad + check.bad_q),
            self.max_latency.eq(report),
            self.end.eq(end),
        ]
        return m

    def _source(self, m, start, net, g, quota, fixed):
        """Endpoint ``g``'s source on its ``tx`` stream, one beat per byte: ``(whole,
        signature)``, its last beat taken in this cycle, and the message's signature (header
        and check byte)."""
        f, h, live = self.fields, self.header_bytes, start.live
        b, lb, st = f["src"], f["dlen"], f["stamp"]
        tx = net.tx[g]
        lfsr = LFSR(_LFSR_WIDTH, taps=_LFSR_TAPS, seed=_lfsr_seed(self.traffic_seed, g),
                    steps=_LFSR_STEPS)  # fmt: skip
        live.submodules[f"lfsr{g}"] = lfsr
        pos = Signal(range(self.max_bytes), name=f"src{g}_pos")
        count = Signal(range(self.messages + 1), name=f"src{g}_count")
        dest_q = Signal(b, name=f"src{g}_dest_q")
        dlen_q = Signal(max(lb, 1), name=f"src{g}_dlen_q")
        stamp_q = Signal(st, name=f"src{g}_stamp")
        code = Signal(8, init=CODE_INIT, name=f"src{g}_code")
        first = pos == 0
        fresh_dest = lfsr.value[:b] if fixed is None else Const(fixed[g], b)
        fresh_dlen = lfsr.value[b : b + lb] if lb else Const(0, 1)
        dest = Signal(b, name=f"src{g}_dest")
        dlen = Signal(max(lb, 1), name=f"src{g}_dlen")
        m.d.comb += [
            dest.eq(Mux(first, fresh_dest, dest_q)),
            dlen.eq(Mux(first, fresh_dlen, dlen_q)),
        ]
        seq = Signal(f["seq"], name=f"src{g}_seq")
        m.d.comb += seq.eq(count)
        header = Cat(Const(g, b), dest, dlen[:lb], seq, stamp_q)
        assert len(header) == 8 * h
        last = Signal(name=f"src{g}_last")
        m.d.comb += last.eq(pos == h + dlen)
        data = Signal(8, name=f"src{g}_data")
        with m.If(pos < h):
            with m.Switch(pos):
                for k in range(h):
                    with m.Case(k):
                        m.d.comb += data.eq(header[8 * k : 8 * k + 8])
        with m.Elif(last):
            m.d.comb += data.eq(code)
        with m.Else():
            m.d.comb += data.eq(lfsr.value[:8])
        valid = Signal(name=f"src{g}_valid")
        m.d.comb += valid.eq(start.primed & (count != quota))
        m.d.comb += [
            tx.valid.eq(valid),
            tx.payload.data.eq(data),
            tx.payload.dest.eq(dest),
            tx.payload.last.eq(last),
        ]
        take = Signal(name=f"src{g}_take")
        m.d.comb += [take.eq(valid & tx.ready), lfsr.en.eq(take)]
        with live.If(take):
            with live.If(first):
                live.d.sync += [dest_q.eq(fresh_dest), dlen_q.eq(fresh_dlen)]
            with live.If(last):
                live.d.sync += [
                    pos.eq(0),
                    count.eq(count + 1),
                    code.eq(CODE_INIT),
                    stamp_q.eq(start.t + 1),
                ]
            with live.Else():
                live.d.sync += [
                    pos.eq(pos + 1),
                    code.eq(Cat(code[7], code[:7]) ^ data),
                ]
        whole = Signal(name=f"src{g}_whole")
        m.d.comb += whole.eq(take & last)
        return whole, Cat(header, code)

    def _receiver(self, m, net, d, source, stamp_now):
        """The checker on endpoint ``d``'s ``rx`` stream, which does not look inside the
        network or the endpoints: ``(done, wrong, signature, latency)``, a message ends in
        this cycle, it is wrong (``source``: the one endpoint that may send to ``d``, or
        None), its signature, and its latency (zero when none ends)."""
        f, h = self.fields, self.header_bytes
        rx = net.rx[d]
        m.d.comb += rx.ready.eq(1)
        data = rx.payload.data
        rpos = Signal(range(self.max_bytes + 1), name=f"rx{d}_pos")
        hdr = Signal(8 * h, name=f"rx{d}_header")
        rcode = Signal(8, init=CODE_INIT, name=f"rx{d}_code")
        with m.If(rx.valid):
            with m.If(rx.payload.last):
                m.d.sync += [rpos.eq(0), rcode.eq(CODE_INIT)]
            with m.Else():
                m.d.sync += [rpos.eq(rpos + 1), rcode.eq(Cat(rcode[7], rcode[:7]) ^ data)]
                for k in range(h):
                    with m.If(rpos == k):
                        m.d.sync += hdr[8 * k : 8 * k + 8].eq(data)
        done = Signal(name=f"rx{d}_done")
        m.d.comb += done.eq(rx.valid & rx.payload.last)
        at = 0
        field = {}
        for name, bits in f.items():
            field[name] = hdr[at : at + bits]
            at += bits
        wrong = (field["dest"] != d) | (data != rcode)
        wrong = wrong | (rpos != h + (field["dlen"] if f["dlen"] else 0))
        if source is not None:
            wrong = wrong | (field["src"] != source)
        latency = Signal(f["stamp"], name=f"lat{d}")
        with m.If(done):
            m.d.comb += latency.eq(stamp_now - field["stamp"])
        return done, wrong, Cat(hdr, data), latency

    def _retries(self, m, net):
        """Retries in this cycle, summed over the endpoints: each endpoint's counter steps by
        one per BLOCKED (it never reaches its top in a run), so a change of its low bit is
        one retry."""
        retried = []
        for e in range(self.endpoints):
            low = Signal(name=f"retries{e}_low")
            m.d.sync += low.eq(net.retries[e][0])
            retried.append(net.retries[e][0] ^ low)
        rejects = Signal(range(self.endpoints + 1))
        m.d.comb += rejects.eq(popcount(retried))
        return rejects

    def _counters_wrong(self, net, quota):
        """The endpoints' own counters disagree with the run: ``sent`` with the messages
        each sends, ``received`` with the model's deliveries to it, ``dropped`` with none."""
        received = self._received()
        return Cat(
            *(
                (net.sent[e] != quota[e]) | (net.received[e] != received[e]) | (net.dropped[e] != 0)
                for e in range(self.endpoints)
            )
        ).any()


class RN1FatTreeHarness(RN1Harness):
    """The same self-test around :class:`~fattree.hdl.rn1.fat_tree.RN1FatTreeStream`
    (``rn1-fat-tree``: the 2-wide unit tree of 52 RN1 with an endpoint on each of its 64
    processing nodes), replaying :func:`expected_fat_tree_run`.

    Parameters
    ----------
    seed, retry, max_bytes
        The network's parameters (as :class:`~fattree.hdl.rn1.fat_tree.RN1FatTreeStream`);
        ``max_bytes`` must hold a header and a check byte (:func:`message_fields`).
    traffic_seed, pattern, messages, latency_bits
        As :class:`RN1Harness`.
    network : callable, optional
        ``network(seed, retry, max_bytes)`` builds the network under test; tests pass broken
        ones.
    """

    @validates_parameters
    def __init__(
        self,
        seed=1,
        retry="immediate",
        max_bytes=8,
        *,
        traffic_seed=1,
        pattern="random",
        messages=8,
        latency_bits=16,
        network=None,
    ):
        self.endpoints = FAT_TREE_NODES
        self.seed = RN1_FAT_TREE.check("seed", seed)
        self.retry = RN1_FAT_TREE.check("retry", retry)
        self.max_bytes = RN1_FAT_TREE.check("max_bytes", max_bytes)
        self.network = network or RN1FatTreeStream
        self._check_traffic(traffic_seed, pattern, messages, latency_bits)
        self._replay(
            expected_fat_tree_run(
                self.seed, self.retry, self.max_bytes, traffic_seed=traffic_seed,
                pattern=pattern, messages=messages,
            )
        )  # fmt: skip

    def _network_under_test(self):
        return self.network(self.seed, self.retry, self.max_bytes)


def rn1_fat_tree_selftest(params: dict, *, seed=1, blink_log2=22, fault_log2=None, **options):
    """The board self-test core of ``rn1-fat-tree``: the design's parameters (``seed`` of the
    routers' and endpoints' LFSRs, ``retry``, ``max_bytes``), ``seed`` the traffic's seed,
    ``options`` the harness's (``pattern``, ``messages``)."""
    harness = RN1FatTreeHarness(**params, traffic_seed=seed, **options)
    return SelfTestCore(harness, blink_log2=blink_log2, fault_log2=fault_log2)


def rn1_selftest(params: dict, *, seed=1, blink_log2=22, fault_log2=None, **options):
    """The board self-test core of ``rn1-bidelta-stream``: the design's parameters
    (``endpoints``, ``seed`` of the wiring and the LFSRs, ``retry``, ``max_bytes``), ``seed``
    the traffic's seed, ``options`` the harness's (``pattern``, ``messages``)."""
    harness = RN1Harness(**params, traffic_seed=seed, **options)
    return SelfTestCore(harness, blink_log2=blink_log2, fault_log2=fault_log2)
