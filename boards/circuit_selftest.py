"""Self-test of the circuit-switched fat trees (Strumpen and Krishnamurthy's, and the fast
tree reworked from it): on-chip traffic, an independent checker, and the reference model's
delivery trace replayed on silicon.

Both trees have the same stream ports (``tx``, ``rx`` per node, ``tx_done`` and ``tx_reject``
pulses), so one harness, :class:`StreamTreeHarness`, tests either; :class:`CircuitTreeHarness`
gives it the paper tree and its model, :class:`fattree.boards.circuit_fast_selftest.
CircuitFastTreeHarness` the fast tree and its. One *run* of a harness (which :class:`fattree.
boards.selftest.SelfTestCore` replays forever) goes like this:

* **Traffic.** Every node has a source on its transmit stream. In each of the first
  ``inject_cycles`` cycles a free source draws its next message: with ``pattern="random"``
  an ``lg n``-bit random word ``r`` from a bank of LFSRs, destination ``node XOR r`` (no
  message when ``r = 0``, so destinations are uniform over the other nodes); with the
  papers' fixed patterns (``transpose``, ``bit-reversal``, ``shift``, ``hotspot``) the
  pattern's destination every time (a node mapped to itself sends nothing). A source offers
  a message until the interface takes it (as many in flight per node as the interface
  allows: one in the paper tree, ``window`` in the fast tree). Every receiver is always ready.
* **Payload** (:func:`payload_fields`): source, destination, a per-source sequence number and
  a check code (Hamming-style parities of the other fields, XOR a constant so that an
  all-zero payload is wrong), in the message's ``width * length`` data bits.
* **Checker**, which does not look inside the network: every delivered message must be at
  its destination, from another node, with a correct check code and zero padding; at the end
  of the run (a quiescent point: nothing in flight) the numbers sent, acknowledged and
  delivered must agree with each other and with the model's, and the XOR of all payloads
  sent must equal the XOR of all payloads delivered (a duplicate or a lost message shows).
* **Replay.** :func:`run_model` runs the cycle-exact reference model
  (:class:`fattree.sim.models.circuit.CircuitTreeModel`, :func:`expected_run`; or the fast
  tree's) on the same seeds and the same traffic (the sources' Python twin) at build time.
  Its delivery trace (for each cycle with a delivery: the cycle, which nodes deliver, the XOR
  of their payloads; a payload counts only where it is delivered) goes into block RAM, and
  the checker compares the network against it cycle for cycle.
* **Latency**: per node, the longest wait, with messages in flight, for the next
  ``tx_done``; with one message in flight (the paper tree) that is each message's time from
  being taken to its acknowledgement. (A fast tree's ``tx_done`` does not say which of the
  ``window`` messages it is for, so per-message latency is not visible at its ports.)
* The run lasts exactly as long as the model needs to deliver everything (plus two cycles);
  then the core resets the harness and the same run starts again, after :data:`PRIMING`
  cycles that load the replay memory's first entries. The comparisons are registered, so
  the last cycle of a run (two cycles after the model's last event) is not compared.

``fault`` inverts node 0's delivery bit as the checker sees it: that cycle disagrees with the
trace, so the error count rises.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring

from ..hdl._validation import validates_parameters
from ..hdl.circuit_tree import CircuitFatTree
from ..hdl.lfsr import LFSR
from ..params import check_int_range, check_power_of_two
from ..sim.models.circuit import CircuitTreeModel
from ..spec.circuit import check_retry
from ..spec.lfsr import LFSRModel, derive_seed
from .selftest import (
    PRIMING,
    ReplaysTrace,
    RunTrace,
    SelfTestCore,
    check_against_trace,
    check_pattern,
    check_totals_at_end,
    harness_signature,
    pattern_destinations,
    popcount,
    start_after_priming,
)

__all__ = [
    "PRIMING",
    "payload_fields",
    "check_code",
    "check_code_logic",
    "pack_payload",
    "SourcesTwin",
    "RunTrace",
    "run_model",
    "expected_run",
    "StreamTreeHarness",
    "CircuitTreeHarness",
    "circuit_tree_selftest",
]

# Random bits from 31-bit Fibonacci LFSRs with the trinomial x^31 + x^28 + 1, 28 per clock.
_LFSR_WIDTH = 31
_LFSR_TAPS = (31, 28)
_LFSR_STEPS = 28
#: Seed path of the traffic LFSR bank (distinct from every router's and interface's).
_TRAFFIC_PATH = 0x7A


def payload_fields(
    leaves: int, width: int, length: int, design: str = "circuit-tree-paper"
) -> dict[str, int]:
    """Fields of a self-test message, low bits first: ``src``, ``dest`` (``lg n`` bits each),
    ``seq`` (half of what is left, at most 16 bits), ``check`` (the rest, at most 16 bits),
    ``pad`` (zeros). ``ValueError`` naming ``design`` if ``width * length < 2 lg n + 2``."""
    h = leaves.bit_length() - 1
    bits = width * length
    spare = bits - 2 * h
    if spare < 2:
        raise ValueError(
            f"the {design} self-test needs width * length >= {2 * h + 2} payload bits "
            f"(source, destination, sequence number, check code) for {leaves} leaves, "
            f"not {bits}"
        )
    seq = min(16, spare // 2)
    check = min(16, spare - seq)
    return {"src": h, "dest": h, "seq": seq, "check": check, "pad": spare - seq - check}


def _check_masks(fields: dict[str, int]) -> list[int]:
    """Per check bit, the mask of the covered bits (src, dest, seq) whose parity it is.

    A Hamming-style parity check: covered bit ``k`` is in the masks of the set bits of
    ``k mod (2^C - 1) + 1`` (never zero), so every single-bit error changes the code, and
    two errors within ``2^C - 1`` bits of each other do too."""
    covered = fields["src"] + fields["dest"] + fields["seq"]
    period = (1 << fields["check"]) - 1
    return [
        sum(1 << k for k in range(covered) if ((k % period) + 1) >> j & 1)
        for j in range(fields["check"])
    ]


def _check_constant(fields: dict[str, int]) -> int:
    return 0x5555 & ((1 << fields["check"]) - 1)


def check_code(fields: dict[str, int], src: int, dest: int, seq: int) -> int:
    """The check code of a message (bit ``j``: parity of mask ``j`` over src, dest, seq, see
    :func:`_check_masks`; XOR a constant 0101... so that the all-zero payload is not valid)."""
    covered = src | (dest << fields["src"]) | (seq << (fields["src"] + fields["dest"]))
    code = 0
    for j, mask in enumerate(_check_masks(fields)):
        code |= ((covered & mask).bit_count() & 1) << j
    return code ^ _check_constant(fields)


def check_code_logic(fields: dict[str, int], covered):
    """The check code of ``covered`` (the bits of src, dest and seq) as an Amaranth
    expression: the hardware's :func:`check_code`."""
    code = Cat(*((covered & mask).xor() for mask in _check_masks(fields)))
    return code ^ _check_constant(fields)


