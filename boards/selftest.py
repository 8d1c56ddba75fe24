"""The one self-test shape of the network designs: a harness (traffic source, design, checker)
inside a generic core (counters, LEDs, fault injection, replay forever).

A design adds a *harness*: a ``wiring.Component`` with the :func:`harness_signature` ports
that runs one deterministic test run from reset (on-chip traffic into the design, an
independent checker on its outputs, the reference model's expected trace in block RAM) and
says in which cycle the run ends. :class:`SelfTestCore` does the rest, the same for every
design:

* resets the harness when a run ends, so the same run is replayed forever (every replay is
  the claim "hardware == model" once more);
* counts clock cycles, messages checked, rejects (retries), errors (saturating) and keeps the
  largest latency any run reported;
* drives the status outputs ``heartbeat``, ``ok`` (something checked, no error) and ``error``
  (sticky) that :class:`fattree.boards.top.BoardTop` puts on LEDs, and offers its counters
  as the fields of the UART status line (:data:`STATUS_FIELDS`);
* with ``fault_log2`` set, raises the harness's ``fault`` input for one cycle every
  ``2**fault_log2`` cycles: the harness then inverts one checked bit, and the error count
  must rise.

The network harnesses build their runs from the same blocks, kept here:
:func:`start_after_priming` (the replay memory's :data:`PRIMING` cycles, the design and its
traffic held in reset meanwhile, the run's cycle counter), :func:`check_against_trace` (the
deliveries against the model's trace, :func:`replay_deliveries`, and the checker's registered
verdicts), :func:`check_totals_at_end` (exactly once: the run's counts and payload signatures
at its quiescent end), :func:`largest_latency` (the run's longest latency through a
registered :func:`max_tree`), and the traffic patterns' destinations and quotas.

:class:`SimTop` adds the status line's UART at a fast bit rate for simulation, and
:func:`simulate_status` runs it in amaranth.sim and decodes the serial line back into status
lines: ``fattree build DESIGN --simulate CYCLES`` is that, for the board's very core.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Module, Mux, ResetInserter, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from ..hdl._validation import validates_parameters
from ..params import check_int_range
from ..spec.traffic import PATTERNS, destination
from .uart import StatusReporter, parse_status_line

__all__ = [
    "harness_signature",
    "SelfTestCore",
    "STATUS_FIELDS",
    "PRIMING",
    "popcount",
    "check_pattern",
    "pattern_destinations",
    "messages_per_source",
    "permutation_sources",
    "RunTrace",
    "ReplaysTrace",
    "RunStart",
    "start_after_priming",
    "replay_deliveries",
    "TraceCheck",
    "check_against_trace",
    "check_totals_at_end",
    "max_tree",
    "latency_tail",
    "largest_latency",
    "SimTop",
    "status_signals",
    "decode_uart",
    "simulate_status",
]

#: Fields of the status line of a :class:`SelfTestCore`, ``(name, bits)``, in order.
STATUS_FIELDS = (
    ("cycles", 32),
    ("checked", 32),
    ("rejects", 32),
    ("maxlat", 16),
    ("errors", 16),
)

#: Cycles after a reset that load the replay memory's first entries, before a run starts.
PRIMING = 2


def harness_signature(count_bits: int, latency_bits: int) -> wiring.Signature:
    """Ports of a harness, seen from the harness.

    ``fault`` (in): invert one checked bit in this cycle. Per cycle (out): ``checked``
    (messages or grants compared), ``rejects`` (retries the design caused) and ``errors``
    (mismatches found), each a count of ``count_bits`` bits; ``max_latency`` (largest
    latency of this run so far, ``latency_bits``); ``end`` (the run ends with this cycle: the
    next cycle is the first of the replay).
    """
    return wiring.Signature(
        {
            "fault": In(1),
            "checked": Out(count_bits),
            "rejects": Out(count_bits),
            "errors": Out(count_bits),
            "max_latency": Out(latency_bits),
            "end": Out(1),
        }
    )


def popcount(bits) -> object:
    """Number of ones in a list of 1-bit values, as an Amaranth expression (adder tree)."""
    values = list(bits)
    if not values:
        return 0
    while len(values) > 1:
        values = [
            values[k] + values[k + 1] if k + 1 < len(values) else values[k]
            for k in range(0, len(values), 2)
        ]
    return values[0]


def check_pattern(pattern: str) -> str:
    """``pattern`` if it is ``"random"`` or a fixed pattern of
    :data:`fattree.spec.traffic.PATTERNS`, else ``ValueError`` naming them."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    return pattern


