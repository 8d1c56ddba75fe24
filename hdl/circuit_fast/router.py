"""One router ``SW(r, t)`` of the fast circuit tree (:mod:`fattree.spec.circuit_fast`, whose
docstring is the whole behaviour: hold, route, up, down, forward, acknowledgement by the
mirror).

Ports ``a``, ``b`` face the subtrees, ``c``, ``d`` the parent; ``port.i`` is the incoming link
(``valid``, ``head``, ``dest``, ``data`` in, ``ack`` out) and ``port.o`` the outgoing one. A
head is decided in the cycle it arrives and leaves through the output register one cycle
later; body words follow the circuit their head set up. The routers of the top level have no
parent: their ``c`` and ``d`` are left unused (every head turns there).

The hardware:

* ``conn[i, o]``, one bit per possible circuit, is "input ``i`` sent a word out of ``o`` in
  the last cycle"; with this cycle's ``valid`` and not ``head`` it is the spec's hold, and
  the next value is just "granted or held now", so a circuit ends by itself with its message.
* Outputs are AND-OR multiplexers of one-hot owner bits; an unused output is all zeros.
* The acknowledgement mirror: per input a shift register of ``f(i)`` stages (the last one
  is the ``ack`` output); per output a shift register of the owner of each head, ``1 + f(o)``
  stages (stage 1 is ``conn``), which sends the output's ``ack`` back into its owner's
  register at the stage where it leaves at ``tau + f(i)``: the last stage going straight
  through, :func:`~fattree.spec.circuit_fast.turn_pad` stages earlier for a turn. A dropped
  head needs nothing: nobody acknowledges it.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...params import check_int_range
from ...spec.circuit import LFSR_WIDTH, PORTS, A, B, C, D
from ...spec.circuit_fast import CIRCUIT_TREE_FAST, DOWN, UP, link_fields, mirror_delay, subtree
from .._validation import validates_parameters
from ..lfsr import LFSR

__all__ = ["link_signature", "port_signature", "CircuitFastRouter"]


def link_signature(leaves: int, width: int) -> wiring.Signature:
    """One link direction, from its sender's side: the fields of
    :func:`~fattree.spec.circuit_fast.link_fields` forward, ``ack`` back."""
    members = {name: Out(size) for name, size in link_fields(leaves, width).items()}
    members["ack"] = In(1)
    return wiring.Signature(members)


def port_signature(leaves: int, width: int) -> wiring.Signature:
    """A router port: the incoming link ``i`` and the outgoing link ``o``."""
    link = link_signature(leaves, width)
    return wiring.Signature({"i": In(link), "o": Out(link)})


class CircuitFastRouter(wiring.Component):
    """Router ``SW(level, switch)`` of a fast circuit tree of ``leaves`` nodes.

    Parameters
    ----------
    leaves : int
        Nodes of the tree (a power of two, ``2 .. 256``): the width of ``dest`` and the
        mirror delays.
    width : int
        Data wires per link direction.
    level, switch : int
        ``r`` (``0 .. lg leaves - 1``) and ``t`` (``0 .. leaves / 2 - 1``).
    seed : int
        Seed of the router's 16-bit LFSR, ``1 .. 65535``
        (:func:`fattree.spec.circuit.router_seed` in a tree; not used with ``shared_lfsr``).
    shared_lfsr : bool
        Take the LFSR bit from the ``lfsr_bit`` input, which a tree derives from the LFSR it
        shares (:func:`fattree.hdl.circuit_router.shared_lfsr_bit`, as for
        :class:`~fattree.hdl.circuit_router.CircuitRouter`): the same bit, no LFSR here.
    subtree_input : bool
        Take the router's subtree number (:func:`fattree.spec.circuit_fast.subtree`) from the
        ``subtree`` input, not from ``switch``. With ``shared_lfsr`` too, the routers of one
        level differ in nothing but what the tree connects to them, and are one Verilog
        module.

    Attributes
    ----------
    a, b, c, d : port_signature(leaves, width)
        Down ports ``a``, ``b``; up ports ``c``, ``d`` (unused at the top level).
    lfsr_bit : In(1)
        With ``shared_lfsr``: bit 0 of the router's LFSR in this cycle.
    subtree : In(lg leaves - level - 1)
        With ``subtree_input``, below the top level: the router's subtree number.
    """

    @validates_parameters
    def __init__(
        self, leaves=4, width=8, level=0, switch=0, seed=1, shared_lfsr=False, subtree_input=False
    ):
        self.leaves = CIRCUIT_TREE_FAST.check("leaves", leaves)
        self.width = CIRCUIT_TREE_FAST.check("width", width)
        self.h = leaves.bit_length() - 1
        self.level = check_int_range("level", level, 0, self.h - 1)
        self.switch = check_int_range("switch", switch, 0, leaves // 2 - 1)
        self.seed = check_int_range("seed", seed, 1, (1 << LFSR_WIDTH) - 1)
        self.shared_lfsr = bool(shared_lfsr)
        self.subtree_input = bool(subtree_input)
        self.top = level == self.h - 1
        # Ports in use: the top level has no parent.
        self.live = (A, B) if self.top else (A, B, C, D)
        # Outputs each input may take: the other down port (turn), itself at level 0 (a head
        # to its own node), both up ports below the top; c and d go down only.
        self.routes = {
            A: [B] + ([A] if level == 0 else []) + ([] if self.top else [C, D]),
            B: [A] + ([B] if level == 0 else []) + ([] if self.top else [C, D]),
            C: [A, B],
            D: [A, B],
        }
        self.conn = {
            (i, o): Signal(name=f"conn_{PORTS[i]}{PORTS[o]}")
            for i in self.live
            for o in self.routes[i]
        }
        self.owners = {o: [i for i in self.live if (i, o) in self.conn] for o in self.live}
        h, r = self.h, level
        self.f_in = {A: mirror_delay(h, UP, r), B: mirror_delay(h, UP, r)}
        self.f_out = {A: mirror_delay(h, DOWN, r), B: mirror_delay(h, DOWN, r)}
        if not self.top:
            self.f_in.update({C: mirror_delay(h, DOWN, r + 1), D: mirror_delay(h, DOWN, r + 1)})
            self.f_out.update({C: mirror_delay(h, UP, r + 1), D: mirror_delay(h, UP, r + 1)})
        port = port_signature(leaves, width)
        members = {"a": Out(port), "b": Out(port), "c": Out(port), "d": Out(port)}
        if self.shared_lfsr:
            members["lfsr_bit"] = In(1)
        if self.subtree_input and not self.top:
            members["subtree"] = In(self.h - level - 1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        x = self._lfsr_bit(m)
        ports = [self.a, self.b, self.c, self.d]
        inp = [p.i for p in ports]
        conn = self.conn
        # Hold: a body word (valid, not head) of an input that sent a word out of o in the
        # last cycle; a dead input never has conn set, so its words go nowhere.
        holds = {}
        for (i, o), held in conn.items():
            holds[i, o] = Signal(name=f"holds_{PORTS[i]}{PORTS[o]}")
            m.d.comb += holds[i, o].eq(held & inp[i].valid & ~inp[i].head)
        busy = {o: _any(holds[i, o] for i in self.owners[o]) for o in self.live}
        grant, win = self._decide(m, x, inp, busy)
        use = {}
        for key in conn:
            use[key] = Signal(name=f"use_{PORTS[key[0]]}{PORTS[key[1]]}")
            m.d.comb += use[key].eq(grant[key] | holds[key])
            m.d.sync += conn[key].eq(use[key])
        self._forward(m, inp, [p.o for p in ports], grant, use, holds, busy, win)
        self._mirror(m, inp, [p.o for p in ports])
        return m

    def _lfsr_bit(self, m):
        """``x``: bit 0 of this router's LFSR in this cycle."""
        if self.shared_lfsr:
            return self.lfsr_bit
        m.submodules.lfsr = lfsr = LFSR(LFSR_WIDTH, seed=self.seed)
        return lfsr.value[0]

    def _subtree(self):
        """The subtree number (below the top level): the ``subtree`` input, or from
        ``switch``."""
        return self.subtree if self.subtree_input else subtree(self.level, self.switch)

    def _decide(self, m, x, inp, busy):
        """This cycle's grants ``grant[i, o]`` by the spec's rules 2-4, and ``win[i, o]``: the
        head on ``i`` gets ``o`` if ``o`` is not busy. A head granted nothing is dropped."""
        r = self.level
        grant = {key: Signal(name=f"grant_{PORTS[key[0]]}{PORTS[key[1]]}") for key in self.conn}
        req = {}  # (i, o): a head on i wants down port o
        ups = {}  # a head on i goes up
        win = {}  # (i, o): the head on i gets o if o is not busy
        for i in (A, B):
            head, dest = inp[i].head, inp[i].dest
            turn = Signal(name=f"turn_{PORTS[i]}")
            here = 1 if self.top else (dest >> (r + 1)) == self._subtree()
            m.d.comb += turn.eq(head & here)
            other = B if i == A else A
            if r == 0:
                req[i, A], req[i, B] = turn & ~dest[0], turn & dest[0]
            else:
                # Above level 0 a head on a turning here is for b's subtree, and vice versa.
                req[i, other] = turn
            if not self.top:
                up = head & ~turn
                # a prefers c when x is 0, b prefers d; each the other one if that is busy.
                # Two heads on a and b mean neither holds an up port: they never meet.
                to_d = Mux(x, ~busy[D], busy[C]) if i == A else Mux(x, busy[C], ~busy[D])
                m.d.comb += [grant[i, C].eq(up & ~to_d), grant[i, D].eq(up & to_d)]
                ups[i] = up
        if not self.top:
            for i in (C, D):
                req[i, A] = inp[i].head & ~inp[i].dest[r]
                req[i, B] = inp[i].head & inp[i].dest[r]
        if not self.top:
            # Two heads going up take c and d by x; one alone gets the free one.
            win[A, C] = ups[A] & ~(ups[B] & x)
            win[B, C] = ups[B] & ~(ups[A] & ~x)
            win[A, D] = ups[A] & ~(ups[B] & ~x)
            win[B, D] = ups[B] & ~(ups[A] & x)
        for o in (A, B):
            free = ~busy[o]
            before = Const(0, 1)  # a request of higher priority
            for i in (A, B):
                if (i, o) in req:
                    win[i, o] = req[i, o] & ~before
                    m.d.comb += grant[i, o].eq(win[i, o] & free)
                    before = before | req[i, o]
            if not self.top:
                rc, rd = req[C, o], req[D, o]
                win[C, o] = rc & ~before & ~(x & rd)
                win[D, o] = rd & ~before & ~(~x & rc)
                m.d.comb += [grant[C, o].eq(win[C, o] & free), grant[D, o].eq(win[D, o] & free)]
        return grant, win

    def _forward(self, m, inp, out, grant, use, holds, busy, win):
        """The output registers: a word goes out if an input uses the output (``go``, the
        flip-flops' synchronous reset), and then it is the holder's if the output is busy,
        else the head's that wins it: both selects are one-hot over the owners."""
        for o in self.live:
            owners = self.owners[o]
            go = Signal(name=f"go_{PORTS[o]}")
            m.d.comb += go.eq(_any(use[i, o] for i in owners))
            dest, data = 0, 0
            for i in owners:
                # conn is one-hot per output, so it picks the holder when one is there.
                sel = Signal(name=f"sel_{PORTS[i]}{PORTS[o]}")
                m.d.comb += sel.eq(Mux(busy[o], self.conn[i, o], win[i, o]))
                dest = dest | (inp[i].dest & sel.replicate(self.h))
                data = data | (inp[i].data & sel.replicate(self.width))
            m.d.sync += [
                out[o].valid.eq(go),
                out[o].head.eq(_any(grant[i, o] for i in owners)),
                out[o].dest.eq(Mux(go, dest, 0)),
                out[o].data.eq(Mux(go, data, 0)),
            ]

    def _mirror(self, m, inp, out):
        """``ack`` of every input at ``tau + f(i)`` for the head at ``tau``: the granted
        output's ``ack`` at ``tau + 1 + f(o)``, else 0."""
        back = {i: {} for i in self.live}  # input -> {stage: acks entering that stage}
        for o in self.live:
            owners, f = self.owners[o], self.f_out[o]
            # The owner of the head on o at tau + 1 is conn at tau + 1 (stage 1), then
            # delayed as an index into `owners` to stage 1 + f(o), when o's ack is its fate.
            if len(owners) == 1:
                who = {owners[0]: 1}
            else:
                bits = (len(owners) - 1).bit_length()
                code = Cat(
                    _any(self.conn[i, o] for k, i in enumerate(owners) if k >> b & 1)
                    for b in range(bits)
                )
                line = [Signal(bits, name=f"owner_{PORTS[o]}{s}") for s in range(2, f + 2)]
                m.d.sync += line[0].eq(code)
                for s in range(1, f):
                    m.d.sync += line[s].eq(line[s - 1])
                who = {i: line[-1] == k for k, i in enumerate(owners)}
            for i in owners:
                stage = 2 + f
                assert stage <= self.f_in[i]  # the spec's delays leave room for the pass-back
                back[i][stage] = back[i].get(stage, 0) | (out[o].ack & who[i])
        for i in self.live:
            f = self.f_in[i]
            stages = [Signal(name=f"mirror_{PORTS[i]}{s}") for s in range(1, f)] + [inp[i].ack]
            previous = Const(0, 1)
            for s, stage in enumerate(stages, start=1):
                m.d.sync += stage.eq(previous | back[i].get(s, 0))
                previous = stage


def _any(values):
    """The OR of ``values``; a 1-bit 0 for none (so that ``~`` of it is a 1-bit 1)."""
    result = Const(0, 1)
    for v in values:
        result = result | v
    return result