def pack_payload(fields: dict[str, int], src: int, dest: int, seq: int) -> int:
    """The message data: src, dest, seq, its check code, zero padding."""
    h = fields["src"]
    return (
        src
        | (dest << h)
        | (seq << 2 * h)
        | (check_code(fields, src, dest, seq) << (2 * h + fields["seq"]))
    )


def _bank(bits: int) -> list[int]:
    """Bits drawn from each LFSR of the traffic bank per clock."""
    return [min(_LFSR_STEPS, bits - k) for k in range(0, bits, _LFSR_STEPS)]


def _bank_seed(seed: int, k: int) -> int:
    return derive_seed(_LFSR_WIDTH, seed, _TRAFFIC_PATH, k)


class SourcesTwin:
    """The traffic sources in Python, register for register: :meth:`outputs` is what they
    offer in this cycle, :meth:`clock` advances one clock given the interfaces' ``tx_ready``."""

    def __init__(self, leaves, width, length, *, seed=1, pattern="random", inject_cycles=1000):
        self.leaves = leaves
        self.h = leaves.bit_length() - 1
        self.fields = payload_fields(leaves, width, length)
        self.pattern = pattern
        self.inject_cycles = inject_cycles
        self.fixed = pattern_destinations(pattern, leaves)
        self.lfsrs = (
            [
                LFSRModel(_LFSR_WIDTH, taps=_LFSR_TAPS, seed=_bank_seed(seed, k), steps=steps)
                for k, steps in enumerate(_bank(leaves * self.h))
            ]
            if pattern == "random"
            else []
        )
        self.valid = [0] * leaves
        self.dest = [0] * leaves
        self.seq = [0] * leaves
        self.cycle = 0

    def outputs(self) -> tuple[list[int], list[int], list[int]]:
        data = [pack_payload(self.fields, p, self.dest[p], self.seq[p]) for p in range(self.leaves)]
        return list(self.valid), list(self.dest), data

    def clock(self, tx_ready: list[int]) -> list[int]:
        """One clock; returns per node whether its message was taken in this cycle."""
        rand, shift = 0, 0
        for lfsr in self.lfsrs:
            rand |= lfsr.word() << shift
            shift += lfsr.steps
        injecting = self.cycle < self.inject_cycles
        taken = [int(self.valid[p] and tx_ready[p]) for p in range(self.leaves)]
        for p in range(self.leaves):
            if not self.valid[p] or tx_ready[p]:
                if self.fixed is None:
                    r = (rand >> (p * self.h)) & ((1 << self.h) - 1)
                    self.valid[p], self.dest[p] = int(injecting and r != 0), p ^ r
                else:
                    q = self.fixed[p]
                    self.valid[p], self.dest[p] = int(injecting and q != p), q
            if taken[p]:
                self.seq[p] = (self.seq[p] + 1) & ((1 << self.fields["seq"]) - 1)
        for lfsr in self.lfsrs:
            lfsr.clock()
        self.cycle += 1
        return taken