def pattern_destinations(pattern: str, sources: int) -> list[int] | None:
    """Per source (``sources`` a power of two), its destination under a fixed pattern of
    :mod:`fattree.spec.traffic`; None for ``"random"``."""
    if pattern == "random":
        return None
    bits = sources.bit_length() - 1
    return [destination(pattern, g, bits) for g in range(sources)]


def messages_per_source(pattern: str, sources: int, messages: int) -> list[int]:
    """Messages each source sends in a run: ``messages``, none to itself under a fixed
    pattern."""
    fixed = pattern_destinations(pattern, sources)
    if fixed is None:
        return [messages] * sources
    return [messages if fixed[g] != g else 0 for g in range(sources)]


def permutation_sources(fixed: list[int] | None) -> dict[int, int]:
    """Under a fixed pattern that is a permutation, the one source of each destination
    (else empty: any source may send anywhere)."""
    if fixed is None or len(set(fixed)) != len(fixed):
        return {}
    return {d: s for s, d in enumerate(fixed)}


@dataclass(frozen=True)
class RunTrace:
    """What the reference model says one run of a network's self-test does."""

    #: Cycles of the run (the last delivery and the harness's tail).
    cycles: int
    #: ``(cycle, mask, xor)`` per cycle with a delivery: which ports deliver (bit ``k`` for
    #: port ``k``) and the XOR of their payloads.
    deliveries: tuple[tuple[int, int, int], ...]
    messages: int
    #: Retries the design causes (the circuit tree's rejects, the hypercube's referrals).
    rejects: int
    #: Longest latency of a message in cycles, as the harness measures it.
    max_latency: int
    #: The payload's fields ``(name, bits)``, where the run sizes them (else empty).
    fields: tuple[tuple[str, int], ...] = ()


class ReplaysTrace:
    """For a harness that replays its :attr:`trace` (a :class:`RunTrace`) from block RAM
    with :func:`check_against_trace`: the replay memory's size and the run's length."""

    def _size_replay(self, ports: int, xor_bits: int) -> None:
        """Size the replay memory for ``ports`` delivery bits and ``xor_bits`` of payload
        XOR per entry."""
        self.cycle_bits = self.trace.cycles.bit_length()
        self.entry_bits = self.cycle_bits + ports + xor_bits
        #: Depth of the replay memory: one entry per delivering cycle and two end markers.
        self.trace_depth = len(self.trace.deliveries) + 2
        #: Cycles of one run on the board: the priming cycles and the model's run.
        self.run_period = PRIMING + self.trace.cycles
        self.trace_bits = self.entry_bits * self.trace_depth

    def _replay_description(self) -> dict:
        """The replay memory's size, for :meth:`describe`."""
        return {
            "trace_entries": self.trace_depth,
            "trace_entry_bits": self.entry_bits,
            "trace_bits": self.trace_bits,
        }


@dataclass(frozen=True)
class RunStart:
    """The first cycles of a harness's run: :data:`PRIMING` cycles that load the replay
    memory, then the run itself (see :func:`start_after_priming`)."""

    #: Counts the priming cycles after a reset (up to :data:`PRIMING`).
    prime: Signal
    #: High from the run's first cycle on.
    primed: Signal
    #: The run's cycle, 0 in the first cycle after the priming.
    t: Signal
    #: A module held in reset while priming (the design under test and its traffic), or None.
    live: Module | None

    @property
    def first_load(self):
        """High in the priming cycle in which the replay memory's read port shows entry 0."""
        return self.prime == PRIMING - 1

    def last_cycle(self, m: Module, cycles: int) -> Signal:
        """A signal high in the run's last cycle (run cycle ``cycles - 1``)."""
        end = Signal()
        m.d.comb += end.eq(self.primed & (self.t == cycles - 1))
        return end


def start_after_priming(m: Module, cycle_shape, *, hold_live: bool = True) -> RunStart:
    """Count the :data:`PRIMING` cycles after a reset, then the run's cycles (a counter of
    ``cycle_shape``). With ``hold_live``, add a submodule ``live`` held in reset while
    priming, for the design under test and its traffic: they start in run cycle 0."""
    prime = Signal(range(PRIMING + 1))
    primed = Signal()
    m.d.comb += primed.eq(prime == PRIMING)
    with m.If(~primed):
        m.d.sync += prime.eq(prime + 1)
    live = None
    if hold_live:
        live = Module()
        m.submodules.live = ResetInserter(~primed)(live)
    t = Signal(cycle_shape)
    with m.If(primed):
        m.d.sync += t.eq(t + 1)
    return RunStart(prime, primed, t, live)


