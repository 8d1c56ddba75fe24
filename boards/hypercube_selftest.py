"""Self-test of the Connection Machine's hypercube (Stanfill 1987): on-chip traffic from every
processor, an independent checker, and the reference model's delivery trace replayed on
silicon cycle for cycle.

One *run* of :class:`HypercubeHarness` (the harness :class:`fattree.boards.selftest.
SelfTestCore` replays forever) goes like this:

* **Traffic.** Every network processor ``g`` has a source on its transmit stream and sends
  ``messages`` messages, offering each until the node takes it (every source offers from the
  run's first cycle: a full load, so buffers fill and nodes refer). ``pattern="random"``:
  message ``k`` goes to ``g XOR r_k``, ``r_k`` the ``k``-th word of the source's own LFSR,
  which steps only when a message is taken, so each source's sequence of destinations is a
  function of the seed alone, whatever the timing (``r_k = 0`` is a message to itself, which
  its node delivers without a hop). The fixed patterns of :mod:`fattree.spec.traffic`
  (``transpose``, ``bit-reversal``, ``shift``, ``hotspot``) on the ``dim + lg procs``-bit
  processor number send every message to the pattern's destination (a processor mapped to
  itself sends nothing). Every receiver is always ready.
* **Payload** (:func:`payload_fields`, the design's ``data_bits``): source, destination,
  sequence number (the source's count of messages sent), check code (the circuit tree's
  Hamming-style parities of those three, :func:`fattree.boards.circuit_selftest.check_code`)
  and a time stamp: the low bits of the run's cycle counter. The stamp follows the clock
  while a message waits to be taken (the node reads the payload only in the cycle it takes
  the beat), so it is the cycle the message entered the network and the receiver's clock
  minus the stamp is its time in network.
* **Checker**, which does not look inside the network: every delivered message must be at
  its destination (for the permutations: from the one source that sends there), with a
  correct check code and zero padding; at the end of the run (nothing in flight) the numbers
  sent and delivered must equal the model's, every source must have sent all it had, and
  the XOR of all payloads sent must equal the XOR of all payloads delivered (a lost or a
  duplicated message shows): exactly once. The run has the model's length; a network that
  has not delivered everything by then (hung, slow or lossy) ends the run with an error.
* **Replay.** :func:`expected_run` runs the cycle-exact reference model
  (:class:`fattree.sim.models.hypercube.HypercubeModel`) with the sources' Python twin
  (:class:`SourcesTwin`) at build time. Its delivery trace (for each cycle with a delivery:
  the cycle, which processors deliver, the XOR of their payloads) goes into block RAM and the
  checker compares the network against it cycle for cycle.
* ``rejects`` are the nodes' referrals (their ``refer`` outputs summed); the latency is the
  longest time in network of a run's messages (from the stamps, a registered maximum tree).

``fault`` inverts processor 0's delivery bit as the checker sees it: that cycle disagrees
with the trace, so the error count rises.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring

from ..hdl._validation import validates_parameters
from ..hdl.hypercube import HypercubeNetwork
from ..hdl.lfsr import LFSR
from ..params import check_int_range
from ..sim.models.hypercube import HypercubeModel
from ..spec.hypercube import check_hypercube, proc_bits
from ..spec.lfsr import LFSRModel, derive_seed
from .circuit_selftest import check_code, check_code_logic
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
    "payload_fields",
    "pack_payload",
    "SourcesTwin",
    "RunTrace",
    "expected_run",
    "HypercubeHarness",
    "hypercube_selftest",
]

# Each source's LFSR: 15 bits, the trinomial x^15 + x^14 + 1, one destination word
# (dim + lg procs <= 10 bits) per message taken.
_LFSR_WIDTH = 15
_LFSR_TAPS = (15, 14)
#: Seed path of the sources' LFSRs (distinct from the other self-tests' banks).
_TRAFFIC_PATH = 0x3C


def payload_fields(dim: int, procs: int, data_bits: int, stamp_bits: int) -> dict[str, int]:
    """Fields of a self-test message, low bits first: ``src``, ``dest`` (``dim + lg procs``
    bits each), ``seq`` (half of what the stamp leaves, at most 16 bits), ``check`` (the rest,
    at most 16 bits), ``stamp`` (``stamp_bits``), ``pad`` (zeros). ``ValueError`` naming the
    ``data_bits`` needed if they do not fit."""
    bits = dim + proc_bits(procs)
    spare = data_bits - 2 * bits - stamp_bits
    if spare < 2:
        raise ValueError(
            f"the hypercube self-test needs data_bits >= {2 * bits + stamp_bits + 2} "
            f"(source, destination, sequence number, check code, a {stamp_bits}-bit time "
            f"stamp) for dim={dim}, procs={procs}, not {data_bits}"
        )
    seq = min(16, spare // 2)
    check = min(16, spare - seq)
    return {
        "src": bits,
        "dest": bits,
        "seq": seq,
        "check": check,
        "stamp": stamp_bits,
        "pad": spare - seq - check,
    }


def pack_payload(fields: dict[str, int], src: int, dest: int, seq: int, stamp: int) -> int:
    """The message data: src, dest, seq (modulo its field), its check code, the stamp
    (modulo its field), zero padding."""
    h = fields["src"]
    seq &= (1 << fields["seq"]) - 1
    stamp &= (1 << fields["stamp"]) - 1
    return (
        src
        | (dest << h)
        | (seq << 2 * h)
        | (check_code(fields, src, dest, seq) << (2 * h + fields["seq"]))
        | (stamp << (2 * h + fields["seq"] + fields["check"]))
    )


def _lfsr_seed(seed: int, g: int) -> int:
    return derive_seed(_LFSR_WIDTH, seed, _TRAFFIC_PATH, g)


class SourcesTwin:
    """The traffic sources in Python, register for register: :meth:`outputs` is what they
    offer in run cycle ``t``, :meth:`clock` advances one clock given the nodes' ``tx_ready``.
    ``fields=None``: the payloads are all zero (for the model's timing-only first pass)."""

    def __init__(self, dim, procs, fields, *, seed=1, pattern="random", messages=8):
        self.processors = (1 << dim) * procs
        self.bits = dim + proc_bits(procs)
        self.fields = fields
        self.quota = messages_per_source(pattern, self.processors, messages)
        self.fixed = pattern_destinations(pattern, self.processors)
        self.lfsrs = [
            LFSRModel(_LFSR_WIDTH, taps=_LFSR_TAPS, seed=_lfsr_seed(seed, g), steps=self.bits)
            for g in range(self.processors)
        ]
        self.count = [0] * self.processors

    def destination(self, g: int) -> int:
        if self.fixed is not None:
            return self.fixed[g]
        return g ^ self.lfsrs[g].word()

    def outputs(self, t: int) -> tuple[list[int], list[int], list[int]]:
        n = self.processors
        valid = [int(self.count[g] < self.quota[g]) for g in range(n)]
        dest = [self.destination(g) for g in range(n)]
        if self.fields is None:
            data = [0] * n
        else:
            data = [pack_payload(self.fields, g, dest[g], self.count[g], t) for g in range(n)]
        return valid, dest, data

    def clock(self, tx_ready: list[int]) -> list[int]:
        """One clock; returns per processor whether its message was taken in this cycle."""
        taken = []
        for g in range(self.processors):
            take = int(self.count[g] < self.quota[g] and bool(tx_ready[g]))
            if take:
                self.count[g] += 1
                self.lfsrs[g].clock()
            taken.append(take)
        return taken

    def done(self) -> bool:
        return self.count == self.quota


def _model_run(dim, procs, buffers, data_bits, fields, seed, pattern, messages, limit):
    """One run of the model with the sources' twin: ``(cycles, deliveries, messages,
    rejects, longest)``, ``cycles`` including the tail."""
    model = HypercubeModel(dim, procs, buffers, data_bits)
    twin = SourcesTwin(dim, procs, fields, seed=seed, pattern=pattern, messages=messages)
    deliveries = []
    rejects = 0
    last = None
    t = 0
    tail = latency_tail(twin.processors)
    while last is None or t <= last + tail:
        if t >= limit:
            raise RuntimeError(
                f"the hypercube model did not deliver every message in {limit} cycles"
            )
        valid, dest, data = twin.outputs(t)
        out = model.step(valid, dest, data)
        mask = xor = 0
        for g, v in enumerate(out.rx_valid):
            if v:
                mask |= 1 << g
                xor ^= out.rx_data[g]
        if mask:
            deliveries.append((t, mask, xor))
        rejects += sum(out.refer)
        twin.clock(out.tx_ready)
        if last is None and twin.done() and model.in_flight() == 0:
            last = t
        t += 1
    longest = max((d.latency for d in model.delivered), default=0)
    return t, tuple(deliveries), model.injected, rejects, longest


def expected_run(
    dim,
    procs,
    buffers,
    data_bits,
    *,
    traffic_seed=1,
    pattern="random",
    messages=8,
    limit=1_000_000,
) -> RunTrace:
    """Run the reference model with the sources' twin until every message is delivered; the
    trace the hardware must reproduce. The payloads do not change the timing, so a first pass
    with empty payloads measures the longest time in network, which sizes the time stamp."""
    args = (traffic_seed, pattern, messages, limit)
    _, _, _, _, longest = _model_run(dim, procs, buffers, data_bits, None, *args)
    fields = payload_fields(dim, procs, data_bits, max(2, longest.bit_length()))
    cycles, deliveries, sent, rejects, longest_again = _model_run(
        dim, procs, buffers, data_bits, fields, *args
    )
    assert longest_again == longest  # the payload is opaque to the routers
    return RunTrace(cycles, deliveries, sent, rejects, longest, tuple(fields.items()))


class HypercubeHarness(ReplaysTrace, wiring.Component):
    """Sources, a :class:`~fattree.hdl.hypercube.HypercubeNetwork`, checker and replay memory:
    one run of the self-test (see the module documentation).

    Parameters
    ----------
    dim, procs, buffers, data_bits
        The network's parameters (as :class:`~fattree.hdl.hypercube.HypercubeNetwork`);
        ``data_bits`` must hold the payload (:func:`payload_fields`).
    traffic_seed : int
        Seed of the sources' LFSRs.
    pattern : str
        ``"random"`` or a fixed pattern of :data:`fattree.spec.traffic.PATTERNS`.
    messages : int
        Messages each processor sends per run (1 .. 1024).
    latency_bits : int
        Width of the reported latency (it saturates).
    network : callable, optional
        ``network(dim, procs, buffers, data_bits)`` builds the network under test; tests pass
        broken ones.
    """

    @validates_parameters
    def __init__(
        self,
        dim=2,
        procs=2,
        buffers=2,
        data_bits=16,
        *,
        traffic_seed=1,
        pattern="random",
        messages=8,
        latency_bits=16,
        network=None,
    ):
        check_hypercube(dim, procs, buffers, data_bits, model=False)
        self.dim, self.procs, self.buffers, self.data_bits = dim, procs, buffers, data_bits
        self.traffic_seed = check_int_range("traffic_seed", traffic_seed, 0, (1 << 32) - 1)
        self.pattern = check_pattern(pattern)
        self.messages = check_int_range("messages", messages, 1, 1024)
        self.latency_bits = check_int_range("latency_bits", latency_bits, 2, 32)
        self.network = network or HypercubeNetwork
        self.processors = (1 << dim) * procs
        self.trace = expected_run(
            dim, procs, buffers, data_bits, traffic_seed=traffic_seed, pattern=pattern,
            messages=messages,
        )  # fmt: skip
        self.fields = dict(self.trace.fields)
        self._size_replay(self.processors, data_bits)
        count_bits = max(self.processors, (1 << dim) * dim, 3).bit_length()
        super().__init__(harness_signature(count_bits, latency_bits))

    def describe(self) -> dict:
        """The run the board replays, from the model: for reports."""
        return {
            "pattern": self.pattern,
            "traffic_seed": self.traffic_seed,
            "messages_per_processor": self.messages,
            "run_cycles": self.run_period,  # the model's run and the priming cycles
            "messages_per_run": self.trace.messages,
            "referrals_per_run": self.trace.rejects,
            "max_latency": self.trace.max_latency,
            "payload_fields": dict(self.fields),
            **self._replay_description(),
        }

    def elaborate(self, platform):
        m = Module()
        n, f, trace = self.processors, self.fields, self.trace

        # The first PRIMING cycles after a reset load the replay memory's first entries; the
        # network and the sources start after them (run cycle 0).
        start = start_after_priming(m, self.cycle_bits)
        net = self.network(self.dim, self.procs, self.buffers, self.data_bits)
        start.live.submodules.net = net
        stamp_now = start.t[: f["stamp"]] if f["stamp"] <= self.cycle_bits else start.t
        taken, sent_xor = self._sources(m, start, net, stamp_now)
        delivered, bad, latencies, got_xor = self._checker(m, net, stamp_now)
        check = check_against_trace(
            m,
            start,
            deliveries=trace.deliveries,
            cycle_bits=self.cycle_bits,
            delivered=delivered,
            fault=self.fault,
            payload_xor=got_xor,
            xor_bits=self.data_bits,
            bad=bad,
        )
        # Exactly once.
        end, end_bad = check_totals_at_end(
            m,
            start,
            check,
            cycles=trace.cycles,
            cycle_bits=self.cycle_bits,
            counts=[
                ("sent", popcount(taken), trace.messages),
                ("got", popcount(delivered), trace.messages),
            ],
            sent_xor=sent_xor,
            idle=~Cat(*(net.tx[g].valid for g in range(n))).any(),
        )
        report = largest_latency(m, latencies, f["stamp"], self.latency_bits)
        rejects = popcount(list(net.refer))
        m.d.comb += [
            self.checked.eq(popcount(delivered)),
            self.rejects.eq(rejects),
            self.errors.eq(check.replay_bad + end_bad + check.bad_q),
            self.max_latency.eq(report),
            self.end.eq(end),
        ]
        return m

    def _sources(self, m, start, net, stamp_now):
        """Each processor's source on its transmit stream: ``(taken, sent_xor)``, per
        processor a message taken in this cycle, and the XOR of the payloads taken."""
        n, f = self.processors, self.fields
        h = f["src"]
        bits = self.data_bits
        quota = messages_per_source(self.pattern, n, self.messages)
        fixed = pattern_destinations(self.pattern, n)
        taken = []
        sent_xor = 0
        for g in range(n):
            tx = net.tx[g]
            count = Signal(range(self.messages + 1), name=f"src{g}_count")
            dest = Signal(h, name=f"src{g}_dest")
            if fixed is None:
                lfsr = LFSR(_LFSR_WIDTH, taps=_LFSR_TAPS, seed=_lfsr_seed(self.traffic_seed, g),
                            steps=h)  # fmt: skip
                start.live.submodules[f"lfsr{g}"] = lfsr
                m.d.comb += dest.eq(lfsr.value[:h] ^ g)
            else:
                m.d.comb += dest.eq(fixed[g])
            valid = Signal(name=f"src{g}_valid")
            m.d.comb += valid.eq(start.primed & (count != quota[g]))
            seq = Signal(f["seq"], name=f"src{g}_seq")
            m.d.comb += seq.eq(count)
            covered = Cat(Const(g, h), dest, seq)
            payload = Signal(bits, name=f"src{g}_payload")
            m.d.comb += [
                payload.eq(Cat(covered, check_code_logic(f, covered), stamp_now)),
                tx.valid.eq(valid),
                tx.payload.dest.eq(dest),
                tx.payload.data.eq(payload),
            ]
            take = Signal(name=f"src{g}_taken")
            m.d.comb += take.eq(valid & tx.ready)
            taken.append(take)
            if fixed is None:
                m.d.comb += lfsr.en.eq(take)
            with start.live.If(take):
                start.live.d.sync += count.eq(count + 1)
            sent_xor = sent_xor ^ (payload & take.replicate(bits))
        return taken, sent_xor

    def _checker(self, m, net, stamp_now):
        """The checker on every receive stream, which does not look inside the network:
        ``(delivered, bad, latencies, got_xor)``, per processor a delivery, a wrong one and
        its time in network in this cycle, and the XOR of the payloads delivered."""
        n, f = self.processors, self.fields
        h = f["src"]
        stamp_at = 2 * h + f["seq"] + f["check"]
        covered_bits = 2 * h + f["seq"]
        sources = permutation_sources(pattern_destinations(self.pattern, n))
        delivered = []
        bad = []
        latencies = []
        got_xor = 0
        for d in range(n):
            rx = net.rx[d]
            m.d.comb += rx.ready.eq(1)
            data = rx.payload.data
            src = data[:h]
            dst = data[h : 2 * h]
            code = data[covered_bits : covered_bits + f["check"]]
            stamp = data[stamp_at : stamp_at + f["stamp"]]
            wrong = (dst != d) | (code != check_code_logic(f, data[:covered_bits]))
            if d in sources:
                wrong = wrong | (src != sources[d])
            if f["pad"]:
                wrong = wrong | data[stamp_at + f["stamp"] :].any()
            bad.append(rx.valid & wrong)
            delivered.append(rx.valid)
            got_xor = got_xor ^ (data & rx.valid.replicate(self.data_bits))
            latency = Signal(f["stamp"], name=f"lat{d}")
            with m.If(rx.valid):
                m.d.comb += latency.eq(stamp_now - stamp)
            latencies.append(latency)
        return delivered, bad, latencies, got_xor


def hypercube_selftest(
    params: dict, *, seed=1, blink_log2=22, fault_log2=None, **options
) -> SelfTestCore:
    """The board self-test core of the hypercube: the design's parameters (``dim``,
    ``procs``, ``buffers``, ``data_bits``), ``seed`` the traffic's seed, ``options`` the
    harness's (``pattern``, ``messages``)."""
    harness = HypercubeHarness(**params, traffic_seed=seed, **options)
    return SelfTestCore(harness, blink_log2=blink_log2, fault_log2=fault_log2)
