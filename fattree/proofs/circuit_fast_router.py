"""Properties of one router of the fast circuit tree
(:class:`fattree.hdl.circuit_fast.router.CircuitFastRouter`), written from the rules of
:mod:`fattree.spec.circuit_fast` (hold, route, up, down, forward, acknowledgement by the
mirror), not from its gates.

Free inputs: every incoming link (``valid``, ``head``, ``dest``, ``data``), every outgoing
link's ``ack``, and the LFSR bit (any bit in any cycle; the tree derives it from its shared
LFSR, which tests/test_circuit_router.py checks against the router's own LFSR). The router is
the one a tree builds, its subtree number an input (held at ``switch``'s). Assumed, as a tree's
links guarantee (well-formed links):

* ``head`` only with ``valid``; a body word (``valid``, not ``head``) only right after a word
  of its message (``valid`` the cycle before), with the same ``dest``;
* an outgoing link's ``ack`` is 1 only ``f(o)`` cycles after a head went out on it (a receiver
  acknowledges heads, nothing else);
* above level 0, a head on ``a`` that turns here is for ``b``'s subtree and vice versa (one
  for its own side would have turned lower down).

Read from inside: the circuit bits ``conn[i, o]`` ("input ``i`` sent a word out of ``o`` in
the last cycle"): the spec's holds and grants, which the rules speak of.
"""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.hdl import Assume

from ..spec.circuit import PORTS, A, B, C, D
from ..spec.circuit_fast import DOWN, UP, mirror_delay, subtree
from .harness import Harness, any_of, at_most_one

__all__ = ["harness", "FastRouterProperties"]


def harness(params: dict, broken: bool) -> FastRouterProperties:
    return FastRouterProperties(
        params.get("leaves", 4),
        params.get("width", 2),
        params.get("level", 0),
        params.get("switch", 0),
        broken=broken,
    )


