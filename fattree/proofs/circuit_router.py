"""Properties of :class:`fattree.hdl.circuit_router.CircuitRouter`, written from the protocol
(docs/circuit_tree.md, "Router rules"), not from its gates.

Free inputs: every incoming link (valid, data: any route bit, any burst), every outgoing
link's reject and ack (at any time, also on wires the router does not hold), and the LFSR
bit (any bit in any cycle: the router as a tree builds it, which derives the bit from its
shared LFSR). Only the router's circuit bits ``conn`` and dead
flags are read from inside (they are the state the rules speak of).
"""

from __future__ import annotations

from amaranth import Module, Signal

from ..spec.circuit import PORTS, A, B
from .harness import Harness, any_of, at_most_one

__all__ = ["harness", "RouterProperties"]


def harness(params: dict, broken: bool) -> RouterProperties:
    return RouterProperties(params.get("width", 2), broken=broken)


class RouterProperties(Harness):
    def __init__(self, width: int, *, broken: bool = False):
        super().__init__()
        from ..hdl.circuit_router import CircuitRouter

        self.dut = CircuitRouter(width, 1, shared_lfsr=True, broken=broken)
        self.width = width
        d = self.dut
        self.ports = [d.lfsr_bit]
        for p in (d.a, d.b, d.c, d.d):
            self.ports += [p.i.valid, p.i.data, p.o.reject, p.o.ack]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        conn, dead = dut.conn, dut.dead
        ports = [dut.a, dut.b, dut.c, dut.d]
        inp, out = [p.i for p in ports], [p.o for p in ports]

        # One cycle of history (and whether there is one: Past is meaningless in cycle 0).
        first = self.first_cycle(m)
        was = {k: Signal(name=f"was_{PORTS[k[0]]}{PORTS[k[1]]}") for k in conn}
        was_valid = [Signal(name=f"was_valid_{n}") for n in PORTS]
        was_data = [Signal(self.width, name=f"was_data_{n}") for n in PORTS]
        was_rej = [Signal(name=f"was_rej_{n}") for n in PORTS]
        was_ack = [Signal(name=f"was_ack_{n}") for n in PORTS]
        was_dead = [Signal(name=f"was_dead_{n}") for n in PORTS]
        was_bit = [Signal(name=f"was_bit_{n}") for n in PORTS]
        m.d.sync += [was[k].eq(conn[k]) for k in conn]
        for i in range(4):
            m.d.sync += [
                was_valid[i].eq(inp[i].valid),
                was_data[i].eq(inp[i].data),
                was_rej[i].eq(out[i].reject),
                was_ack[i].eq(out[i].ack),
                was_dead[i].eq(dead[i]),
                was_bit[i].eq(inp[i].data[0]),
            ]
        owners = {o: [i for i in range(4) if (i, o) in conn] for o in range(4)}
        routes = {i: [o for o in range(4) if (i, o) in conn] for i in range(4)}

        def held(o):
            return any_of(conn[i, o] for i in owners[o])

        def was_held(i):
            return any_of(was[i, o] for o in routes[i])

        one_owner = [at_most_one(conn[i, o] for i in owners[o]) for o in range(4)]
        one_route = [at_most_one(conn[i, o] for o in routes[i]) for i in range(4)]
        owner_alive = [~conn[i, o] | ~dead[i] for (i, o) in conn]
        # Together: each alone is not inductive (an unreachable state with an input holding
        # two wires, one of them released, breaks owner_alive), the three together are.
        props: dict[str, list] = {"circuits": one_owner + one_route + owner_alive}

        checks = []
        for o in range(4):
            fed = any_of(was[i, o] & was_valid[i] for i in owners[o])
            data = 0
            for i in owners[o]:
                data = data | (was_data[i] & was[i, o].replicate(self.width))
            ended = was_rej[o] | was_ack[o]
            checks += [
                first | ~out[o].valid | (fed & ~ended),
                first | ~out[o].valid | (out[o].data == data),
                out[o].valid | (out[o].data == 0),
            ]
        props["claimed_output_only"] = checks

        checks = []
        for (i, o), w in was.items():
            checks += [
                first | ~(w & was_rej[o]) | (inp[i].reject & ~conn[i, o] & dead[i]),
                first | ~(w & was_ack[o]) | (inp[i].ack & ~conn[i, o] & dead[i]),
            ]
        props["release_in_one_cycle"] = checks

        props["no_spurious_backward"] = [
            first | ~inp[i].ack | any_of(was[i, o] & was_ack[o] for o in routes[i])
            for i in range(4)
        ]

        idle = Signal()
        m.d.sync += idle.eq(~any_of(conn.values()) & ~any_of(p.valid for p in inp))
        props["idle_router_quiet"] = [first | ~idle | ~any_of(p.valid for p in out)]

        # A new circuit (not held, now held) goes where the route bit says.
        checks = []
        for i, o in conn:
            new = ~was[i, o] & conn[i, o]
            if i in (A, B):
                turn = o in (A, B)
                checks.append(first | ~new | (was_bit[i] == int(turn)))
            else:
                checks.append(first | ~new | (was_bit[i] == int(o == B)))
            checks.append(first | ~new | (was_valid[i] & ~was_dead[i] & ~was_held(i)))
        props["claims_follow_the_route_bit"] = checks
        self.emit(m, props)
        return m