def run_model(model, sources: SourcesTwin, *, latency_bits=12, limit=1_000_000) -> RunTrace:
    """Run a circuit tree's reference ``model`` (``step(valid, dest, data)`` returning the
    cycle's outputs) with the sources' twin until every message is delivered and
    acknowledged; the trace the hardware must reproduce. A payload is read only where it is
    delivered (the fast tree's model leaves it undefined elsewhere)."""
    leaves = sources.leaves
    saturate = (1 << latency_bits) - 1
    in_flight = [0] * leaves
    since = [0] * leaves  # the cycle a node's current wait for a tx_done began
    deliveries = []
    sent = done = delivered = rejects = max_latency = 0
    cycle = 0
    while True:
        if cycle >= limit:
            raise RuntimeError(f"the model did not drain within {limit} cycles")
        valid, dest, data = sources.outputs()
        out = model.step(valid, dest, data)
        mask = xor = 0
        for n in range(leaves):
            if out.rx_valid[n]:
                mask |= 1 << n
                xor ^= out.rx_data[n]
            if out.tx_done[n]:
                max_latency = max(max_latency, min(saturate, cycle - since[n]))
        if mask:
            deliveries.append((cycle, mask, xor))
        delivered += mask.bit_count()
        done += sum(out.tx_done)
        rejects += sum(out.tx_reject)
        taken = sources.clock(out.tx_ready)
        for n in range(leaves):
            before = in_flight[n]
            in_flight[n] += taken[n] - out.tx_done[n]
            if (out.tx_done[n] and in_flight[n]) or (taken[n] and not before):
                since[n] = cycle
        sent += sum(taken)
        cycle += 1
        if cycle >= sources.inject_cycles and not any(sources.valid) and done == sent == delivered:
            break
    return RunTrace(cycle + 2, tuple(deliveries), sent, rejects, max_latency)


