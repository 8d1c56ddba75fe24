"""The RN1 routing component (DeHon 1993; Knight 1989; DeHon, Knight and Minsky 1990).

Eight input and eight output channels, each a nine-bit forward link (a byte and the ``ctrl``
bit that marks the beginning and end of a transmission) and a nine-bit backward link for the
status and, after a turn, for the answer (see :mod:`fattree.spec.rn1` for the words and codes,
docs/dehon.md for the protocol, the timing and the choices the paper leaves open).

* **Primary mode**: one radix-4 crossbar of dilation 2; direction ``d`` leaves on output
  ``2d`` or ``2d + 1``. **Alternate mode**: two radix-4 crossbars of dilation 1 (inputs
  ``0..3`` to outputs ``0..3``, inputs ``4..7`` to outputs ``4..7``). **Run-time mode**: the
  primary mode's circuits, and a one-bit input ``alternate`` that chooses, cycle by cycle,
  by which of the two modes that cycle's heads are routed.
* A head (``ctrl`` rising on an idle input) asks for direction ``data[0:2]`` and is decided in
  the cycle it arrives: requests for one direction are served in input order (the first
  takes output ``2d + r`` when both are free, ``r`` = LFSR bit ``d``; the second the other);
  an input that gets no output discards the transmission and answers BLOCKED on its backward
  link the cycle after the transmission closes.
* A held circuit passes both links through one register each: one cycle per router either
  way; the head leaves rotated right by two bits so the next router finds its direction in
  the low bits. A non-TURN close on either link marks it closing; a BLOCKED status on either
  link, or any status once closing, releases it after passing the status on.

Built for LUT FPGAs: the forward register of a circuit sits at its input (the word as it is
passed on, a head already rotated), and each output is the AND-OR of those registers through
one-hot select registers, one row per input, loaded by a head's claims; the backward register
sits at the input too, fed by the same selects. So every output port is gates on registers
(no path from an input port to an output port), the selects and the release are kept per
input instead of recomputed per output, and the arbitration feeds only the select rows,
``held`` and ``discard`` (docs/dehon.md, "Where one router's LUTs go").

The cycle-exact reference is :class:`fattree.sim.models.rn1.RN1Model`.
"""

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.hdl import Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ...spec.rn1 import (
    BLOCKED,
    CHANNELS,
    CONNECTED,
    DATA_BITS,
    DIRECTIONS,
    LFSR_STEPS,
    LFSR_WIDTH,
    MODES,
    RN1,
    RUNTIME,
    TURN,
    WORD_BITS,
    arbitration_groups,
    circuit_pairs,
    word,
)
from .._validation import validates_parameters
from ..lfsr import LFSR

__all__ = ["Word", "channel_signature", "RN1Router"]

#: One channel word: ``data`` (a byte) in the low bits, then ``ctrl``.
Word = data.StructLayout({"data": DATA_BITS, "ctrl": 1})


def channel_signature() -> wiring.Signature:
    """One channel, from its sender's side: ``fwd`` out, ``bk`` (status, answers) in."""
    return wiring.Signature({"fwd": Out(Word), "bk": In(Word)})


