"""Properties of :class:`fattree.hdl.rn1.router.RN1Router`, written from the channel protocol
(:mod:`fattree.spec.rn1`, docs/dehon.md), not from its gates.

Free inputs: every input channel's forward word and every output channel's backward word, at
any time (any head, any byte, any close, any status, also on channels the router does not
hold), and for the run-time router (mode 2) its ``alternate`` input in every cycle; the
LFSR's state is free in the induction step (any random choice). Read from inside:
the circuit bits ``conn``, ``held`` (a register that follows conn's rows) and ``busy`` (conn's
columns), and ``discard``
(a refused transmission being thrown away) and ``prev_ctrl`` (the ctrl bit of the cycle
before, tied to the harness's own history by ``circuits``), the state the protocol speaks of.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Signal
from amaranth.hdl import Value

from ..spec.rn1 import (
    BLOCKED,
    CHANNELS,
    DIRECTIONS,
    WORD_BITS,
    arbitration_groups,
    outputs_for,
    word,
)
from .harness import Harness, any_of, at_most_one

__all__ = ["harness", "RN1Properties"]

MODES = ("primary", "alternate", "runtime")


PRIORITIES = ("fixed", "round-robin")


def harness(params: dict, broken: bool) -> RN1Properties:
    mode = params.get("mode", 0)
    if mode not in (0, 1, 2):
        raise ValueError(f"mode must be 0 (primary), 1 (alternate) or 2 (runtime), not {mode!r}")
    priority = params.get("priority", 0)
    if priority not in (0, 1):
        raise ValueError(f"priority must be 0 (fixed) or 1 (round-robin), not {priority!r}")
    return RN1Properties(MODES[mode], broken=broken, priority=PRIORITIES[priority])


class RN1Properties(Harness):
    def __init__(self, mode: str, *, broken: bool = False, priority: str = "fixed"):
        super().__init__()
        from ..hdl.rn1.router import RN1Router

        self.mode = mode
        self.priority = priority
        self.dut = RN1Router(mode, seed=1, priority=priority)
        self.broken = broken
        d = self.dut
        self.ports = [d.i[k].fwd.as_value() for k in range(CHANNELS)]
        self.ports += [d.o[k].bk.as_value() for k in range(CHANNELS)]
        if mode == "runtime":
            self.ports.append(d.alternate)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self.dut
        r = self._history(m)
        self.emit(
            m,
            {
                "circuits": self._circuits(r),
                "claims_follow_direction": self._claims(r),
                "passes_owner_words": [r.first | p for p in self._passes(r)],
                "backward_words": self._backward(r),
                "heads_served_when_outputs_free": self._heads(m, r),
                "blocked_releases": self._releases(r),
                "idle_router_quiet": self._idle(r),
                "responds": self._responds(r),
            },
        )
        return m

    def _history(self, m) -> _Router:
        """The router's ports and state, and one cycle of history of everything the rules
        speak of."""
        dut, n = self.dut, CHANNELS
        conn, held, busy, discard = dut.conn, dut.held, dut.busy, dut.discard
        fwd = [Value.cast(dut.i[k].fwd) for k in range(n)]
        o_bk = [Value.cast(dut.o[k].bk) for k in range(n)]
        ctrl = [f[WORD_BITS - 1] for f in fwd]
        first = self.first_cycle(m)
        was_conn = {k: _past(m, c, f"conn_{k[0]}_{k[1]}") for k, c in conn.items()}
        was_held = [_past(m, held[i], f"held_{i}") for i in range(n)]
        was_busy = [_past(m, busy[o], f"busy_{o}") for o in range(n)]
        was_discard = [_past(m, discard[i], f"discard_{i}") for i in range(n)]
        was_fwd = [_past(m, fwd[i], f"fwd_{i}") for i in range(n)]
        was_o_bk = [_past(m, o_bk[o], f"o_bk_{o}") for o in range(n)]
        # ctrl two cycles ago: a head at t-1 is ctrl rising at t-1.
        prev_ctrl = [Signal(name=f"prev_ctrl_{i}") for i in range(n)]
        older_ctrl = [Signal(name=f"older_ctrl_{i}") for i in range(n)]
        for i in range(n):
            m.d.sync += [prev_ctrl[i].eq(ctrl[i]), older_ctrl[i].eq(prev_ctrl[i])]
        # A head at t-1: ctrl rising on an input that neither held a circuit nor was
        # discarding.
        was_head = [
            ~first & prev_ctrl[i] & ~older_ctrl[i] & ~was_held[i] & ~was_discard[i]
            for i in range(n)
        ]
        # The fixed mode each cycle's heads were routed by, and how much a rule of it holds:
        # the run-time router's input one cycle ago picks the primary or alternate rule.
        if self.mode == "runtime":
            was_alt = _past(m, dut.alternate, "alternate")
            settings = [("primary", ~was_alt), ("alternate", was_alt)]
        else:
            settings = [(self.mode, Const(1))]
        return _Router(
            conn=conn,
            held=held,
            busy=busy,
            discard=discard,
            fwd=fwd,
            bk_out=[Value.cast(dut.i[k].bk) for k in range(n)],
            o_fwd=[Value.cast(dut.o[k].fwd) for k in range(n)],
            first=first,
            was_conn=was_conn,
            was_held=was_held,
            was_busy=was_busy,
            was_discard=was_discard,
            was_fwd=was_fwd,
            was_o_bk=was_o_bk,
            prev_ctrl=prev_ctrl,
            was_head=was_head,
            settings=settings,
        )

    def _circuits(self, r: _Router) -> list:
        """At most one owner per output and one output per input, ``held``/``busy`` follow
        the circuits, a held input is not discarding."""
        n, conn, held, busy = CHANNELS, r.conn, r.held, r.busy
        circuits = []
        for o in range(n):
            owners = [conn[i, o] for i in range(n) if (i, o) in conn]
            circuits += [at_most_one(owners), busy[o] == any_of(owners)]
        for i in range(n):
            mine = [conn[i, o] for o in range(n) if (i, o) in conn]
            circuits += [at_most_one(mine), held[i] == any_of(mine), ~(held[i] & r.discard[i])]
            # The harness's ctrl history is the router's (both register the ctrl bit).
            circuits.append(r.prev_ctrl[i] == self.dut.prev_ctrl[i])
        return circuits

    def _claims(self, r: _Router) -> list:
        """A new circuit comes from a head at t-1 whose direction ``o`` serves, onto an
        output that was free; the output shows the head, rotated."""
        claims = []
        for (i, o), c in r.conn.items():
            rose = c & ~r.was_conn[i, o]
            serves = any_of(
                on & r.head_direction(i, d)
                for fixed, on in r.settings
                for d in range(DIRECTIONS)
                if o in outputs_for(fixed, i, d)
            )
            claims.append(~rose | (serves & ~r.was_busy[o] & (r.o_fwd[o] == r.rotated(i))))
        return claims

    def _passes(self, r: _Router) -> list:
        """A held output passes its owner's word of the cycle before; an output neither held
        nor just claimed carries nothing."""
        n, conn, was_conn, o_fwd = CHANNELS, r.conn, r.was_conn, r.o_fwd
        passes = []
        for o in range(n):
            owners = [i for i in range(n) if (i, o) in conn]
            for i in owners:
                passes.append(~was_conn[i, o] | (o_fwd[o] == r.was_fwd[i]))
            claimed = any_of(conn[i, o] & ~was_conn[i, o] for i in owners)
            passes.append(any_of(was_conn[i, o] for i in owners) | claimed | (o_fwd[o] == 0))
        return passes

    def _backward(self, r: _Router) -> list:
        """The backward link: the held output's word one cycle late; BLOCKED the cycle after
        a refused transmission closes; else idle."""
        n = CHANNELS
        blocked = Const(word(0, BLOCKED), WORD_BITS)
        backward = []
        for i in range(n):
            routes = [o for o in range(n) if (i, o) in r.conn]
            expect = Const(0, WORD_BITS)
            for o in routes:
                expect = expect | (r.was_o_bk[o] & r.was_conn[i, o].replicate(WORD_BITS))
            closed_refused = r.was_discard[i] & ~r.prev_ctrl[i]
            expect = expect | (blocked & closed_refused.replicate(WORD_BITS))
            backward.append(r.first | (r.bk_out[i] == expect))
        return backward

    def _heads(self, m, r: _Router) -> list:
        """Arbitration: a head for direction d is served when fewer heads for d came before
        it (in input order, on the same crossbar) than there were free outputs for d; a head
        that gets no output is thrown away.

        Round-robin: the group's order starts at its pointer of the cycle before (the
        router's register, read like conn): input j comes before input i when its distance
        from the pointer is smaller."""
        n = CHANNELS
        was_ptr = {
            key: _past(m, p, "ptr_" + "_".join(map(str, key)))
            for key, p in self.dut.pointer.items()
        }

        def before(fixed, j, i, d):
            key, inputs = _group(fixed, i, d)
            size, ptr = len(inputs), was_ptr[key]
            pj = (inputs.index(j) - ptr + size) % size
            pi = (inputs.index(i) - ptr + size) % size
            return pj < pi

        heads = []
        for i in range(n):
            for d in range(DIRECTIONS):
                served = Const(0)
                for fixed, on in r.settings:
                    outs = outputs_for(fixed, i, d)
                    free = [~r.was_busy[o] for o in outs]
                    if self.priority == "fixed":
                        group = [j for j in range(i) if outputs_for(fixed, j, d) == outs]
                        earlier = [r.head_direction(j, d) for j in group]
                    else:
                        group = [j for j in range(n) if j != i and outputs_for(fixed, j, d) == outs]
                        earlier = [r.head_direction(j, d) & before(fixed, j, i, d) for j in group]
                    if len(outs) == 1:
                        rule = free[0] & ~any_of(earlier)
                    else:
                        rule = (free[0] & free[1] & ~_at_least_two(earlier)) | (
                            (free[0] ^ free[1]) & ~any_of(earlier)
                        )
                    if self.broken:  # a wrong contract: a head is served ahead of earlier ones
                        rule = free[0] if len(outs) == 1 else free[0] | free[1]
                    served = served | (on & rule)
                heads.append(~r.head_direction(i, d) | (served == r.held[i]))
                heads.append(~r.head_direction(i, d) | (~served == r.discard[i]))
        return heads

    def _releases(self, r: _Router) -> list:
        """A BLOCKED status on either link of a held circuit frees it and its output."""
        n, conn, was_conn = CHANNELS, r.conn, r.was_conn
        blocked = Const(word(0, BLOCKED), WORD_BITS)
        releases = []
        for i in range(n):
            routes = [o for o in range(n) if (i, o) in conn]
            blocked_back = any_of(was_conn[i, o] & (r.was_o_bk[o] == blocked) for o in routes)
            hit = r.was_held[i] & ((r.was_fwd[i] == blocked) | blocked_back)
            freed = Cat(~conn[i, o] | ~was_conn[i, o] for o in routes).all()
            releases.append(r.first | ~hit | (~r.held[i] & freed))
        return releases

    def _idle(self, r: _Router) -> list:
        """Nothing held, no byte on any input: every output idle next cycle."""
        was_ctrl = Cat(r.was_fwd[i][WORD_BITS - 1] for i in range(CHANNELS))
        quiet = ~any_of(r.was_held) & ~any_of(was_ctrl)
        return [r.first | ~quiet | (Cat(*r.o_fwd) == 0)]

    def _responds(self, r: _Router) -> list:
        """Bounded response, ``B`` = 1 cycle each way: a head is answered the cycle after it
        arrives, passed on (its input holds an output that shows it, rotated) or refused (its
        input discarding); a refused transmission's BLOCKED is on its backward link the cycle
        after it closes. (While a refused transmission stays open its sender waits by its
        own choice: the answer is owed from the close.)"""
        n, blocked = CHANNELS, Const(word(0, BLOCKED), WORD_BITS)
        checks = []
        for i in range(n):
            routes = [o for o in range(n) if (i, o) in r.conn]
            shown = any_of(r.conn[i, o] & (r.o_fwd[o] == r.rotated(i)) for o in routes)
            if self.broken:  # a wrong contract: every head is passed on
                checks.append(~r.was_head[i] | shown)
            else:
                checks.append(~r.was_head[i] | shown | r.discard[i])
            closed_refused = r.was_discard[i] & ~r.prev_ctrl[i]
            checks.append(r.first | ~closed_refused | (r.bk_out[i] == blocked))
        return checks


@dataclass(frozen=True)
class _Router:
    """What the properties speak of: the router's ports and state (``conn``, ``held``,
    ``busy``, ``discard``), and the harness's one cycle of history (``was_*``)."""

    conn: dict
    held: object
    busy: object
    discard: object
    fwd: list
    bk_out: list
    o_fwd: list
    first: Signal
    was_conn: dict
    was_held: list
    was_busy: list
    was_discard: list
    was_fwd: list
    was_o_bk: list
    prev_ctrl: list
    #: Per input, a head at t-1.
    was_head: list
    #: ``(fixed mode, on)``: the modes the heads of t-1 were routed by, and when.
    settings: list

    def head_direction(self, i, d):
        """Input ``i`` had a head for direction ``d`` at t-1."""
        return self.was_head[i] & (self.was_fwd[i][:2] == d)

    def rotated(self, i):
        """Input ``i``'s head as passed on: rotated right by two bits, ctrl 1."""
        f = self.was_fwd[i]
        return Cat(f[2:8], f[:2], Const(1, 1))


def _past(m, value, name):
    """``value`` one cycle ago (a register ``was_<name>``)."""
    reg = Signal(len(value), name=f"was_{name}")
    m.d.sync += reg.eq(value)
    return reg


def _group(mode: str, i: int, d: int):
    """The arbitration group (key, inputs) of input ``i``'s direction ``d`` in ``mode``."""
    for key, inputs, _ in arbitration_groups(mode):
        if key[-1] == d and i in inputs:
            return key, inputs
    raise AssertionError((mode, i, d))


def _at_least_two(bits):
    bits = list(bits)
    out = Const(0)
    for x in range(len(bits)):
        for y in range(x + 1, len(bits)):
            out = out | (bits[x] & bits[y])
    return out
