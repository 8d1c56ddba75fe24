"""Four-port circuit-switched router of Strumpen and Krishnamurthy (2005), section 3, Fig. 2.

Ports ``a`` and ``b`` face the left and right subtrees (downstream), ``c`` and ``d`` the parent
router node (upstream). Every port is a full-duplex link: ``port.i`` is the incoming link
(``valid`` + ``data`` in, ``reject`` + ``ack`` out, back to its sender) and ``port.o`` the
outgoing one (``valid`` + ``data`` out, ``reject`` + ``ack`` in).

Messages (see docs/circuit_tree.md for the whole protocol and a timing diagram) start with
one *route word* per router on the path; each router reads bit 0 of the first word of a new
message (the cycle its input's ``valid`` rises, the *decision cycle*), strips that word and
forwards the rest through one output register, so a message advances one hop per two cycles.

* Route bit on ``a`` or ``b``: 0 = go up, 1 = turn here (out of the other down port).
  Going up, the message takes up port ``r XOR e`` (``r``: bit 0 of this router's LFSR,
  ``e``: 0 for ``a``, 1 for ``b``), or the other one if that is busy; two messages arriving
  together therefore take different up ports, and the way up never collides.
* Route bit on ``c`` or ``d``: the down port, 0 = ``a``, 1 = ``b``.
* Message rejection rule: a claim on a held outgoing wire is rejected; of the claims on one
  free downstream wire in one cycle the turn wins, then ``c``, then ``d``; the others are
  rejected. A rejected input sends ``reject`` back (registered: next cycle) and ignores its
  ``valid`` until it falls (the rest of the rejected stream).
* ``reject`` or ``ack`` arriving on an outgoing link releases that circuit in the same cycle
  (free for claims from the next cycle) and is passed back on the owner's incoming link in
  the next cycle: one hop per cycle.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..spec.circuit import CIRCUIT_ROUTER, LFSR_WIDTH, PORTS, A, B, C, D, lfsr_mask
from ..spec.lfsr import MAXIMAL_TAPS
from ._validation import validates_parameters
from .lfsr import LFSR

__all__ = ["link_signature", "port_signature", "CircuitRouter", "shared_lfsr_bit"]


def link_signature(width: int) -> wiring.Signature:
    """One direction of a full-duplex link, from its sender's side."""
    return wiring.Signature({"valid": Out(1), "data": Out(width), "reject": In(1), "ack": In(1)})


def port_signature(width: int) -> wiring.Signature:
    """A router port: the incoming link ``i`` and the outgoing link ``o``."""
    link = link_signature(width)
    return wiring.Signature({"i": In(link), "o": Out(link)})