def _delayed(m, value, cycles: int, name: str):
    """``value`` ``cycles`` cycles ago (0 before reset)."""
    for k in range(cycles):
        reg = Signal.like(value, name=f"{name}_d{k + 1}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


class FastRouterProperties(Harness):
    def __init__(self, leaves: int, width: int, level: int, switch: int, *, broken=False):
        super().__init__()
        from ..hdl.circuit_fast.router import CircuitFastRouter

        self.dut = CircuitFastRouter(
            leaves, width, level, switch, shared_lfsr=True, subtree_input=True
        )
        self.h, self.level, self.switch, self.width = leaves.bit_length() - 1, level, switch, width
        self.top = level == self.h - 1
        self.live = (A, B) if self.top else (A, B, C, D)
        self.broken = broken
        d = self.dut
        self.ports = [d.lfsr_bit]
        for p in (d.a, d.b, d.c, d.d):
            self.ports += [p.i.valid, p.i.head, p.i.dest, p.i.data, p.o.ack]

    def delays(self) -> tuple[dict, dict]:
        """``f`` of every live input and output link, from the spec."""
        h, r = self.h, self.level
        f_in = {A: mirror_delay(h, UP, r), B: mirror_delay(h, UP, r)}
        f_out = {A: mirror_delay(h, DOWN, r), B: mirror_delay(h, DOWN, r)}
        if not self.top:
            f_in |= {C: mirror_delay(h, DOWN, r + 1), D: mirror_delay(h, DOWN, r + 1)}
            f_out |= {C: mirror_delay(h, UP, r + 1), D: mirror_delay(h, UP, r + 1)}
        return f_in, f_out

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        if not self.top:
            m.d.comb += dut.subtree.eq(subtree(self.level, self.switch))
        ports = [dut.a, dut.b, dut.c, dut.d]
        inp, out = [p.i for p in ports], [p.o for p in ports]
        first = self.first_cycle(m)
        conn, live = dut.conn, self.live
        f_in, f_out = self.delays()

        def word(link):
            return Cat(link.valid, link.head, link.dest, link.data)

        # The previous cycle, as the rules read it.
        was = {k: _delayed(m, c, 1, f"was_{c.name}") for k, c in conn.items()}
        was_word = {i: _delayed(m, word(inp[i]), 1, f"was_word_{PORTS[i]}") for i in live}
        was_valid = {i: _delayed(m, inp[i].valid, 1, f"was_valid_{PORTS[i]}") for i in live}
        was_head = {i: _delayed(m, inp[i].head, 1, f"was_head_{PORTS[i]}") for i in live}
        was_dest = {i: _delayed(m, inp[i].dest, 1, f"was_dest_{PORTS[i]}") for i in live}
        self._assume_links(m, inp, out, first, was_valid, was_dest, f_out)

        owners = {o: [i for i in live if (i, o) in conn] for o in live}
        routes = {i: [o for o in live if (i, o) in conn] for i in live}
        # The spec's hold in the previous cycle: a body word on the circuit it held.
        held = {(i, o): w & was_valid[i] & ~was_head[i] for (i, o), w in was.items()}
        was_busy = {o: any_of(held[i, o] for i in owners[o]) for o in live}
        # granted[i, o]: the head on i in the previous cycle was granted o.
        granted = {(i, o): ~first & c & was_head[i] for (i, o), c in conn.items()}

        props = {
            "circuits": [at_most_one(conn[i, o] for i in owners[o]) for o in live]
            + [at_most_one(conn[i, o] for o in routes[i]) for i in live]
        }
        if self.broken:
            # A wrong contract: one circuit at a time in the whole router.
            props["circuits"] = [at_most_one(conn.values())]
        checks = []
        for (i, o), c in conn.items():
            checks += [
                # A body word on a held circuit goes on out of it, as a body word...
                first | ~held[i, o] | (c & out[o].valid & ~out[o].head),
                # ...and a circuit is only a grant of a head or a hold (a dropped message's
                # body words go nowhere: its input is dead until its next head).
                first | ~c | was_head[i] | held[i, o],
            ]
        for o in live:
            checks += [
                first | ~out[o].valid | any_of(granted[i, o] | held[i, o] for i in owners[o]),
                first | ~out[o].head | any_of(granted[i, o] for i in owners[o]),
            ]
        if self.broken:
            # A wrong contract: an output carries heads only (no body word follows).
            checks = [first | ~out[o].valid | out[o].head for o in live]
        props["words_follow_circuits"] = checks

        # A wrong contract for broken: the owner's word of this cycle, not the previous one.
        source = {i: word(inp[i]) for i in live} if self.broken else was_word
        checks = []
        for o in live:
            sent = 0
            for i in owners[o]:
                sent = sent | (source[i] & conn[i, o].replicate(len(source[i])))
            checks += [
                first | ~out[o].valid | (word(out[o]) == sent),
                out[o].valid | (word(out[o]) == 0),
            ]
        props["owner_word"] = checks

        x = self._lfsr_bit(m)
        wants, ups = self._routes(was_head, was_dest)
        props["up_never_fails"] = self._up_checks(first, x, ups, was_busy, granted)
        props["down_grants"] = self._down_checks(first, x, wants, was_busy, granted, routes)
        props["ack_mirror"] = self._mirror_checks(m, inp, out, granted, f_in, f_out)
        self.emit(m, props)
        return m

    def _assume_links(self, m, inp, out, first, was_valid, was_dest, f_out):
        """Well-formed links: the module docstring's assumptions."""
        r = self.level
        for i in self.live:
            link = inp[i]
            body = link.valid & ~link.head
            m.d.comb += [
                Assume(~link.head | link.valid),
                Assume(~body | (~first & was_valid[i] & (link.dest == was_dest[i]))),
            ]
            if r > 0 and i in (A, B):
                here = (link.dest >> (r + 1)) == subtree(r, self.switch)
                other_side = link.dest[r] if i == A else ~link.dest[r]
                m.d.comb += Assume(~(link.head & here) | other_side)
        for o in self.live:
            went = _delayed(m, out[o].head, f_out[o], f"head_out_{PORTS[o]}")
            m.d.comb += Assume(~out[o].ack | went)

    def _lfsr_bit(self, m):
        """``x`` of the previous cycle (the one the heads there were decided with): the
        ``lfsr_bit`` input then."""
        return _delayed(m, self.dut.lfsr_bit, 1, "x")

    def _routes(self, was_head, was_dest):
        """Rule 2 for the heads of the previous cycle: ``wants[i, o]``, the head on ``i``
        wants down port ``o``; ``ups[i]``, the head on ``a`` or ``b`` goes up."""
        r = self.level
        wants, ups = {}, {}
        for i in self.live:
            head, dest = was_head[i], was_dest[i]
            if i in (A, B) and not self.top:
                turn = (dest >> (r + 1)) == subtree(r, self.switch)
                ups[i] = head & ~turn
                down = head & turn
            else:
                down = head  # from c or d, or at the top level: every head goes down
            wants[i, A] = down & ~dest[r]
            wants[i, B] = down & dest[r]
        return wants, ups

    def _up_checks(self, first, x, ups, was_busy, granted):
        """Rule 3: a head on ``a`` (``e`` = 0) or ``b`` (1) that does not turn is granted up
        port ``c`` if ``x XOR e`` is 0, else ``d``, the other one if that one is busy."""
        checks = []
        for e, i in enumerate(ups):
            pick_d = x ^ e
            if self.broken:
                pick_d = e  # a wrong contract: a always prefers c, b always d
            to_d = (pick_d & ~was_busy[D]) | (~pick_d & was_busy[C])
            checks.append(first | ~ups[i] | Mux(to_d, granted[i, D], granted[i, C]))
        # Nothing else goes up.
        for (i, o), g in granted.items():
            if o in (C, D):
                checks.append(~g | ups[i])
        return checks

    def _down_checks(self, first, x, wants, was_busy, granted, routes):
        """Rule 4: of the heads that want a down port which is not busy, the first of ``a``,
        ``b``, then ``c`` before ``d`` if ``x`` is 0, else ``d`` before ``c``, is granted it;
        every other head that wants it, and every head that wants a busy one, is dropped."""
        checks = []
        for o in (A, B):
            order = [i for i in (A, B) if i in self.live]
            if self.broken:
                order.reverse()  # a wrong contract: b before a
            for i in order:
                before = any_of(wants[j, o] for j in order[: order.index(i)])
                # (Above level 0 a head never wants its own port: no such circuit, and the
                # links' assumption rules the head out.)
                got = granted.get((i, o), 0)
                checks.append(got == (wants[i, o] & ~was_busy[o] & ~before))
            if not self.top:
                ab = any_of(wants[j, o] for j in order)
                for i, rival, first_here in ((C, D, ~x), (D, C, x)):
                    won = ~ab & ~was_busy[o] & (first_here | ~wants[rival, o])
                    checks.append(granted[i, o] == (wants[i, o] & won))
            # A head that wants o gets nothing else; a head gets o only if it wants it.
            for i in self.live:
                checks += [~wants[i, o] | ~granted[i, p] for p in routes[i] if p != o]
                if (i, o) in granted:
                    checks.append(~granted[i, o] | wants[i, o])
        return [first | c for c in checks]

    def _mirror_checks(self, m, inp, out, granted, f_in, f_out):
        """Rule 6: ``ack`` on input ``i`` at ``tau + f(i)`` is the ``ack`` on the output
        granted to its head at ``tau``, seen at ``tau + 1 + f(o)``; 0 for a dropped head and at
        any cycle no head owns."""
        late = 1 if self.broken else 0  # a wrong contract: the fate one cycle late
        expected = {i: 0 for i in self.live}
        for (i, o), g in granted.items():
            # granted[i, o] is known at tau + 1; o's ack owns the cycle tau + 1 + f(o).
            fate = _delayed(m, g, f_out[o], f"g_{PORTS[i]}{PORTS[o]}") & out[o].ack
            back = _delayed(m, fate, f_in[i] - 1 - f_out[o] + late, f"fate_{PORTS[i]}{PORTS[o]}")
            expected[i] = expected[i] | back
        return [inp[i].ack == expected[i] for i in self.live]