def replay_deliveries(m, *, deliveries, cycle_bits, n, first_load, primed, t, seen, cycle_xor):
    """Compare a network's deliveries, cycle for cycle, with the model's trace in a memory.

    ``deliveries``: a :class:`RunTrace`'s, stored one entry per delivering cycle (``cycle``
    in the low ``cycle_bits``, then the ``n``-bit mask of delivering ports, then the XOR of
    their payloads, ``len(cycle_xor)`` bits), then two end markers. ``first_load`` is the
    priming cycle in which the read port shows entry 0; ``primed`` is high from the run's
    first cycle ``t = 0``; ``seen`` and ``cycle_xor`` are this cycle's delivery bits and
    payload XOR. Returns ``(replay_bad, entry_cycle)``: a
    mismatch, one cycle late (the comparison is registered: the XOR trees and the memory's
    output are long paths), and the cycle of the next expected entry (all ones at the end).
    """
    # `entry` (a register) is the next delivering cycle; the read port already holds the one
    # after it, so a cycle that consumes `entry` loads the next at once, and the memory's
    # address never depends on its own output in the same cycle.
    end = (1 << cycle_bits) - 1  # the end marker: a cycle the run never reaches
    init = [c | (mask << cycle_bits) | (x << (cycle_bits + n)) for c, mask, x in deliveries]
    init += [end, end]
    entry_bits = cycle_bits + n + len(cycle_xor)
    mem = memory.Memory(shape=entry_bits, depth=len(init), init=init)
    m.submodules.trace = mem
    rd = mem.read_port()
    idx = Signal(range(len(init)))  # address of what the read port shows
    entry = Signal(entry_bits)
    entry_cycle = entry[:cycle_bits]
    now = Signal()
    m.d.comb += now.eq(primed & (entry_cycle == t))
    with m.If(first_load):  # the read port shows entry 0: take it, show 1
        m.d.sync += [entry.eq(rd.data), idx.eq(1)]
        m.d.comb += rd.addr.eq(1)
    with m.Elif(now):
        m.d.sync += [entry.eq(rd.data), idx.eq(idx + 1)]
        m.d.comb += rd.addr.eq(idx + 1)
    with m.Else():
        m.d.comb += rd.addr.eq(idx)
    want_mask = Signal(n)
    want_xor = Signal(len(cycle_xor))
    with m.If(now):
        m.d.comb += [
            want_mask.eq(entry[cycle_bits : cycle_bits + n]),
            want_xor.eq(entry[cycle_bits + n :]),
        ]
    seen_q = Signal(n)
    xor_q = Signal(len(cycle_xor))
    want_mask_q = Signal(n)
    want_xor_q = Signal(len(cycle_xor))
    compare_q = Signal()
    m.d.sync += [
        seen_q.eq(seen),
        xor_q.eq(cycle_xor),
        want_mask_q.eq(want_mask),
        want_xor_q.eq(want_xor),
        compare_q.eq(primed),
    ]
    replay_bad = Signal()
    m.d.comb += replay_bad.eq(compare_q & ((seen_q != want_mask_q) | (xor_q != want_xor_q)))
    return replay_bad, entry_cycle


@dataclass(frozen=True)
class TraceCheck:
    """What :func:`check_against_trace` found in this cycle."""

    #: The deliveries disagree with the model's trace (one cycle late: registered).
    replay_bad: Signal
    #: The run cycle of the next expected delivery (all ones once the trace is used up).
    entry_cycle: object
    #: A delivered message failed the checker's own tests (registered like ``replay_bad``).
    bad_q: Signal
    #: The XOR of this cycle's delivered payloads.
    cycle_xor: Signal


