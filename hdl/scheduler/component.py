"""The scheduler component: the input stage, the CLEAR sequencer, the P_h blocks, the results."""

from amaranth import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ...spec.scheduler import SCHEDULER, GeneralizedFatTree, Op, pipeline_latency
from .._validation import validates_parameters
from ..registered_memory import DP16KD_SHAPES, ecp5_block_ram_fits
from .layouts import PipelineLayouts, request_layout, result_layout
from .level import LinkLevel

__all__ = ["LevelWiseScheduler", "MAX_SWITCHES"]

MAX_SWITCHES = 1 << 16


class LevelWiseScheduler(wiring.Component):
    """Level-wise P_h scheduler for FT(levels, w) or FT(levels, m, w), one command per clock.

    Parameters
    ----------
    levels : int
        Levels of the fat-tree, 2..6 (``levels - 1`` P_h blocks).
    w : int
        Parents (up ports) per switch, a power of two 2..64: the bits of a link vector.
    m : int, optional
        Children (down ports) per switch, a power of two 2..64
        (:class:`~fattree.spec.scheduler.GeneralizedFatTree`): ``m**levels`` nodes, level ``h``
        has ``m**(l-1-h) * w**h`` switches (rows of its memories). None, or ``""`` (the design
        table's default), means ``m = w``: FT(levels, w).
    memory : str
        Form of the link memories (:class:`~fattree.hdl.registered_memory.RegisteredReadMemory`):
        ``"auto"`` (the ECP5 ``DP16KD`` when building for ECP5 and the memories fit one,
        else portable), ``"portable"`` (``Memory`` and a fabric register) or ``"dp16kd"``
        (only where each memory fits one ``DP16KD``: FT(3, 16) and FT(4, 8)).
    poison_collisions : bool
        For tests, with ``memory="portable"``: a read of a row written in the same cycle
        returns it inverted, so that depending on that undefined read fails in simulation.

    Attributes
    ----------
    requests : In(stream.Signature(request_layout(levels, w, m)))
        Commands: ``op``, ``src``, ``dst``, ``ports`` (for ``RELEASE``).
    results : Out(stream.Signature(result_layout(levels, w, m)))
        One per command, in order: ``op``, ``src``, ``dst``, ``granted``, ``ports``.
    latency : int
        Cycles from a request's handshake to its result being valid (without back-pressure).
    """

    @validates_parameters
    def __init__(
        self,
        levels: int,
        w: int,
        *,
        m: int | None = None,
        memory: str = "auto",
        poison_collisions=False,
    ):
        self.levels = SCHEDULER.check("levels", levels)
        self.w = SCHEDULER.check("w", w)
        m = SCHEDULER.check("m", m)  # None or "": m = w, FT(l, w)
        self.m = m = w if m is None else m
        self.tree = tree = GeneralizedFatTree(levels, m, w)
        rows = tree.switch_counts[:-1]  # the link levels' memories
        if max(rows) > MAX_SWITCHES:
            per_level = "per level" if m == w else "on its largest level"
            raise ValueError(
                f"{tree.name()} has {max(rows)} switches {per_level}; the scheduler "
                f"supports at most {MAX_SWITCHES}"
            )
        self.memory = SCHEDULER.check("memory", memory)
        if memory == "dp16kd" and not all(ecp5_block_ram_fits(w, n) for n in rows):
            shape = f"{rows[0]}" if min(rows) == max(rows) else f"{min(rows)}..{max(rows)}"
            raise ValueError(
                f"memory 'dp16kd' needs link memories that fit one DP16KD ({DP16KD_SHAPES}); "
                f"those of {tree.name()} have {w} bits x {shape} rows"
            )
        if poison_collisions and memory != "portable":
            raise ValueError(f"poison_collisions needs memory 'portable', not {memory!r}")
        self.poison_collisions = poison_collisions
        self.port_bits = ceil_log2(w)
        #: Bits of a base-m digit of a node or a switch (``port_bits`` when ``m == w``).
        self.digit_bits = ceil_log2(m)
        # The widest switch number of any level: l-1 digits of the wider kind.
        self.switch_bits = (levels - 1) * max(self.port_bits, self.digit_bits)
        # Input register, four stages per level, two cycles through the output FIFO.
        self.latency = pipeline_latency(levels)
        super().__init__(
            {
                "requests": In(stream.Signature(request_layout(levels, w, m))),
                "results": Out(stream.Signature(result_layout(levels, w, m))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        layouts = PipelineLayouts(
            self.levels, self.w, self.port_bits, self.switch_bits, self.levels * self.digit_bits
        )
        memory = {"form": self.memory, "poison_collisions": self.poison_collisions}
        entry = Signal(layouts.slot, name="entry")  # the input register
        blocks = [
            LinkLevel(
                h,
                layouts,
                w=self.w,
                depth=self.tree.switch_counts[h],
                port_bits=self.port_bits,
                memory=memory,
                digit_bits=self.digit_bits,
                levels=self.levels,
            )
            for h in range(self.levels - 1)
        ]
        accept = Signal()
        room = self._result_queue(m, blocks[-1].leaving, accept)

        is_clear = Signal()
        m.d.comb += is_clear.eq(self.requests.payload.op == Op.CLEAR)
        clear = _ClearSequencer(max(self.tree.switch_counts[:-1]))  # the deepest memory
        idle = ~entry.valid & ~Cat(valid for block in blocks for valid in block.in_flight()).any()
        clear.elaborate_into(m, start=self.requests.valid & is_clear & idle)
        # A CLEAR is accepted in the cycle its last row is written; other commands whenever
        # the queue has room and no clear is waiting or running (also the one from reset).
        m.d.comb += [
            self.requests.ready.eq(room & ((~is_clear & ~clear.running) | (is_clear & clear.last))),
            accept.eq(self.requests.valid & self.requests.ready),
        ]

        self._input_stage(m, entry, accept, is_clear)
        load = entry
        for block in blocks:
            block.elaborate_into(m, load, clear)
            load = block.leaving
        return m

    def _input_stage(self, m, entry, accept, is_clear):
        """Register the command as a slot: level-0 switches and the common level ``H`` (one
        more than the highest base-m digit in which the leaf switches differ)."""
        req, b = self.requests.payload, self.digit_bits
        s0, d0 = req.src[b:], req.dst[b:]
        differ = Signal(self.switch_bits)
        height = Signal(range(self.levels))
        m.d.comb += differ.eq(s0 ^ d0)
        for k in range(self.levels - 1):
            with m.If(differ[k * b : (k + 1) * b].any()):
                m.d.comb += height.eq(k + 1)
        m.d.sync += [
            entry.valid.eq(accept),
            entry.op.eq(req.op),
            entry.src.eq(req.src),
            entry.dst.eq(req.dst),
            entry.height.eq(height),
            entry.alive.eq(1),
            entry.s.eq(s0),
            entry.d.eq(d0),
            entry.ports.eq(req.ports),
        ]
        with m.If(is_clear):
            m.d.sync += entry.height.eq(0)  # touches no link in the pipeline
        with m.If(req.op != Op.RELEASE):
            m.d.sync += entry.ports.eq(0)

    def _result_queue(self, m, last, accept):
        """The output FIFO behind the last P_h block; returns ``room``.

        The pipeline never stalls (no clock enables on the datapath, which is what limits the
        clock): results queue here, and a command is only accepted while the FIFO has room
        for it and for everything ahead of it in the pipeline.
        """
        depth = self.latency + 1
        layout = result_layout(self.levels, self.w, self.m)
        m.submodules.out_fifo = fifo = SyncFIFOBuffered(width=layout.size, depth=depth)
        outstanding = Signal(range(depth + 1))  # accepted and not yet taken out
        room = Signal()
        result = Signal(layout)
        m.d.comb += [
            room.eq(outstanding < depth),
            result.op.eq(last.op),
            result.src.eq(last.src),
            result.dst.eq(last.dst),
            result.granted.eq(last.alive),
            result.ports.eq(last.ports),
            fifo.w_data.eq(result.as_value()),
            fifo.w_en.eq(last.valid),
            self.results.valid.eq(fifo.r_rdy),
            self.results.payload.eq(fifo.r_data),
            fifo.r_en.eq(self.results.ready),
        ]
        taken = self.results.valid & self.results.ready
        m.d.sync += outstanding.eq(outstanding + accept - taken)
        return room


class _ClearSequencer:
    """CLEAR: once the pipeline is empty, write every row of every memory, one per cycle.

    ``running`` while rows are written, ``row`` the row written now, ``last`` in the cycle of
    the last row (when the CLEAR is accepted).
    """

    def __init__(self, depth: int):
        self.depth = depth
        # Running from reset: block RAM keeps its contents through a reset, so a reset in
        # the middle of traffic would leave the links of the old connections taken.
        self.running = Signal(init=1, name="clear_running")
        self.row = Signal(range(depth), name="clear_row")
        self.last = Signal(name="clear_last")

    def elaborate_into(self, m, *, start):
        m.d.comb += self.last.eq(self.running & (self.row == self.depth - 1))
        with m.If(~self.running):
            with m.If(start):
                m.d.sync += [self.running.eq(1), self.row.eq(0)]
        with m.Else():
            m.d.sync += self.row.eq(self.row + 1)
            with m.If(self.last):
                m.d.sync += self.running.eq(0)
