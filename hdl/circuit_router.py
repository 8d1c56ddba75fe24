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

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..params import check_int_range, check_positive_int
from ._validation import validates_parameters

__all__ = ["A", "B", "C", "D", "PORTS", "link_signature", "port_signature", "CircuitRouter"]

A, B, C, D = 0, 1, 2, 3
PORTS = "abcd"

# Input port states.
IDLE, FWD, DEAD = 0, 1, 2

LFSR_WIDTH = 16


def link_signature(width: int) -> wiring.Signature:
    """One direction of a full-duplex link, from its sender's side."""
    return wiring.Signature({"valid": Out(1), "data": Out(width), "reject": In(1), "ack": In(1)})


def port_signature(width: int) -> wiring.Signature:
    """A router port: the incoming link ``i`` and the outgoing link ``o``."""
    link = link_signature(width)
    return wiring.Signature({"i": In(link), "o": Out(link)})


def router_seed(seed: int, level: int, switch: int) -> int:
    """LFSR seed of router ``SW(level, switch)`` for a network seed (never 0)."""
    x = (seed * 0x9E3779B1 + level * 0x85EBCA77 + switch * 0xC2B2AE3D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x ^= x >> 12
    return x % ((1 << LFSR_WIDTH) - 1) + 1


class CircuitRouter(wiring.Component):
    """One four-port router.

    Parameters
    ----------
    width : int
        Data wires per link direction (1 = bit-serial), at least 1.
    seed : int
        Seed of the router's 16-bit LFSR, ``1 .. 65535``.

    Attributes
    ----------
    a, b : port_signature(width)
        Downstream ports (left and right subtree).
    c, d : port_signature(width)
        Upstream ports.
    """

    @validates_parameters
    def __init__(self, width: int = 1, seed: int = 1):
        self.width = check_positive_int("width", width)
        self.seed = check_int_range("seed", seed, 1, (1 << LFSR_WIDTH) - 1)
        port = port_signature(width)
        super().__init__({"a": Out(port), "b": Out(port), "c": Out(port), "d": Out(port)})

    def elaborate(self, platform):
        from ..boards.lfsr import LFSR

        m = Module()
        m.submodules.lfsr = lfsr = LFSR(LFSR_WIDTH, seed=self.seed)
        ports = [self.a, self.b, self.c, self.d]
        inp = [p.i for p in ports]
        out = [p.o for p in ports]

        state = [Signal(2, name=f"state_{n}") for n in PORTS]
        route = [Signal(2, name=f"route_{n}") for n in PORTS]
        busy = [Signal(name=f"busy_{n}") for n in PORTS]
        owner = [Signal(2, name=f"owner_{n}") for n in PORTS]

        header = [Signal(name=f"header_{n}") for n in PORTS]
        bit = [inp[i].data[0] for i in range(4)]
        for i in range(4):
            m.d.comb += header[i].eq((state[i] == IDLE) & inp[i].valid)

        # Release: reject or ack on an outgoing link frees it and goes back to the owner.
        release = [Signal(name=f"release_{n}") for n in PORTS]
        for o in range(4):
            m.d.comb += release[o].eq(busy[o] & (out[o].reject | out[o].ack))

        # Decisions of this cycle, per input: granted output (or rejected).
        grant = [Signal(name=f"grant_{n}") for n in PORTS]
        grant_to = [Signal(2, name=f"grant_to_{n}") for n in PORTS]
        reject = [Signal(name=f"reject_{n}") for n in PORTS]

        # Up: from a prefer r, from b prefer not r; the other port if the preferred is busy.
        r = lfsr.value[0]
        up_a = header[A] & ~bit[A]
        up_b = header[B] & ~bit[B]
        pref_a = Signal()
        pref_b = Signal()
        port_a = Signal()
        port_b = Signal()
        busy_up = [busy[C], busy[D]]
        m.d.comb += [
            pref_a.eq(r),
            pref_b.eq(~r),
            port_a.eq(pref_a ^ _pick(busy_up, pref_a)),
        ]
        taken_by_a = Signal()
        m.d.comb += taken_by_a.eq(up_a & (port_a == pref_b))
        m.d.comb += port_b.eq(pref_b ^ (_pick(busy_up, pref_b) | taken_by_a))
        m.d.comb += [
            grant[A].eq(up_a),
            grant_to[A].eq(C + port_a),
        ]
        # Turns and downstream claims, per downstream output.
        turn_req = {A: header[B] & bit[B], B: header[A] & bit[A]}  # into output A / B
        for o in (A, B):
            other = B if o == A else A
            t_req = turn_req[o]
            c_req = header[C] & (bit[C] == (o == B))
            d_req = header[D] & (bit[D] == (o == B))
            free = ~busy[o]
            with m.If(t_req):
                m.d.comb += [grant[other].eq(free), grant_to[other].eq(o)]
                m.d.comb += reject[other].eq(~free)
            with m.If(c_req):
                win = free & ~t_req
                m.d.comb += reject[C].eq(~win)
                with m.If(win):
                    m.d.comb += [grant[C].eq(1), grant_to[C].eq(o)]
            with m.If(d_req):
                win = free & ~t_req & ~c_req
                m.d.comb += reject[D].eq(~win)
                with m.If(win):
                    m.d.comb += [grant[D].eq(1), grant_to[D].eq(o)]
        # The up request of b (a's is above; it is never rejected).
        with m.If(up_b):
            m.d.comb += [grant[B].eq(1), grant_to[B].eq(C + port_b)]

        # Registered backward signals: pulses, one cycle after the event.
        for i in range(4):
            m.d.sync += [inp[i].reject.eq(reject[i]), inp[i].ack.eq(0)]

        # Per input: state and route.
        for i in range(4):
            rel_rej = Signal(name=f"rel_rej_{PORTS[i]}")
            rel_ack = Signal(name=f"rel_ack_{PORTS[i]}")
            m.d.comb += [
                rel_rej.eq((state[i] == FWD) & _pick([o.reject for o in out], route[i])),
                rel_ack.eq((state[i] == FWD) & _pick([o.ack for o in out], route[i])),
            ]
            with m.If(grant[i]):
                m.d.sync += [state[i].eq(FWD), route[i].eq(grant_to[i])]
            with m.Elif(reject[i]):
                m.d.sync += state[i].eq(DEAD)
            with m.Elif(rel_rej | rel_ack):
                m.d.sync += [
                    state[i].eq(DEAD),
                    inp[i].reject.eq(rel_rej),
                    inp[i].ack.eq(rel_ack),
                ]
            with m.Elif((state[i] == DEAD) & ~inp[i].valid):
                m.d.sync += state[i].eq(IDLE)

        # Per output: claim, release, and the forward register.
        for o in range(4):
            claimers = [i for i in range(4) if i != o]
            claim = Signal(name=f"claim_{PORTS[o]}")
            claim_by = Signal(2, name=f"claim_by_{PORTS[o]}")
            for i in claimers:
                with m.If(grant[i] & (grant_to[i] == o)):
                    m.d.comb += [claim.eq(1), claim_by.eq(i)]
            with m.If(claim):
                m.d.sync += [busy[o].eq(1), owner[o].eq(claim_by)]
            with m.Elif(release[o]):
                m.d.sync += busy[o].eq(0)
            src_valid = _pick([inp[i].valid for i in range(4)], owner[o])
            src_data = _pick([inp[i].data for i in range(4)], owner[o])
            src_fwd = _pick([state[i] == FWD for i in range(4)], owner[o])
            go = Signal(name=f"forward_{PORTS[o]}")
            m.d.comb += go.eq(busy[o] & ~release[o] & src_fwd & src_valid)
            m.d.sync += [out[o].valid.eq(go), out[o].data.eq(0)]
            with m.If(go):
                m.d.sync += out[o].data.eq(src_data)
        return m


def _pick(values, index):
    """``values[index]`` for a small list of values and a variable index (a mux chain)."""
    from amaranth.hdl import Mux

    result = values[0]
    for n, v in enumerate(values[1:], start=1):
        result = Mux(index == n, v, result)
    return result