def check_against_trace(
    m: Module,
    start: RunStart,
    *,
    deliveries,
    cycle_bits: int,
    delivered: list,
    fault,
    payload_xor,
    xor_bits: int,
    bad: list,
) -> TraceCheck:
    """Compare a network's deliveries with the model's trace (:func:`replay_deliveries`) and
    register the checker's own verdicts on them.

    ``delivered``: per port, a message is delivered in this cycle; ``fault`` inverts the
    delivery bits as the checker sees them (port 0's: the error count must rise);
    ``payload_xor`` (``xor_bits`` wide): the XOR of the delivered payloads; ``bad``: per port,
    the delivered message fails the checker's tests.
    """
    seen = Signal(len(delivered))  # delivery bits as the checker sees them (the fault lands here)
    m.d.comb += seen.eq(Cat(*delivered) ^ fault)
    cycle_xor = Signal(xor_bits)
    m.d.comb += cycle_xor.eq(payload_xor)

    # Replay: the model's trace, compared cycle for cycle.
    replay_bad, entry_cycle = replay_deliveries(
        m,
        deliveries=deliveries,
        cycle_bits=cycle_bits,
        n=len(delivered),
        first_load=start.first_load,
        primed=start.primed,
        t=start.t,
        seen=seen,
        cycle_xor=cycle_xor,
    )
    bad_q = Signal()  # the checks, registered as the replay's comparison is
    m.d.sync += bad_q.eq(Cat(*bad).any())
    return TraceCheck(replay_bad, entry_cycle, bad_q, cycle_xor)


def check_totals_at_end(
    m: Module,
    start: RunStart,
    check: TraceCheck,
    *,
    cycles: int,
    cycle_bits: int,
    counts,
    sent_xor,
    idle,
    also=(),
) -> tuple[Signal, Signal]:
    """Totals of a run, compared at its end (a quiescent point: nothing in flight), so that
    every message is delivered exactly once.

    ``counts``: ``(name, step, expected)`` per total: a counter named ``name`` adds ``step``
    each cycle and must equal ``expected`` at the end. ``sent_xor``: the XOR of the payloads
    sent in this cycle; over the run it must equal that of the payloads delivered (a lost or
    duplicated message shows). ``idle``: nothing in flight; ``also``: ``(name, bad)`` more
    conditions that are wrong at the end. The trace must be used up too. Returns ``(end,
    end_bad)``: the run's last cycle, and something is wrong in it.
    """
    counters = []
    for name, step, expected in counts:
        counter = Signal(max(expected, 1).bit_length() + 1, name=name)
        counters.append((counter, step, expected))
    sent_sig = Signal(len(check.cycle_xor))
    got_sig = Signal(len(check.cycle_xor))
    m.d.sync += [counter.eq(counter + step) for counter, step, _ in counters]
    m.d.sync += [
        sent_sig.eq(sent_sig ^ sent_xor),
        got_sig.eq(got_sig ^ check.cycle_xor),
    ]
    end = start.last_cycle(m, cycles)
    quiet = Signal(name="idle")
    m.d.comb += quiet.eq(idle)
    wrong = [counter != expected for counter, _, expected in counters]
    wrong += [sent_sig != got_sig, ~quiet]
    for name, condition in also:
        flag = Signal(name=name)
        m.d.comb += flag.eq(condition)
        wrong.append(flag)
    wrong.append(check.entry_cycle != (1 << cycle_bits) - 1)
    any_wrong = wrong[0]
    for condition in wrong[1:]:
        any_wrong = any_wrong | condition
    end_bad = Signal()
    m.d.comb += end_bad.eq(end & any_wrong)
    return end, end_bad


def max_tree(m: Module, values: list, width: int) -> tuple[Signal, int]:
    """The largest of ``values`` (``width`` bits each) through a tree of pairwise maxima, a
    register after each level (no long comparator chain); returns it and the tree's depth."""
    level = 0
    while len(values) > 1:
        nxt = []
        for k in range(0, len(values), 2):
            if k + 1 == len(values):
                a = Signal(width, name=f"latmax{level}_{k}")
                m.d.sync += a.eq(values[k])
            else:
                a = Signal(width, name=f"latmax{level}_{k}")
                x, y = values[k], values[k + 1]
                with m.If(x > y):
                    m.d.sync += a.eq(x)
                with m.Else():
                    m.d.sync += a.eq(y)
            nxt.append(a)
        values = nxt
        level += 1
    out = Signal(width, name="latmax")
    m.d.comb += out.eq(values[0])
    return out, level


def latency_tail(ports: int) -> int:
    """Cycles a run goes on after the model's last delivery when the harness reports the
    largest latency through :func:`largest_latency`: the checker's registered comparisons
    and the latency tree (``lg ports`` levels) settle before it ends."""
    return (ports - 1).bit_length() + 2


