"""Properties of :class:`fattree.hdl.scheduler.LevelWiseScheduler`, from its streams only
(docs/scheduler.md), for a small FT(l, w).

Free inputs: the request stream (any command at any time; ``op`` one of the three commands)
and the result stream's ``ready`` (any back-pressure). The harness restates, from the
definitions (:mod:`fattree.spec.topology`, Fig. 7 of the paper), what the results must be:

* results come one per command, in command order (the n-th result carries the n-th
  command's ``op``, ``src`` and ``dst``; a ``RELEASE`` also its ports), checked for an
  arbitrary n (``AnyConst``), so the harness needs no queue;
* a ledger of the links held by granted connections, kept from the results alone: a grant
  never takes a link already held (no link granted twice, grants only on free links);
* a shadow of the link vectors ``Ulink``/``Dlink`` updated result by result as Fig. 7 does
  (lowest free port of ``Ulink(h, s_h) AND Dlink(h, d_h)``, ``keep`` failure mode, ``RELEASE``
  sets the route's bits back, ``CLEAR`` frees all): every result's ``granted`` and ports are
  the sequential algorithm's. With the order property this is equivalence with the model's
  grants (:class:`fattree.sim.models.scheduler.SchedulerModel`, level-wise, ``keep``).

The pipeline and the link memories hold state the streams do not show, so induction cannot
close from these properties alone: bounded model checking from reset.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.asserts import AnyConst  # not exported by amaranth.hdl in 0.5
from amaranth.hdl import Assume

from ..spec.scheduler import Op
from ..spec.topology import FatTree
from .harness import Harness

__all__ = ["harness", "SchedulerProperties"]


def harness(params: dict, broken: bool) -> SchedulerProperties:
    return SchedulerProperties(params.get("levels", 2), params.get("w", 2), broken=broken)


@dataclass(frozen=True)
class _Links:
    """Per level below the top and per switch, the ledger of links held by granted
    connections (``held_u``, ``held_d``) and Fig. 7's free-link vectors (``free_u``,
    ``free_d``), for the up and the down links."""

    held_u: list
    held_d: list
    free_u: list
    free_d: list


class SchedulerProperties(Harness):
    def __init__(self, levels: int, w: int, *, broken: bool = False):
        super().__init__()
        from ..hdl.scheduler import LevelWiseScheduler

        self.tree = FatTree(levels, w)
        self.dut = LevelWiseScheduler(levels, w, memory="portable")
        self.broken = broken
        d = self.dut
        self.ports = [d.requests.valid, d.requests.payload.as_value(), d.results.ready]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        levels = self.tree.levels
        rs = dut.results
        first = self.first_cycle(m)
        m.d.comb += Assume(dut.requests.payload.op <= Op.CLEAR)
        in_order, no_extra, height = self._order(m)
        links = self._link_vectors()
        alive, expect_ports, fresh_grant = self._walk_route(m, height, links)
        self._clear(m, links)

        op = rs.payload.op
        granted_expected = Signal()
        m.d.comb += granted_expected.eq(alive)
        level_wise = (
            ~rs.valid
            | (op != Op.SCHEDULE)
            | (
                (rs.payload.granted == granted_expected)
                & Cat(rs.payload.ports[h] == expect_ports[h] for h in range(levels - 1)).all()
            )
        )
        props = {
            "results_in_order": [first | in_order, first | no_extra],
            "no_link_granted_twice": [
                first | ~rs.valid | (op != Op.SCHEDULE) | ~rs.payload.granted | fresh_grant
            ],
            "level_wise_grants": [first | level_wise],
        }
        self.emit(m, props)
        return m

    def _order(self, m):
        """Order: the n-th result is the n-th command, for an arbitrary n. Returns
        ``(in_order, no_extra, height)``: the n-th result is right, never more results than
        commands, and the result's route height H."""
        rq, rs = self.dut.requests, self.dut.results
        count_bits = 6
        n = Signal(count_bits)
        m.d.comb += n.eq(AnyConst(count_bits))
        sent, got = Signal(count_bits + 1), Signal(count_bits + 1)
        tagged = Signal.like(rq.payload.as_value())
        have_tag = Signal()
        with m.If(rq.valid & rq.ready):
            m.d.sync += sent.eq(sent + 1)
            with m.If(sent == n):
                m.d.sync += [tagged.eq(rq.payload.as_value()), have_tag.eq(1)]
        with m.If(rs.valid & rs.ready):
            m.d.sync += got.eq(got + 1)
        tag = rq.payload.shape()(tagged)
        ports_below = Signal()  # the RELEASE ports the result must echo (those below H)
        height = self._height(m, rs.payload.src, rs.payload.dst)
        m.d.comb += ports_below.eq(
            Cat(
                (h >= height) | (rs.payload.ports[h] == tag.ports[h])
                for h in range(self.tree.levels - 1)
            ).all()
        )
        is_n = rs.valid & (got == n)
        in_order = ~is_n | (
            have_tag
            & (rs.payload.op == tag.op)
            & (rs.payload.src == tag.src)
            & (rs.payload.dst == tag.dst)
            & ((rs.payload.op != Op.RELEASE) | ports_below)
        )
        no_extra = ~rs.valid | (got < sent)
        return in_order, no_extra, height

    def _link_vectors(self) -> _Links:
        """The ledger of links held by granted connections, and Fig. 7's link vectors."""
        levels, w, switches = self.tree.levels, self.tree.w, self.tree.num_switches
        held_u = [
            [Signal(w, name=f"held_u{h}_{t}") for t in range(switches)] for h in range(levels - 1)
        ]
        held_d = [
            [Signal(w, name=f"held_d{h}_{t}") for t in range(switches)] for h in range(levels - 1)
        ]
        free_u = [
            [Signal(w, init=(1 << w) - 1, name=f"free_u{h}_{t}") for t in range(switches)]
            for h in range(levels - 1)
        ]
        free_d = [
            [Signal(w, init=(1 << w) - 1, name=f"free_d{h}_{t}") for t in range(switches)]
            for h in range(levels - 1)
        ]
        return _Links(held_u, held_d, free_u, free_d)

    def _walk_route(self, m, height, links: _Links):
        """Walk the result's route level by level, as Fig. 7 does, on the shadow vectors,
        and update them and the ledger by the result. Returns ``(alive, expect_ports,
        fresh_grant)``: Fig. 7 grants, the ports it takes per level, and every link the
        result takes is unheld in the ledger."""
        levels, w, switches = self.tree.levels, self.tree.w, self.tree.num_switches
        rs = self.dut.results
        op, src, dst = rs.payload.op, rs.payload.src, rs.payload.dst
        take = rs.valid & rs.ready
        held_u, held_d, free_u, free_d = links.held_u, links.held_d, links.free_u, links.free_d
        s = Signal(range(switches), name="walk_s0")
        d = Signal(range(switches), name="walk_d0")
        m.d.comb += [s.eq(src // w), d.eq(dst // w)]
        alive = Const(1)
        expect_ports = []
        fresh_grant = Const(1)  # every link this grant takes is unheld in the ledger
        for h in range(levels - 1):
            active = Signal(name=f"active{h}")
            m.d.comb += active.eq(h < height)
            up_free = self._row(m, free_u[h], s, f"fu{h}")
            down_free = self._row(m, free_d[h], d, f"fd{h}")
            avail = Signal(w, name=f"avail{h}")
            m.d.comb += avail.eq(up_free & down_free)
            # Fig. 7 takes the lowest free port; the broken contract, the highest.
            port = Signal(range(w), name=f"port{h}")
            for i in reversed(range(w)) if not self.broken else range(w):
                with m.If(avail[i]):
                    m.d.comb += port.eq(i)
            pick = Signal(w, name=f"pick{h}")
            m.d.comb += pick.eq(1 << port)
            # What the result says it took at this level (granted ports, or release ports).
            used = Signal(w, name=f"used{h}")
            m.d.comb += used.eq(1 << rs.payload.ports[h])
            takes_here = Signal(name=f"takes{h}")
            m.d.comb += takes_here.eq(active & alive & (avail != 0))
            expect_ports.append(Mux(takes_here, port, 0))
            held_here_u = self._row(m, held_u[h], s, f"hu{h}")
            held_here_d = self._row(m, held_d[h], d, f"hd{h}")
            fresh_grant = fresh_grant & (~active | (((held_here_u | held_here_d) & used) == 0))
            with m.If(take & active):
                with m.Switch(op):
                    with m.Case(Op.SCHEDULE):
                        with m.If(takes_here):
                            self._update(m, free_u[h], s, up_free & ~pick)
                            self._update(m, free_d[h], d, down_free & ~pick)
                        with m.If(rs.payload.granted):
                            self._update(m, held_u[h], s, held_here_u | used)
                            self._update(m, held_d[h], d, held_here_d | used)
                    with m.Case(Op.RELEASE):
                        self._update(m, free_u[h], s, up_free | used)
                        self._update(m, free_d[h], d, down_free | used)
                        self._update(m, held_u[h], s, held_here_u & ~used)
                        self._update(m, held_d[h], d, held_here_d & ~used)
            alive = alive & (~active | (avail != 0))
            # The next level's switches (Theorem 1), by the ports the result carries: for a
            # SCHEDULE those are checked equal to the expected ones below.
            if h + 1 < levels - 1:
                s_next = Signal(range(switches), name=f"walk_s{h + 1}")
                d_next = Signal(range(switches), name=f"walk_d{h + 1}")
                self._next_switch(m, h, s, rs.payload.ports[h], s_next)
                self._next_switch(m, h, d, rs.payload.ports[h], d_next)
                s, d = s_next, d_next
        return alive, expect_ports, fresh_grant

    def _clear(self, m, links: _Links) -> None:
        """A CLEAR result frees every link and empties the ledger."""
        rs = self.dut.results
        w = self.tree.w
        with m.If(rs.valid & rs.ready & (rs.payload.op == Op.CLEAR)):
            for h in range(self.tree.levels - 1):
                for t in range(self.tree.num_switches):
                    m.d.sync += [
                        links.free_u[h][t].eq((1 << w) - 1),
                        links.free_d[h][t].eq((1 << w) - 1),
                        links.held_u[h][t].eq(0),
                        links.held_d[h][t].eq(0),
                    ]

    def _height(self, m, src, dst) -> Signal:
        """H = common_level(src, dst), from the definitions' table."""
        tree = self.tree
        height = Signal(range(tree.levels), name="height")
        with m.Switch(Cat(src, dst)):
            for a in tree.nodes():
                for b in tree.nodes():
                    if tree.common_level(a, b):
                        bits = len(src)
                        with m.Case(a | (b << bits)):
                            m.d.comb += height.eq(tree.common_level(a, b))
        return height

    def _next_switch(self, m, h, switch, port, out) -> None:
        tree = self.tree
        with m.Switch(Cat(port, switch)):
            for t in range(tree.num_switches):
                for i in range(tree.w):
                    with m.Case(i | (t << len(port))):
                        m.d.comb += out.eq(tree.next_switch(h, t, i))

    @staticmethod
    def _row(m, rows, index, name) -> Signal:
        value = Signal(len(rows[0]), name=name)
        with m.Switch(index):
            for t, row in enumerate(rows):
                with m.Case(t):
                    m.d.comb += value.eq(row)
        return value

    @staticmethod
    def _update(m, rows, index, value) -> None:
        with m.Switch(index):
            for t, row in enumerate(rows):
                with m.Case(t):
                    m.d.sync += row.eq(value)