def expected_run(
    leaves,
    width,
    length,
    seed,
    retry,
    *,
    traffic_seed=1,
    pattern="random",
    inject_cycles=1000,
    latency_bits=12,
    limit=1_000_000,
) -> RunTrace:
    """The paper tree's run (:func:`run_model` on
    :class:`~fattree.sim.models.circuit.CircuitTreeModel`)."""
    model = CircuitTreeModel(leaves, width, length, seed, retry)
    sources = SourcesTwin(
        leaves, width, length, seed=traffic_seed, pattern=pattern, inject_cycles=inject_cycles
    )
    return run_model(model, sources, latency_bits=latency_bits, limit=limit)


class StreamTreeHarness(ReplaysTrace, wiring.Component):
    """Sources, a circuit tree with stream ports, checker and replay memory: one run of the
    self-test (see the module documentation). A subclass checks the tree's parameters, sets
    ``leaves``, ``width``, ``length`` and ``seed`` and calls :meth:`_setup`."""

    #: The design's name, for messages.
    design = "circuit-tree-paper"

    def _setup(self, network, model, *, window, traffic_seed, pattern, inject_cycles, latency_bits):
        """``network()`` builds the tree under test, ``model`` is its reference model (a new
        one), ``window`` the messages a node may have in flight."""
        self.traffic_seed = check_int_range("traffic_seed", traffic_seed, 0, (1 << 32) - 1)
        self.pattern = check_pattern(pattern)
        self.inject_cycles = check_int_range("inject_cycles", inject_cycles, 1, 1 << 20)
        self.latency_bits = check_int_range("latency_bits", latency_bits, 2, 32)
        leaves, width, length = self.leaves, self.width, self.length
        self.fields = payload_fields(leaves, width, length, self.design)
        self._network = network
        self._window = window
        sources = SourcesTwin(
            leaves, width, length, seed=traffic_seed, pattern=pattern, inject_cycles=inject_cycles
        )
        self.trace = run_model(model, sources, latency_bits=latency_bits)
        self._size_replay(leaves, width * length)
        count_bits = max(leaves, 3).bit_length()
        wiring.Component.__init__(self, harness_signature(count_bits, latency_bits))

    def describe(self) -> dict:
        """The run the board replays, from the model: for reports."""
        return {
            "pattern": self.pattern,
            "traffic_seed": self.traffic_seed,
            "inject_cycles": self.inject_cycles,
            "run_cycles": self.run_period,  # the model's run and the priming cycles
            "messages_per_run": self.trace.messages,
            "rejects_per_run": self.trace.rejects,
            "max_latency": self.trace.max_latency,
            "payload_fields": dict(self.fields),
            **self._replay_description(),
        }

    def elaborate(self, platform):
        m = Module()
        n = self.leaves
        trace = self.trace

        # The first PRIMING cycles after a reset load the replay memory's first entries; the
        # network, the sources and the run's cycle counter start after them (run cycle 0).
        start = start_after_priming(m, self.cycle_bits)
        net = self._network()
        start.live.submodules.net = net
        taken, sent_xor = self._sources(m, start, net)
        delivered, bad, got_xor = self._checker(m, net)
        check = check_against_trace(
            m,
            start,
            deliveries=trace.deliveries,
            cycle_bits=self.cycle_bits,
            delivered=delivered,
            fault=self.fault,
            payload_xor=got_xor,
            xor_bits=self.width * self.length,
            bad=bad,
        )
        end, end_bad = check_totals_at_end(
            m,
            start,
            check,
            cycles=trace.cycles,
            cycle_bits=self.cycle_bits,
            counts=[
                ("sent", popcount(taken), trace.messages),
                ("acked", popcount(net.tx_done), trace.messages),
                ("got", popcount(delivered), trace.messages),
            ],
            sent_xor=sent_xor,
            idle=~Cat(*(net.tx[p].valid for p in range(n))).any(),
        )
        lat_max = self._latency(m, net, taken)
        m.d.comb += [
            self.checked.eq(popcount(delivered)),
            self.rejects.eq(popcount(net.tx_reject)),
            self.errors.eq(check.replay_bad + end_bad + check.bad_q),
            self.max_latency.eq(lat_max),
            self.end.eq(end),
        ]
        return m

    def _sources(self, m, start, net):
        """Each node's source on its transmit stream: ``(taken, sent_xor)``, per node a
        message taken in this cycle, and the XOR of the payloads taken."""
        n, h, f = self.leaves, self.leaves.bit_length() - 1, self.fields
        bits = self.width * self.length
        live = start.live
        injecting = Signal()
        m.d.comb += injecting.eq(start.t < self.inject_cycles)
        rand = None
        if self.pattern == "random":
            chunks = []
            for k, steps in enumerate(_bank(n * h)):
                lfsr = LFSR(
                    _LFSR_WIDTH,
                    taps=_LFSR_TAPS,
                    seed=_bank_seed(self.traffic_seed, k),
                    steps=steps,
                )
                live.submodules[f"lfsr{k}"] = lfsr
                chunks.append(lfsr.value[:steps])
            rand = Cat(*chunks)
        else:
            fixed = pattern_destinations(self.pattern, n)
        taken = []
        sent_xor = 0
        for p in range(n):
            valid = Signal(name=f"src{p}_valid")
            dest = Signal(h, name=f"src{p}_dest")
            seq = Signal(f["seq"], name=f"src{p}_seq")
            tx = net.tx[p]
            covered = Cat(Const(p, h), dest, seq)
            payload = Signal(bits, name=f"src{p}_payload")
            m.d.comb += [
                payload.eq(Cat(covered, check_code_logic(f, covered))),
                tx.valid.eq(valid),
                tx.payload.dest.eq(dest),
                tx.payload.data.eq(payload),
            ]
            take = Signal(name=f"src{p}_taken")
            m.d.comb += take.eq(valid & tx.ready)
            taken.append(take)
            sent_xor = sent_xor ^ (payload & take.replicate(bits))
            with live.If(~valid | tx.ready):
                if rand is not None:
                    r = rand[p * h : (p + 1) * h]
                    live.d.sync += [valid.eq(injecting & (r != 0)), dest.eq(r ^ p)]
                else:
                    live.d.sync += [valid.eq(injecting & (fixed[p] != p)), dest.eq(fixed[p])]
            with live.If(take):
                live.d.sync += seq.eq(seq + 1)
        return taken, sent_xor

    def _checker(self, m, net):
        """The checker on every receive stream, which does not look inside the network:
        ``(delivered, bad, got_xor)``, per node a delivery and a wrong one in this cycle,
        and the XOR of the payloads delivered."""
        n, h, f = self.leaves, self.leaves.bit_length() - 1, self.fields
        bits = self.width * self.length
        delivered = []
        bad = []
        got_xor = 0
        for d in range(n):
            rx = net.rx[d]
            m.d.comb += rx.ready.eq(1)
            data = rx.payload.data
            src = data[:h]
            dst = data[h : 2 * h]
            covered = data[: 2 * h + f["seq"]]
            code = data[2 * h + f["seq"] : 2 * h + f["seq"] + f["check"]]
            pad = data[2 * h + f["seq"] + f["check"] :]
            wrong = (dst != d) | (src == d) | (code != check_code_logic(f, covered))
            if f["pad"]:
                wrong = wrong | pad.any()
            bad.append(rx.valid & wrong)
            delivered.append(rx.valid)
            got_xor = got_xor ^ (data & rx.valid.replicate(bits))
        return delivered, bad, got_xor

    def _latency(self, m, net, taken):
        """The run's largest latency: per node, the longest wait, with messages in flight,
        for the next ``tx_done`` (with one in flight: from being taken to the
        acknowledgement).

        Each node counts its messages in flight and, while there are any, the cycles since
        its wait began (a message taken with none in flight, or a ``tx_done`` with more left);
        the run's maximum steps up by one whenever a counter that is about to step equals it
        (counters step by one, so the maximum never has to jump), which needs only an
        equality test per node."""
        lat_max = Signal(self.latency_bits)
        saturate = (1 << self.latency_bits) - 1
        bumps = []
        for p in range(self.leaves):
            in_flight = Signal(range(self._window + 1), name=f"lat{p}_in_flight")
            left = Signal(range(self._window + 1), name=f"lat{p}_left")
            restart = Signal(name=f"lat{p}_restart")
            count = Signal(self.latency_bits, name=f"lat{p}_count")
            done = net.tx_done[p]
            waiting = in_flight != 0
            m.d.comb += [
                left.eq(in_flight + taken[p] - done),
                restart.eq((taken[p] & ~waiting) | (done & (left != 0))),
            ]
            m.d.sync += in_flight.eq(left)
            with m.If(restart):
                m.d.sync += count.eq(1)
            with m.Elif(waiting & ~done & (count != saturate)):
                m.d.sync += count.eq(count + 1)
            bumps.append(
                (restart & (lat_max == 0))
                | (waiting & ~done & (count == lat_max) & (count != saturate))
            )
        with m.If(Cat(*bumps).any()):
            m.d.sync += lat_max.eq(lat_max + 1)
        return lat_max