def largest_latency(m: Module, latencies: list, stamp_bits: int, latency_bits: int):
    """The largest of the ports' latencies (``stamp_bits`` each, zero where nothing is
    delivered) over the run so far, saturated to ``latency_bits``."""
    tree, depth = max_tree(m, latencies, stamp_bits)
    # The last delivery's latency reaches lat_max `depth + 1` cycles later, before the
    # run's last cycle (the core registers max_latency then).
    assert depth + 1 < latency_tail(len(latencies))
    lat_max = Signal(stamp_bits)
    with m.If(tree > lat_max):
        m.d.sync += lat_max.eq(tree)
    report = lat_max
    if stamp_bits > latency_bits:
        top = (1 << latency_bits) - 1
        report = Signal(latency_bits)
        m.d.comb += report.eq(Mux(lat_max > top, top, lat_max))
    return report


class SelfTestCore(wiring.Component):
    """A harness, replayed forever, with counters and status outputs.

    Parameters
    ----------
    harness : wiring.Component
        The design's harness (:func:`harness_signature` ports).
    blink_log2 : int
        The heartbeat toggles every ``2**blink_log2`` cycles (1..40).
    fault_log2 : int or None
        If set, pulse the harness's ``fault`` input every ``2**fault_log2`` cycles (1..40).

    Attributes
    ----------
    heartbeat, ok, error : Out(1)
        Blinks while the clock runs; something checked and no error; sticky error.
    frames : Out(32)
        Messages checked (the same as ``checked``; the name the board wrapper knows).
    cycles, checked, rejects : Out(32)
        Clock cycles, messages checked, rejects, since configuration (wrap around).
    maxlat : Out(16)
        Largest latency reported by any run (cycles; saturates).
    errors : Out(16)
        Mismatches found (saturates at 0xffff).
    runs : Out(32)
        Runs completed.
    """

    @validates_parameters
    def __init__(self, harness, *, blink_log2=22, fault_log2=None):
        self.harness = harness
        self.blink_log2 = check_int_range("blink_log2", blink_log2, 1, 40)
        self.fault_log2 = (
            None if fault_log2 is None else check_int_range("fault_log2", fault_log2, 1, 40)
        )
        self.status_fields = STATUS_FIELDS
        super().__init__(
            {
                "heartbeat": Out(1),
                "ok": Out(1),
                "error": Out(1),
                "frames": Out(32),
                **{name: Out(bits) for name, bits in STATUS_FIELDS},
                "runs": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        harness = self.harness
        # The run ends: reset the whole harness (design, traffic, checker, trace pointer), so
        # the next cycle starts the same run again from the same state.
        m.submodules.harness = ResetInserter(harness.end)(harness)

        # The harness's per-cycle figures are registered first (they end long paths in the
        # harness); the registers are outside the harness's reset, so a run's last cycle counts.
        checked = Signal.like(harness.checked)
        rejects = Signal.like(harness.rejects)
        errors = Signal.like(harness.errors)
        latency = Signal(16)
        run_latency = harness.max_latency
        if len(run_latency) > 16:
            run_latency = run_latency[:16] | run_latency[16:].any().replicate(16)
        m.d.sync += [
            checked.eq(harness.checked),
            rejects.eq(harness.rejects),
            errors.eq(harness.errors),
            latency.eq(run_latency),
        ]
        m.d.sync += [
            self.cycles.eq(self.cycles + 1),
            self.checked.eq(self.checked + checked),
            self.rejects.eq(self.rejects + rejects),
        ]
        m.d.comb += self.frames.eq(self.checked)
        with m.If(harness.end):
            m.d.sync += self.runs.eq(self.runs + 1)
        errors_next = Signal(17)
        m.d.comb += errors_next.eq(self.errors + errors)
        with m.If(errors_next[16]):
            m.d.sync += self.errors.eq(0xFFFF)
        with m.Else():
            m.d.sync += self.errors.eq(errors_next)
        with m.If(errors != 0):
            m.d.sync += self.error.eq(1)
        with m.If(latency > self.maxlat):
            m.d.sync += self.maxlat.eq(latency)

        if self.fault_log2 is not None:
            fault_count = Signal(self.fault_log2)
            m.d.sync += fault_count.eq(fault_count + 1)
            m.d.comb += harness.fault.eq(fault_count == (1 << self.fault_log2) - 1)

        checked_any = Signal()
        with m.If(checked != 0):
            m.d.sync += checked_any.eq(1)
        blink = Signal(self.blink_log2 + 1)
        m.d.sync += blink.eq(blink + 1)
        m.d.comb += [
            self.heartbeat.eq(blink[-1]),
            self.ok.eq(checked_any & ~self.error),
        ]
        return m


def status_signals(core) -> list[tuple[str, int, object]]:
    """``(name, bits, signal)`` of each status line field of a self-test core: the generic
    core's :data:`STATUS_FIELDS`, or the selector's ``frames`` and ``error``."""
    fields = getattr(core, "status_fields", (("frames", 32), ("error", 1)))
    return [(name, bits, getattr(core, name)) for name, bits in fields]


class SimTop(wiring.Component):
    """A self-test core and its status line's UART, for simulation: ``divisor`` cycles per
    bit and a line every ``2**period_log2`` cycles (both small, so lines come often).

    Attributes
    ----------
    tx : Out(1)
        The serial line.
    cycle : Out(32)
        Clock cycles since reset (to time-stamp the serial line's edges).
    """

    def __init__(self, core, *, divisor=2, period_log2=None):
        self.core = core
        self.fields = status_signals(core)
        line = sum(len(name) + 2 + -(-bits // 4) for name, bits, _ in self.fields) + 1
        #: Cycles one status line takes on the wire.
        self.line_cycles = line * 10 * divisor
        if period_log2 is None:
            period_log2 = self.line_cycles.bit_length()
        self.divisor = divisor
        self.period_log2 = period_log2
        super().__init__({"tx": Out(1, init=1), "cycle": Out(32)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = self.core
        m.submodules.status = status = StatusReporter(
            self.divisor, self.period_log2, [(name, bits) for name, bits, _ in self.fields]
        )
        for name, _, signal in self.fields:
            m.d.comb += getattr(status, name).eq(signal)
        m.d.comb += self.tx.eq(status.tx)
        m.d.sync += self.cycle.eq(self.cycle + 1)
        return m


def decode_uart(edges: list[tuple[int, int]], divisor: int, end: int) -> bytes:
    """Bytes of an 8N1 serial line given as ``(cycle, level)`` changes (the line idles high
    before the first), sampled in the middle of each bit; ``end`` is the last cycle seen."""

    def level_at(cycle):
        level = 1
        for when, value in edges:
            if when > cycle:
                break
            level = value
        return level

    out = bytearray()
    k = 0
    while k < len(edges):
        when, value = edges[k]
        if value != 0:
            k += 1
            continue
        # A falling edge starts a frame: sample the middle of the start, data and stop bits.
        mid = when + divisor // 2
        if mid + 9 * divisor > end:
            break
        bits = [level_at(mid + j * divisor) for j in range(10)]
        if bits[0] == 0 and bits[9] == 1:
            out.append(sum(b << j for j, b in enumerate(bits[1:9])))
        stop = when + 10 * divisor - divisor // 2
        while k < len(edges) and edges[k][0] < stop:
            k += 1
    return bytes(out)


def simulate_status(core, cycles: int, *, divisor: int = 2) -> dict:
    """Run ``core`` with its status line's UART for ``cycles`` cycles in amaranth.sim and
    decode the serial line.

    Returns ``{"lines": [{field: value}, ...], "text": str, "cycles": int, "first_line_at":
    int}``: every complete status line received, decoded from the bits on the wire (not read
    from the counters), and how many cycles the first line needs.
    """
    from amaranth.sim import Simulator

    top = SimTop(core, divisor=divisor)
    edges: list[tuple[int, int]] = []

    async def watch(ctx):
        async for _, cycle, tx in ctx.changed(top.tx).sample(top.cycle, top.tx):
            edges.append((cycle, tx))

    async def run(ctx):
        await ctx.tick().repeat(cycles)

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_process(watch)
    sim.add_testbench(run)
    sim.run()
    text = decode_uart(edges, divisor, cycles).decode("ascii", errors="replace")
    lines = []
    for raw in text.split("\r\n")[:-1]:  # the last piece is an unfinished line
        try:
            lines.append(parse_status_line(raw))
        except ValueError:
            continue
    return {
        "lines": lines,
        "text": text,
        "cycles": cycles,
        # The first line is complete after this many cycles.
        "first_line_at": (1 << top.period_log2) + 2 + top.line_cycles,
    }