class RN1Router(wiring.Component):
    """One RN1 router.

    Parameters
    ----------
    mode : str
        ``"primary"`` (radix 4, dilation 2), ``"alternate"`` (two radix-4 crossbars,
        dilation 1) or ``"runtime"`` (either, chosen by the ``alternate`` input).
    seed : int
        Seed of the 16-bit LFSR that makes the random choice between two free outputs,
        ``1 .. 65535`` (the alternate mode has no choice to make and no LFSR).
    priority : str
        How requests for one direction are ranked: ``"fixed"`` (input order, lowest first)
        or ``"round-robin"`` (input order from a pointer per direction and crossbar that
        moves past the last input granted; :data:`fattree.spec.rn1.PRIORITIES`).

    Attributes
    ----------
    i : In(channel_signature()).array(8)
        Input channels: ``i[k].fwd`` in, ``i[k].bk`` out (status and answers to the sender).
    o : Out(channel_signature()).array(8)
        Output channels: ``o[k].fwd`` out, ``o[k].bk`` in.
    alternate : In(1)
        Run-time mode only: 0 routes this cycle's heads by the primary mode, 1 by the
        alternate mode. Circuits already held are not affected by a change.
    """

    @validates_parameters
    def __init__(self, mode: str = "primary", seed: int = 1, priority: str = "fixed"):
        self.mode = RN1.check("mode", mode)
        self.seed = RN1.check("seed", seed)
        self.priority = RN1.check("priority", priority)
        channel = channel_signature()
        members = {"i": In(channel).array(CHANNELS), "o": Out(channel).array(CHANNELS)}
        if mode == RUNTIME:
            members["alternate"] = In(1)
        super().__init__(members)
        # The circuit state, made here (not in elaborate) so the proofs (fattree/proofs/rn1.py)
        # can state properties of it. sel[i, o]: the select registers, one-hot per output and
        # per input, that drive the data paths: input i's circuit to output o, kept one cycle
        # past its release (the cycle its last word, the status, passes). gone[i]: input i's
        # circuit was released a cycle ago. conn[i, o] = sel[i, o] and not gone[i]: input i
        # holds output o (gates on registers). held[i]: input i holds an output, a register
        # that follows conn's row (it starts the head's logic); busy[o]: output o is held,
        # the OR of conn's column. discard[i]: input i's transmission got no output and is
        # being thrown away. prev_ctrl[i]: input i's ctrl bit of the cycle before (a head is
        # ctrl rising). passed[i]: input i's word of the cycle before as the outputs pass it
        # (a head rotated).
        n = CHANNELS
        pairs = sorted(circuit_pairs(mode))
        self.sel = {key: Signal(name=f"sel_{key[0]}_{key[1]}") for key in pairs}
        self.conn = {key: Signal(name=f"conn_{key[0]}_{key[1]}") for key in pairs}
        self.held = [Signal(name=f"open_{i}") for i in range(n)]
        self.gone = [Signal(name=f"gone_{i}") for i in range(n)]
        self.busy = [Signal(name=f"busy_{o}") for o in range(n)]
        self.discard = [Signal(name=f"discard_{i}") for i in range(n)]
        self.prev_ctrl = [Signal(name=f"prev_ctrl_{i}") for i in range(n)]
        self.passed = [Signal(WORD_BITS, name=f"pass_{i}") for i in range(n)]
        # pointer[key]: round-robin only, the position in the group's inputs where its
        # ranking starts (arbitration_groups; none with the fixed priority).
        self.pointer = {}
        if priority == "round-robin":
            modes = MODES if mode == RUNTIME else (mode,)
            for m in modes:
                for key, inputs, _ in arbitration_groups(m):
                    name = "ptr_" + "_".join(str(k) for k in key)
                    self.pointer[key] = Signal(range(len(inputs)), name=name)

    def elaborate(self, platform):
        m = Module()
        n = CHANNELS
        fwd = [self.i[k].fwd for k in range(n)]

        conn, held, busy, discard = self.conn, self.held, self.busy, self.discard
        sel, gone, prev_ctrl = self.sel, self.gone, self.prev_ctrl
        owners = [[i for i in range(n) if (i, o) in conn] for o in range(n)]
        routes = [[o for o in range(n) if (i, o) in conn] for i in range(n)]
        closing = [Signal(name=f"closing_{i}") for i in range(n)]
        # The circuit bits are the select registers less the rows released a cycle ago; the
        # outputs they hold are busy (both plain gates on registers, ahead of the arbitration).
        for (i, o), c in conn.items():
            m.d.comb += c.eq(sel[i, o] & ~gone[i])
        for o in range(n):
            m.d.comb += busy[o].eq(_any(conn[i, o] for i in owners[o]))
        header = [Signal(name=f"header_{i}") for i in range(n)]
        for i in range(n):
            m.d.comb += header[i].eq(~held[i] & ~discard[i] & fwd[i].ctrl & ~prev_ctrl[i])

        claim = self._arbitrate(m, header, busy, conn)

        for i in range(n):
            self._input(m, i, header[i], claim, closing[i], routes[i])

        # Forward links: each output the AND-OR of the words the inputs registered (a head
        # already rotated), selected by the select registers (one-hot per output).
        for o in range(n):
            value = 0
            for i in owners[o]:
                value = value | (self.passed[i] & sel[i, o].replicate(WORD_BITS))
            m.d.comb += Value.cast(self.o[o].fwd).eq(value)
        return m

    def _input(self, m, i, header, claim, closing, routes):
        """Input ``i``'s registers: its circuit (select row, ``held``, ``closing``, the
        release), ``discard``, its word as passed on, and its backward link."""
        f, bk_out = self.i[i].fwd, self.i[i].bk
        held, gone, sel = self.held[i], self.gone[i], self.sel
        # The backward word of the held output, picked through the select row (registers):
        # the backward register's input, and decoded for the release.
        back = Signal(WORD_BITS, name=f"back_{i}")
        value = 0
        for o in routes:
            value = value | (Value.cast(self.o[o].bk) & sel[i, o].replicate(WORD_BITS))
        m.d.comb += back.eq(value)
        f_status, f_other = _code(m, Value.cast(f), f"f_code_{i}")
        b_status, b_other = _code(m, back, f"b_code_{i}")
        release = Signal(name=f"release_{i}")
        m.d.comb += release.eq(
            held & ((f_status & f_other) | (b_status & b_other) | (closing & (f_status | b_status)))
        )
        ends = ((f_status | f_other) & self.prev_ctrl[i]) | ((b_status | b_other) & bk_out.ctrl)
        granted = self._granted(m, i, header, claim, routes)
        # A head loads the row with its claims (none if refused); the cycle after a release
        # clears it. In between the row holds, so the selects are one-hot registers.
        with m.If(header | gone):
            m.d.sync += [sel[i, o].eq(claim[i, o]) for o in routes]
        with m.If(header | release):
            m.d.sync += held.eq(granted)
        m.d.sync += [
            gone.eq(release),
            self.discard[i].eq((header & ~granted) | (self.discard[i] & f.ctrl)),
            closing.eq(held & ~release & (closing | ends)),
            self.prev_ctrl[i].eq(f.ctrl),
            # A held input's word as it is; any other's rotated, as a head is passed on.
            self.passed[i].eq(Mux(held, Value.cast(f), Cat(f.data[2:], f.data[:2], Const(1, 1)))),
        ]
        # The backward link: the held output's word (the row is the circuit unless released
        # a cycle ago), or BLOCKED the cycle after a refused transmission closes.
        refused = Const(word(0, BLOCKED), WORD_BITS) & (self.discard[i] & ~f.ctrl).replicate(
            WORD_BITS
        )
        m.d.sync += Value.cast(bk_out).eq(Mux(gone, 0, back) | refused)

    def _granted(self, m, i, header, claim, routes):
        """Input ``i``'s head got an output: with the fixed priority in a fixed mode, from
        whether a head at its place for its direction is served (beside the claims, not after
        them); else the OR of its claims."""
        served = self._served.get(i)
        if served is None:
            return _any(claim[i, o] for o in routes)
        direction = self.i[i].fwd.data[:2]
        granted = Signal(name=f"granted_{i}")
        m.d.comb += granted.eq(header & Array(served[d] for d in range(DIRECTIONS))[direction])
        return granted

    def _arbitrate(self, m, header, busy, conn):
        """``claim[i, o]``: input ``i``'s head takes output ``o`` this cycle."""
        claim = {key: Signal(name=f"claim_{key[0]}_{key[1]}") for key in conn}
        self._header, self._ranks, self._served = header, {}, {}
        lfsr = None
        if self.mode != "alternate":
            m.submodules.lfsr = lfsr = LFSR(LFSR_WIDTH, seed=self.seed, steps=LFSR_STEPS)
        if self.mode != RUNTIME:

            def assign(key, value):
                m.d.comb += claim[key].eq(value)

            self._claims(m, self.mode, header, busy, lfsr, assign)
            self._move_pointers(m, claim)
            return claim
        # Both modes' arbitrations side by side, the input picking one: a change takes
        # effect for the heads of the cycle it is seen in. The alternate mode's pairs are a
        # subset of the primary mode's; the others are never claimed in the alternate mode.
        primary, alternate = {}, {}
        self._claims(m, MODES[0], header, busy, lfsr, primary.__setitem__)
        self._claims(m, MODES[1], header, busy, lfsr, alternate.__setitem__, "alt_")
        for key in conn:
            value = Mux(self.alternate, alternate.get(key, Const(0)), primary[key])
            m.d.comb += claim[key].eq(value)
        self._move_pointers(m, claim)
        return claim

    def _move_pointers(self, m, claim):
        """Round-robin: a group that granted this cycle starts next time one past the last
        input it granted (the second winner when two were). In the run-time mode only the
        groups of the mode the input names move: the other mode's groups share outputs (and
        so claims) with them."""
        for key, (inputs, outs, _, rank1) in self._ranks.items():
            ptr = self.pointer[key]
            on = Const(1)
            if self.mode == RUNTIME:
                on = self.alternate if key[0] == "alternate" else ~self.alternate
            won = [on & _any(claim[i, o] for o in outs) for i in inputs]
            second = _any(won[k] & rank1[i] for k, i in enumerate(inputs))
            last = [won[k] & (rank1[i] | ~second) for k, i in enumerate(inputs)]
            after = 0
            for k in range(len(inputs)):
                after = after | Mux(last[k], (k + 1) % len(inputs), 0)
            m.d.sync += ptr.eq(Mux(_any(won), after, ptr))

    def _rotated_ranks(self, m, key, inputs, d, prefix, outs):
        """Round-robin ranks: the chain of the fixed priority run twice over the group's
        inputs, first those at or after the pointer, then those before it."""
        ptr = self.pointer[key]
        header = self._header
        reqs = []
        for i in inputs:
            req = Signal(name=f"{prefix}req_{i}_{outs[0]}")
            m.d.comb += req.eq(header[i] & (self.i[i].fwd.data[:2] == d))
            reqs.append(req)
        # At the pointer's largest value k, ptr <= k always holds and ptr > k never does:
        # written as constants, not as comparisons that cannot change.
        top = (1 << len(ptr)) - 1
        passes = [(k, reqs[k] & (ptr <= k) if k < top else reqs[k]) for k in range(len(inputs))]
        passes += [(k, reqs[k] & (ptr > k)) for k in range(len(inputs)) if k < top]
        # Named signals along the chain keep each rank's expression small (amaranth.sim
        # compiles expressions as trees: unnamed, the chain's prefixes repeat in every rank).
        seen_one, seen_two = Const(0), Const(0)
        rank0 = dict.fromkeys(inputs, Const(0))
        rank1 = dict.fromkeys(inputs, Const(0))
        for step, (k, req) in enumerate(passes):
            i = inputs[k]
            rank0[i] = rank0[i] | (req & ~seen_one)
            rank1[i] = rank1[i] | (req & seen_one & ~seen_two)
            one = Signal(name=f"{prefix}seen1_{outs[0]}_{step}")
            two = Signal(name=f"{prefix}seen2_{outs[0]}_{step}")
            m.d.comb += [two.eq(seen_two | (seen_one & req)), one.eq(seen_one | req)]
            seen_one, seen_two = one, two
        for ranks, name in ((rank0, "rank0"), (rank1, "rank1")):
            for i in inputs:
                sig = Signal(name=f"{prefix}{name}_{i}_{outs[0]}")
                m.d.comb += sig.eq(ranks[i])
                ranks[i] = sig
        return rank0, rank1

    def _claims(self, m, mode, header, busy, lfsr, assign, prefix=""):
        """A fixed ``mode``'s arbitration: ``assign((i, o), value)`` for every pair it can
        claim."""
        n = CHANNELS
        if mode == "primary":
            groups = [(d, list(range(n)), (2 * d, 2 * d + 1)) for d in range(DIRECTIONS)]
        else:
            groups = [
                (d, list(range(base, base + DIRECTIONS)), (base + d,))
                for base in (0, DIRECTIONS)
                for d in range(DIRECTIONS)
            ]
        for d, inputs, outs in groups:
            if self.priority == "fixed":
                self._fixed_claims(m, header, busy, lfsr, assign, prefix, d, inputs, outs)
                continue
            # rank0: the first request of the group from its pointer on; rank1: the second.
            key = ("primary", d) if mode == "primary" else ("alternate", inputs[0] // 4, d)
            rank0, rank1 = self._rotated_ranks(m, key, inputs, d, prefix, outs)
            self._ranks[key] = (inputs, outs, rank0, rank1)
            if len(outs) == 1:
                (o,) = outs
                for i in inputs:
                    assign((i, o), rank0[i] & ~busy[o])
                continue
            o0, o1 = outs
            f0, f1 = ~busy[o0], ~busy[o1]
            r = lfsr.value[d]
            for i in inputs:
                assign((i, o0), (rank0[i] & f0 & (~f1 | ~r)) | (rank1[i] & f0 & f1 & r))
                assign((i, o1), (rank0[i] & f1 & (~f0 | r)) | (rank1[i] & f0 & f1 & ~r))

    def _fixed_claims(self, m, header, busy, lfsr, assign, prefix, d, inputs, outs):
        """One group's claims with the fixed priority. Per place in input order, what a head
        there for the group's direction takes (``take[k]``: from the free outputs and the
        heads before it, whoever has one), then each claim is the head and that."""
        if len(outs) == 1:
            free = [~busy[outs[0]]]
            firsts, seconds = free, [Const(0)]
        else:
            f0, f1 = ~busy[outs[0]], ~busy[outs[1]]
            r = lfsr.value[d]
            firsts = [f0 & (~f1 | ~r), f1 & (~f0 | r)]
            seconds = [f0 & f1 & r, f0 & f1 & ~r]
        seen_one, seen_two = Const(0), Const(0)
        anyfree = _any(firsts)
        bothfree = _any(seconds)
        for i in inputs:
            req = Signal(name=f"{prefix}req_{i}_{outs[0]}")
            m.d.comb += req.eq(header[i] & (self.i[i].fwd.data[:2] == d))
            for o, first, second in zip(outs, firsts, seconds, strict=True):
                take = Signal(name=f"{prefix}take_{i}_{o}")
                m.d.comb += take.eq((~seen_one & first) | (seen_one & ~seen_two & second))
                assign((i, o), req & take)
            if self.mode != RUNTIME:
                served = Signal(name=f"served_{i}_{d}")
                m.d.comb += served.eq((~seen_one & anyfree) | (seen_one & ~seen_two & bothfree))
                self._served.setdefault(i, {})[d] = served
            one = Signal(name=f"{prefix}seen1_{i}_{outs[0]}")
            two = Signal(name=f"{prefix}seen2_{i}_{outs[0]}")
            m.d.comb += [two.eq(seen_two | (seen_one & req)), one.eq(seen_one | req)]
            seen_one, seen_two = one, two


def _code(m, w, name):
    """``(status, other)`` of a ``ctrl = 0`` word: a status (CONNECTED, BLOCKED) sets
    ``status``; BLOCKED or a close that is neither TURN nor a status sets ``other``. So
    BLOCKED is both, a close that is no TURN either, TURN or a byte neither."""
    data, ctrl = w[:DATA_BITS], w[DATA_BITS]
    status = Signal(name=f"{name}_status")
    other = Signal(name=f"{name}_other")
    m.d.comb += [
        status.eq(~ctrl & ((data == CONNECTED) | (data == BLOCKED))),
        other.eq(~ctrl & (data != TURN) & (data != CONNECTED)),
    ]
    return status, other


def _any(values):
    result = Const(0)
    for v in values:
        result = result | v
    return result