class CircuitTreeHarness(StreamTreeHarness):
    """The self-test run of the paper tree: sources, a
    :class:`~fattree.hdl.circuit_tree.CircuitFatTree`, checker and replay memory of
    :class:`~fattree.sim.models.circuit.CircuitTreeModel`'s trace.

    Parameters
    ----------
    leaves, width, length, seed, retry
        The network's parameters (as :class:`~fattree.hdl.circuit_tree.CircuitFatTree`).
    traffic_seed : int
        Seed of the traffic LFSRs.
    pattern : str
        ``"random"`` or a fixed pattern of :data:`fattree.spec.traffic.PATTERNS`.
    inject_cycles : int
        Cycles of a run in which the sources start new messages.
    latency_bits : int
        Width of the latency counters (they saturate).
    network : callable, optional
        ``network(leaves, width, length, seed, retry)`` builds the network under test;
        tests pass broken ones.
    """

    @validates_parameters
    def __init__(
        self,
        leaves=8,
        width=1,
        length=16,
        seed=1,
        retry="immediate",
        *,
        traffic_seed=1,
        pattern="random",
        inject_cycles=1000,
        latency_bits=12,
        network=None,
    ):
        self.leaves = check_power_of_two("leaves", leaves, 2)
        self.width = check_int_range("width", width, 1, 64)
        self.length = check_int_range("length", length, 1, 64)
        self.seed = check_int_range("seed", seed, 0)
        self.retry = check_retry(retry)
        self.network = network or CircuitFatTree
        self._setup(
            lambda: self.network(leaves, width, length, seed, self.retry),
            # One message in flight per node: the interface takes the next after its fate.
            CircuitTreeModel(leaves, width, length, seed, self.retry),
            window=1,
            traffic_seed=traffic_seed,
            pattern=pattern,
            inject_cycles=inject_cycles,
            latency_bits=latency_bits,
        )


def circuit_tree_selftest(
    params: dict, *, seed=1, blink_log2=22, fault_log2=None, **options
) -> SelfTestCore:
    """The board self-test core of the circuit tree: the design's parameters (``leaves``,
    ``width``, ``length``, ``seed``, ``retry``), ``seed`` the traffic's seed, ``options`` the
    harness's (``pattern``, ``inject_cycles``, ...)."""
    params = dict(params)
    if params.pop("faults", ""):
        # The replayed trace is the fault-free model's; a faulty network is measured by
        # `fattree experiment faults` and `fattree sim`, not on the board.
        raise ValueError(
            "the circuit-tree-paper self-test runs the fault-free tree; faults (--param faults) "
            "are for fattree sim, verilog and experiment faults (--inject-fault corrupts a "
            "checked bit instead)"
        )
    harness = CircuitTreeHarness(**params, traffic_seed=seed, **options)
    return SelfTestCore(harness, blink_log2=blink_log2, fault_log2=fault_log2)