class CircuitRouter(wiring.Component):
    """One four-port router.

    Parameters
    ----------
    width : int
        Data wires per link direction (1 = bit-serial), at least 1.
    seed : int
        Seed of the router's 16-bit LFSR, ``1 .. 65535`` (not used with ``shared_lfsr``).
    shared_lfsr : bool
        Take the LFSR bit from the ``lfsr_bit`` input instead of an LFSR of its own: a tree
        derives every router's bit from one LFSR it shares (:func:`.shared_lfsr_bit`, the same
        bit as the router's own LFSR would give, from one flip-flop per router instead of 16),
        and its routers of one kind are then one Verilog module, differing only in what the
        tree connects to them.
    broken : bool
        A deliberately wrong router for the proofs' own test (``fattree prove circuit-router
        --broken``): downstream claims ignore whether the wire is held. Never for real use.

    Attributes
    ----------
    a, b : port_signature(width)
        Downstream ports (left and right subtree).
    c, d : port_signature(width)
        Upstream ports.
    lfsr_bit : In(1)
        With ``shared_lfsr``: bit 0 of the router's LFSR in this cycle.
    """

    @validates_parameters
    def __init__(
        self, width: int = 1, seed: int = 1, shared_lfsr: bool = False, *, broken: bool = False
    ):
        self.width = CIRCUIT_ROUTER.check("width", width)
        self.seed = CIRCUIT_ROUTER.check("seed", seed)
        self.shared_lfsr = bool(shared_lfsr)
        self.broken = bool(broken)
        # The state, made here rather than in elaborate() so that a proof can name it
        # (fattree/proofs): conn[i, o] is high while input i holds output o; dead[i] while
        # input i ignores the rest of a rejected or released burst.
        self.conn = {
            (i, o): Signal(name=f"conn_{PORTS[i]}{PORTS[o]}")
            for i in range(4)
            for o in range(4)
            if i != o and not (i in (C, D) and o in (C, D))
        }
        self.dead = [Signal(name=f"dead_{n}") for n in PORTS]
        port = port_signature(width)
        members = {"a": Out(port), "b": Out(port), "c": Out(port), "d": Out(port)}
        if self.shared_lfsr:
            members["lfsr_bit"] = In(1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        if self.shared_lfsr:
            r = self.lfsr_bit
        else:
            m.submodules.lfsr = lfsr = LFSR(LFSR_WIDTH, seed=self.seed)
            r = lfsr.value[0]
        ports = [self.a, self.b, self.c, self.d]
        inp = [p.i for p in ports]
        out = [p.o for p in ports]

        # The circuits: conn[i][o] is high while input i holds output o. An output has at
        # most one owner and an input at most one output, so these bits are the whole
        # (input state FWD + route, output busy + owner) of section 3's router; up ports are
        # only ever claimed from a or b, and no input claims its own port's output.
        conn = self.conn
        owners = [[i for i in range(4) if (i, o) in conn] for o in range(4)]
        routes = [[o for o in range(4) if (i, o) in conn] for i in range(4)]
        # DEAD: rejected or released, ignoring the rest of the burst until valid falls.
        dead = self.dead
        fwd = [Signal(name=f"fwd_{n}") for n in PORTS]
        busy = [Signal(name=f"busy_{n}") for n in PORTS]
        for i in range(4):
            m.d.comb += fwd[i].eq(_any(conn[i, o] for o in routes[i]))
        for o in range(4):
            m.d.comb += busy[o].eq(_any(conn[i, o] for i in owners[o]))

        # An input is IDLE, FWD (holds a circuit) or DEAD. Every header is granted (FWD) or
        # rejected (DEAD), a released circuit goes DEAD, and DEAD lasts while valid is high, so
        # "FWD or DEAD" in this cycle is exactly "valid or FWD" in the last one: one register
        # per input instead of DEAD's own next-state logic. (~fwd stays in the header so that
        # no state, reachable or not, lets a holding input claim again: the proofs' induction.)
        active = [Signal(name=f"active_{n}") for n in PORTS]
        header = [Signal(name=f"header_{n}") for n in PORTS]
        bit = [inp[i].data[0] for i in range(4)]
        for i in range(4):
            m.d.sync += active[i].eq(inp[i].valid | fwd[i])
            m.d.comb += [
                header[i].eq(inp[i].valid & ~active[i] & ~fwd[i]),
                dead[i].eq(active[i] & ~fwd[i]),
            ]

        # Release: reject or ack on an outgoing link frees it and goes back to the owner.
        ends = [Signal(name=f"end_{n}") for n in PORTS]
        for o in range(4):
            m.d.comb += ends[o].eq(out[o].reject | out[o].ack)

        if self.broken:
            busy = [0, 0, busy[C], busy[D]]  # downstream wires always look free
        claim, reject = self._decide(m, r, header, bit, busy, conn, routes)

        # Next-state logic as plain gates, not If/Else: Yosys would turn the multiplexers into
        # a clock enable or synchronous reset of every flip-flop's own, and iCE40 logic blocks
        # share one enable and reset among their 8 cells (placement then fails long before
        # the cells run out).
        for (i, o), held in conn.items():
            m.d.sync += held.eq(claim[i, o] | (held & ~ends[o]))

        # Per input: backward pulses (registered) and the dead flag.
        for i in range(4):
            rel_rej = _any(conn[i, o] & out[o].reject for o in routes[i])
            rel_ack = _any(conn[i, o] & out[o].ack for o in routes[i])
            m.d.sync += [inp[i].reject.eq(reject[i] | rel_rej), inp[i].ack.eq(rel_ack)]

        # Per output: the forward register, fed by its owner while the circuit holds.
        for o in range(4):
            go = Signal(name=f"forward_{PORTS[o]}")
            m.d.comb += go.eq(_any(conn[i, o] & inp[i].valid for i in owners[o]) & ~ends[o])
            data = 0
            for i in owners[o]:
                data = data | (inp[i].data & conn[i, o].replicate(self.width))
            # Mux, not AND: Yosys makes ~go the data flip-flops' synchronous reset (ECP5 LSR),
            # so each bit's LUTs are only the owners' AND-OR.
            m.d.sync += [out[o].valid.eq(go), out[o].data.eq(Mux(go, data, 0))]
        return m

    @staticmethod
    def _decide(m, r, header, bit, busy, conn, routes):
        """This cycle's decisions: ``claim[i, o]`` (input i wins output o) and ``reject[i]``
        (input i's new message is turned away), by the rules in the module docstring."""
        # Decisions of this cycle: claim[i, o] (input i wins output o) and reject[i].
        claim = {key: Signal(name=f"claim_{PORTS[key[0]]}{PORTS[key[1]]}") for key in conn}
        reject = [Signal(name=f"reject_{n}") for n in PORTS]

        # Up: from a prefer r, from b prefer not r; the other port if the preferred is busy.
        # Both up ports are never busy while a or b has a header (only a and b own them).
        up_a = header[A] & ~bit[A]
        up_b = header[B] & ~bit[B]
        a_to_d = Signal()
        b_to_d = Signal()
        # a: port r, or the other one if port r is busy (then the other is free).
        m.d.comb += a_to_d.eq(Mux(r, ~busy[D], busy[C]))
        # b: port not r, or the other if that is busy or a takes it in this cycle.
        m.d.comb += b_to_d.eq(Mux(r, busy[C] | (up_a & ~a_to_d), ~(busy[D] | (up_a & a_to_d))))
        m.d.comb += [
            claim[A, C].eq(up_a & ~a_to_d),
            claim[A, D].eq(up_a & a_to_d),
            claim[B, C].eq(up_b & ~b_to_d),
            claim[B, D].eq(up_b & b_to_d),
        ]
        # Turns and downstream claims, per downstream output: the turn wins, then c, then d.
        for o in (A, B):
            other = B if o == A else A
            want = 1 if o == B else 0
            t_req = header[other] & bit[other]
            c_req = header[C] & (bit[C] == want)
            d_req = header[D] & (bit[D] == want)
            free = ~busy[o]
            m.d.comb += [
                claim[other, o].eq(t_req & free),
                claim[C, o].eq(c_req & free & ~t_req),
                claim[D, o].eq(d_req & free & ~t_req & ~c_req),
            ]
        for i in range(4):
            # A header is either granted or rejected (up requests always find a port).
            granted = _any(claim[i, o] for o in routes[i])
            m.d.comb += reject[i].eq(header[i] & ~granted & (bit[i] if i in (A, B) else 1))
        return claim, reject


def shared_lfsr_bit(m, state, seed: int, name: str) -> Signal:
    """Bit 0 of an LFSR seeded ``seed``, in every cycle, from ``state``: the state of the one
    LFSR seeded with :data:`~fattree.spec.circuit.SHARED_SEED` that steps every cycle and is
    reset with the routers (see :func:`fattree.spec.circuit.lfsr_mask`). Built in ``m``, the
    tree's own module, so that the routers it feeds (``CircuitRouter(..., shared_lfsr=True)``,
    on their input ``lfsr_bit``) carry no constant of their own.

    A register, loaded with the parity of the mask one step ahead (the shared LFSR steps
    every cycle), so it holds the same bit in every cycle and the shared register's fan-out
    ends in this flip-flop, not in a router's arbitration."""
    bit = Signal(init=seed & 1, name=name)
    m.d.sync += bit.eq((state & _next_mask(lfsr_mask(seed))).xor())
    return bit


def _next_mask(mask: int) -> int:
    """The mask whose parity of the shared state is, one cycle later, the parity of ``mask``:
    the Fibonacci step shifts every bit up by one and feeds bit 0 from the taps."""
    taps = sum(1 << (t - 1) for t in MAXIMAL_TAPS[LFSR_WIDTH])
    shifted = mask >> 1
    return shifted ^ (taps if mask & 1 else 0)


def _any(values):
    result = 0
    for v in values:
        result = result | v
    return result
