"""Self-test of Ding's level-wise scheduler: LFSR requests, and the reference model's results
replayed from block RAM, result for result.

One run of :class:`SchedulerHarness`:

* **Traffic.** The source sends ``CLEAR`` (every link free: the link memories are block RAM
  and are not reset with the rest), then ``requests`` ``SCHEDULE`` commands with a random
  source and destination node each, drawn from a bank of LFSRs that advances only when a
  command is taken: the sequence of commands is a function of the seed alone, whatever the
  timing. Results are always taken.
* **Replay.** :func:`expected_results` runs the reference model
  (:class:`fattree.sim.models.scheduler.SchedulerModel`, level-wise, ``keep``) on the same
  commands at build time; the expected result words (op, source, destination, granted, the
  ports ``P_0 .. P_{l-2}``) go into block RAM, and every result of the hardware is compared
  with its entry, in order (the scheduler's contract is one result per command, in order).
  Since a granted result's ports name the links it took, an agreement on every result is
  also "no link granted twice", as far as the model guarantees it.
* **Checker.** Besides the replay: the number of results equals the number of commands at
  the end of the run, and a run that does not finish in twice the time it needs (a hung
  pipeline) ends with an error.
* Latency: cycles from a ``SCHEDULE`` being taken to its result (the ``CLEAR``'s wait for the
  memories is not counted); a small FIFO of time stamps follows the commands in flight.

``fault`` inverts the ``granted`` bit of the result the checker is looking at, if any.
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.fifo import SyncFIFOBuffered

from ..hdl._validation import validates_parameters
from ..hdl.lfsr import LFSR
from ..hdl.scheduler import LevelWiseScheduler
from ..params import check_int_range
from ..sim.models.scheduler import SchedulerModel
from ..spec.lfsr import LFSRModel, derive_seed
from ..spec.scheduler import GeneralizedFatTree, Op, field_offsets, node_bits, result_fields
from .selftest import PRIMING, SelfTestCore, harness_signature, start_after_priming

__all__ = ["commands", "expected_results", "SchedulerHarness", "scheduler_selftest", "PRIMING"]

_LFSR_WIDTH = 31
_LFSR_TAPS = (31, 28)
_LFSR_STEPS = 28
_TRAFFIC_PATH = 0x5C


def _bank(bits: int) -> list[int]:
    return [min(_LFSR_STEPS, bits - k) for k in range(0, bits, _LFSR_STEPS)]


def _m(w: int, m) -> int:
    return w if m in (None, "") else m


def commands(
    levels: int, w: int, requests: int, seed: int = 1, m: int | None = None
) -> list[tuple[int, int, int]]:
    """The commands of one run, ``(op, src, dst)``: ``CLEAR``, then ``requests`` random
    ``SCHEDULE`` s (the LFSR bank's word when each is taken: low half source, high half
    destination; nodes of FT(levels, m, w), ``m`` defaulting to ``w``)."""
    bits = node_bits(levels, _m(w, m))
    lfsrs = [
        LFSRModel(
            _LFSR_WIDTH, taps=_LFSR_TAPS, seed=derive_seed(31, seed, _TRAFFIC_PATH, k), steps=steps
        )
        for k, steps in enumerate(_bank(2 * bits))
    ]
    out = [(int(Op.CLEAR), 0, 0)]
    for _ in range(requests):
        rand, shift = 0, 0
        for lfsr in lfsrs:
            rand |= lfsr.word() << shift
            shift += lfsr.steps
            lfsr.clock()
        mask = (1 << bits) - 1
        out.append((int(Op.SCHEDULE), rand & mask, (rand >> bits) & mask))
    return out


def _pack(levels: int, w: int, m: int, **values) -> int:
    """A result word (:func:`fattree.spec.scheduler.result_fields`)."""
    fields = result_fields(levels, w, m)
    offsets = field_offsets(fields)
    word = 0
    for name, size in fields:
        value = values.get(name, 0)
        if isinstance(size, tuple):
            bits, count = size
            value = sum(v << (k * bits) for k, v in enumerate(value))
        word |= value << offsets[name]
    return word


def expected_results(
    levels: int, w: int, requests: int, seed: int = 1, m: int | None = None
) -> list[int]:
    """The result words of one run, from the reference model."""
    m = _m(w, m)
    model = SchedulerModel(GeneralizedFatTree(levels, m, w))
    words = []
    for op, src, dst in commands(levels, w, requests, seed, m):
        if op == Op.CLEAR:
            model.clear()
            # The hardware answers a CLEAR with granted = 1.
            words.append(
                _pack(levels, w, m, op=op, src=src, dst=dst, granted=1, ports=[0] * (levels - 1))
            )
        else:
            grant = model.request(src, dst)
            words.append(
                _pack(
                    levels,
                    w,
                    m,
                    op=op,
                    src=src,
                    dst=dst,
                    granted=int(grant.granted),
                    ports=grant.port_vector(levels),
                )
            )
    return words


class SchedulerHarness(wiring.Component):
    """Source, :class:`~fattree.hdl.scheduler.LevelWiseScheduler`, checker and replay memory.

    Parameters
    ----------
    levels, w, memory, m
        The scheduler's parameters (``m``: children per switch of FT(levels, m, w); None or
        ``""``, the design table's default, for ``m = w``).
    traffic_seed : int
        Seed of the request LFSRs.
    requests : int, optional
        ``SCHEDULE`` commands per run (after its ``CLEAR``); default four per node, at most
        4096.
    latency_bits : int
        Width of the time stamps and the latency (saturates).
    scheduler : callable, optional
        ``scheduler(levels, w, memory=...)`` (and ``m=...`` when ``m != w``) builds the
        scheduler under test (tests pass broken ones).
    """

    @validates_parameters
    def __init__(
        self,
        levels=3,
        w=4,
        memory="auto",
        m=None,
        *,
        traffic_seed=1,
        requests=None,
        latency_bits=12,
        scheduler=None,
    ):
        self.levels = check_int_range("levels", levels, 2, 6)
        self.w = w
        self.memory = memory
        self.traffic_seed = check_int_range("traffic_seed", traffic_seed, 0, (1 << 32) - 1)
        self.latency_bits = check_int_range("latency_bits", latency_bits, 4, 16)
        make = scheduler or LevelWiseScheduler
        # The scheduler checks levels, w and m (messages naming them) before anything uses them.
        mw = {} if m in (None, "") or m == w else {"m": m}
        self.dut = make(levels, w, memory=memory, **mw)
        self.m = m = _m(w, m)
        if requests is None:  # enough to fill the tree's links several times over
            requests = min(4 * m**levels, 4096)
        self.requests = check_int_range("requests", requests, 1, 1 << 16)
        self.commands = commands(levels, w, requests, traffic_seed, m)
        self.expected = expected_results(levels, w, requests, traffic_seed, m)
        fields = result_fields(levels, w, m)
        self.result_bits = sum(s[0] * s[1] if isinstance(s, tuple) else s for _, s in fields)
        tree = GeneralizedFatTree(levels, m, w)
        #: A run that takes longer than this is a hung scheduler (the clear: the deepest memory).
        rows = max(tree.switch_counts[:-1])
        self.limit = 2 * (rows + requests + self.dut.latency) + 64
        self.granted = sum(
            (word >> field_offsets(fields)["granted"]) & 1 for word in self.expected[1:]
        )
        super().__init__(harness_signature(2, self.latency_bits))

    def describe(self) -> dict:
        return {
            "traffic_seed": self.traffic_seed,
            "commands_per_run": len(self.commands),
            "granted_per_run": self.granted,
            "refused_per_run": self.requests - self.granted,
            "trace_entries": len(self.expected) + 2,
            "trace_entry_bits": self.result_bits,
            "trace_bits": self.result_bits * (len(self.expected) + 2),
            "run_limit_cycles": self.limit,
        }

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self.dut
        n_cmds = len(self.commands)
        start = start_after_priming(m, range(self.limit + 1), hold_live=False)
        clock = Signal(self.latency_bits)  # time stamps (wrap around)
        m.d.sync += clock.eq(clock + 1)

        stamps = self._requests(m, start, clock)
        got, results, bad_q, got_q, refused_q = self._compare_results(m, start)
        lat_max = self._schedule_latency(m, got, stamps, clock)

        # --- end of the run: every result in (and compared), or the time limit ---------------
        finished = Signal()
        m.d.comb += finished.eq(start.primed & (results == n_cmds) & ~got_q)
        timeout = Signal()
        m.d.comb += timeout.eq(start.primed & (start.t == self.limit))
        end = Signal()
        m.d.comb += end.eq(finished | timeout)
        m.d.comb += [
            self.checked.eq(got_q),
            self.rejects.eq(refused_q),
            self.errors.eq(bad_q + (timeout & ~finished)),
            self.max_latency.eq(lat_max),
            self.end.eq(end),
        ]
        return m

    def _requests(self, m, start, clock):
        """The source: CLEAR, then random SCHEDULEs; the LFSRs step when a command is taken.
        Returns the FIFO of the time stamps of the commands in flight (the top bit: a
        SCHEDULE)."""
        dut = self.dut
        bits = node_bits(self.levels, self.m)
        n_cmds = len(self.commands)
        sent = Signal(range(n_cmds + 1))
        req = dut.requests
        take = Signal()
        stamps = SyncFIFOBuffered(width=self.latency_bits + 1, depth=dut.latency + 4)
        m.submodules.stamps = stamps
        m.d.comb += take.eq(req.valid & req.ready)
        chunks = []
        for k, steps in enumerate(_bank(2 * bits)):
            lfsr = LFSR(
                _LFSR_WIDTH,
                taps=_LFSR_TAPS,
                seed=derive_seed(31, self.traffic_seed, _TRAFFIC_PATH, k),
                steps=steps,
            )
            m.submodules[f"lfsr{k}"] = lfsr
            m.d.comb += lfsr.en.eq(take & (sent != 0))
            chunks.append(lfsr.value[:steps])
        rand = Cat(*chunks)
        m.d.comb += req.valid.eq(start.primed & (sent < n_cmds) & stamps.w_rdy)
        with m.If(sent == 0):
            m.d.comb += req.payload.op.eq(Op.CLEAR)
        with m.Else():
            m.d.comb += [
                req.payload.op.eq(Op.SCHEDULE),
                req.payload.src.eq(rand[:bits]),
                req.payload.dst.eq(rand[bits : 2 * bits]),
            ]
        with m.If(take):
            m.d.sync += sent.eq(sent + 1)
        m.d.comb += [
            stamps.w_en.eq(take),
            stamps.w_data.eq(Cat(clock, sent != 0)),
        ]
        return stamps

    def _compare_results(self, m, start):
        """Replay: every result word compared, in order, with the expected ones in a memory.
        Returns ``(got, results, bad_q, got_q, refused_q)``: a result in this cycle, results
        so far, and (registered) a wrong result, a result, a refused SCHEDULE."""
        offsets = field_offsets(result_fields(self.levels, self.w, self.m))
        n_cmds = len(self.commands)
        end_marker = 0
        entries = [*self.expected, end_marker, end_marker]
        mem = memory.Memory(shape=self.result_bits, depth=len(entries), init=entries)
        m.submodules.trace = mem
        rd = mem.read_port()
        idx = Signal(range(len(entries)))
        expect = Signal(self.result_bits)
        res = self.dut.results
        m.d.comb += res.ready.eq(1)
        got = Signal()
        m.d.comb += got.eq(res.valid & start.primed)
        with m.If(start.first_load):
            m.d.sync += [expect.eq(rd.data), idx.eq(1)]
            m.d.comb += rd.addr.eq(1)
        with m.Elif(got):
            m.d.sync += [expect.eq(rd.data), idx.eq(idx + 1)]
            m.d.comb += rd.addr.eq(idx + 1)
        with m.Else():
            m.d.comb += rd.addr.eq(idx)
        word = Signal(self.result_bits)
        granted_at = offsets["granted"]
        m.d.comb += word.eq(res.payload.as_value() ^ (self.fault << granted_at))
        results = Signal(range(n_cmds + 2))
        with m.If(got):
            m.d.sync += results.eq(results + 1)
        bad_q = Signal()
        got_q = Signal()
        refused_q = Signal()
        m.d.sync += [
            bad_q.eq(got & (word != expect)),
            got_q.eq(got),
            refused_q.eq(got & (res.payload.op == Op.SCHEDULE) & ~res.payload.granted),
        ]
        return got, results, bad_q, got_q, refused_q

    def _schedule_latency(self, m, got, stamps, clock):
        """The largest latency of the run's SCHEDULEs, from the time stamps."""
        lat_max = Signal(self.latency_bits)
        m.d.comb += stamps.r_en.eq(got)
        latency = Signal(self.latency_bits)
        m.d.comb += latency.eq(clock - stamps.r_data[: self.latency_bits])
        with m.If(got & stamps.r_data[-1] & (latency > lat_max)):
            m.d.sync += lat_max.eq(latency)
        return lat_max


def scheduler_selftest(params: dict, *, seed=1, blink_log2=22, fault_log2=None, **options):
    """The board self-test core of the scheduler: the design's parameters (``levels``, ``w``,
    ``m``, ``memory``), ``seed`` the requests' seed, ``options`` the harness's (``requests``)."""
    harness = SchedulerHarness(**params, traffic_seed=seed, **options)
    return SelfTestCore(harness, blink_log2=blink_log2, fault_log2=fault_log2)
