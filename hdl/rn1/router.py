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

The cycle-exact reference is :class:`fattree.sim.models.rn1.RN1Model`.
"""

from amaranth import Cat, Const, Module, Mux, Signal
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
        # can state properties of it. conn[i, o]: input i holds output o (one-hot per input
        # and per output). held[i] (input i holds an output) and busy[o] (output o is held)
        # are the ORs of conn's rows and columns, kept in registers of their own so the
        # arbitration does not start with two levels of OR (Fmax); they follow conn exactly.
        # discard[i]: input i's transmission got no output and is being thrown away.
        # prev_ctrl[i]: input i's ctrl bit of the cycle before (a head is ctrl rising).
        n = CHANNELS
        self.conn = {
            key: Signal(name=f"conn_{key[0]}_{key[1]}") for key in sorted(circuit_pairs(mode))
        }
        self.held = [Signal(name=f"open_{i}") for i in range(n)]
        self.busy = [Signal(name=f"busy_{o}") for o in range(n)]
        self.discard = [Signal(name=f"discard_{i}") for i in range(n)]
        self.prev_ctrl = [Signal(name=f"prev_ctrl_{i}") for i in range(n)]
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
        bk_in = [self.o[k].bk for k in range(n)]

        conn, held, busy, discard = self.conn, self.held, self.busy, self.discard
        owners = [[i for i in range(n) if (i, o) in conn] for o in range(n)]
        routes = [[o for o in range(n) if (i, o) in conn] for i in range(n)]
        closing = [Signal(name=f"closing_{i}") for i in range(n)]
        prev_ctrl = self.prev_ctrl
        header = [Signal(name=f"header_{i}") for i in range(n)]
        for i in range(n):
            m.d.comb += header[i].eq(~held[i] & ~discard[i] & fwd[i].ctrl & ~prev_ctrl[i])

        claim = self._arbitrate(m, header, busy, conn)

        def status(w):
            return ~w.ctrl & ((w.data == CONNECTED) | (w.data == BLOCKED))

        def blocked_status(w):
            return ~w.ctrl & (w.data == BLOCKED)

        def ending(w):  # a close (if ctrl was 1 a cycle ago) that is not a TURN
            return ~w.ctrl & (w.data != TURN)

        # What each output's bk word says, decoded once per output; each held input then
        # picks the bits of its output (1-bit multiplexers), and the word itself only for
        # its bk register.
        b_dec = []
        for o in range(n):
            w = bk_in[o]
            b_dec.append((status(w), blocked_status(w), ending(w)))
        back = []
        for i in range(n):
            b = Signal(Word, name=f"back_{i}")
            value = 0
            for o in routes[i]:
                value = value | (Value.cast(bk_in[o]) & conn[i, o].replicate(WORD_BITS))
            m.d.comb += Value.cast(b).eq(value)
            picked = [Signal(name=f"back_{i}_{k}") for k in ("status", "blocked", "ending")]
            for k, sig in enumerate(picked):
                m.d.comb += sig.eq(_any(conn[i, o] & b_dec[o][k] for o in routes[i]))
            back.append((b, *picked))

        release = [Signal(name=f"release_{i}") for i in range(n)]
        for i in range(n):
            f = fwd[i]
            b, b_status, b_blocked, b_ending = back[i]
            ends = (ending(f) & prev_ctrl[i]) | (b_ending & self.i[i].bk.ctrl)
            m.d.comb += release[i].eq(
                held[i] & (blocked_status(f) | b_blocked | (closing[i] & (status(f) | b_status)))
            )
            granted = _any(claim[i, o] for o in routes[i])
            m.d.sync += held[i].eq(granted | (held[i] & ~release[i]))
            # Plain gates, not If/Else (see hdl/circuit_router.py: iCE40 logic blocks share
            # one clock enable and reset among eight cells).
            m.d.sync += [
                discard[i].eq((header[i] & ~granted) | (discard[i] & f.ctrl)),
                closing[i].eq(held[i] & ~release[i] & (closing[i] | ends)),
                prev_ctrl[i].eq(f.ctrl),
                Value.cast(self.i[i].bk).eq(
                    (Value.cast(b) & held[i].replicate(WORD_BITS))
                    | (
                        Const(word(0, BLOCKED), WORD_BITS)
                        & (discard[i] & ~f.ctrl).replicate(WORD_BITS)
                    )
                ),
            ]
            for o in routes[i]:
                m.d.sync += conn[i, o].eq(claim[i, o] | (conn[i, o] & ~release[i]))

        # Forward registers: the owner's word, or the rotated head of this cycle's claim. The
        # rotation is chosen per input by `header` (early), not per output by `claim` (late
        # and 64 of them): an input that claims has a head, one that holds has none.
        passed = []
        for i in range(n):
            word_ = Signal(WORD_BITS, name=f"pass_{i}")
            head = Cat(fwd[i].data[2:], fwd[i].data[:2], Const(1, 1))
            m.d.comb += word_.eq(Mux(header[i], head, Value.cast(fwd[i])))
            passed.append(word_)
        for o in range(n):
            claimed = _any(claim[i, o] for i in owners[o])
            freed = _any(conn[i, o] & release[i] for i in owners[o])
            m.d.sync += busy[o].eq(claimed | (busy[o] & ~freed))
            value = 0
            for i in owners[o]:
                value = value | (passed[i] & (conn[i, o] | claim[i, o]).replicate(WORD_BITS))
            m.d.sync += Value.cast(self.o[o].fwd).eq(value)
        return m

    def _arbitrate(self, m, header, busy, conn):
        """``claim[i, o]``: input ``i``'s head takes output ``o`` this cycle."""
        claim = {key: Signal(name=f"claim_{key[0]}_{key[1]}") for key in conn}
        self._header, self._ranks = header, {}
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
            # rank0: the first request of the group in input order; rank1: the second.
            seen_one, seen_two = Const(0), Const(0)
            rank0, rank1 = {}, {}
            if self.priority == "round-robin":
                key = ("primary", d) if mode == "primary" else ("alternate", inputs[0] // 4, d)
                rank0, rank1 = self._rotated_ranks(m, key, inputs, d, prefix, outs)
                self._ranks[key] = (inputs, outs, rank0, rank1)
            for i in inputs if self.priority == "fixed" else ():
                req = Signal(name=f"{prefix}req_{i}_{outs[0]}")
                m.d.comb += req.eq(header[i] & (self.i[i].fwd.data[:2] == d))
                rank0[i] = req & ~seen_one
                rank1[i] = req & seen_one & ~seen_two
                seen_two = seen_two | (seen_one & req)
                seen_one = seen_one | req
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


def _any(values):
    result = Const(0)
    for v in values:
        result = result | v
    return result
