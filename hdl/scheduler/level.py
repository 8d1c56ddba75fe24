"""One P_h block: the link memories of level ``h`` and the stages M, R, C, U.

The paper's load -> compute -> update, with the read of the load split over two cycles:

* **load** (the cycle before M): the slot entering M addresses both memories with ``s_h``
  and ``d_h``;
* **M**: the memory read is in flight; what the request will do at this level and which
  requests ahead write its rows are registered here;
* **R**: the rows arrive in a register; with the newest write of each forwarded (the one of
  the request in C taken from its result as it is computed), ``Ulink AND Dlink`` and the
  vectors to write back are registered for C;
* **C** (compute): the priority select and one 2:1 select by its result per bit, the next
  level's switches;
* **U** (update): the write-back; also the load of level ``h+1``.

The same-row loop (the vector one request writes is the one the next may start from) is
C's registers -> the priority select's carry chain -> one select -> C's registers: everything
else a request needs from the one ahead is formed in R for both outcomes of that select.
"""

from amaranth import Cat, Const, Mux, Signal

from ...spec.scheduler import Op
from ..registered_memory import RegisteredReadMemory
from .priority import lowest_free_port

__all__ = ["LinkLevel"]


def next_switch(switch, port, h: int, port_bits: int, digit_bits=None, width=None):
    """Theorem 1: from ``SW(h, switch)`` up port ``port`` to level ``h+1``.

    The digits above ``h`` stay, the ``h`` port digits shift up one (the base-m digit ``h``,
    ``digit_bits`` wide, drops out) and ``port`` becomes digit 0. ``width``: the bits of a
    switch number of level ``h`` (the rest of ``switch`` is zero); default all of it.
    """
    digit_bits = port_bits if digit_bits is None else digit_bits
    width = len(switch) if width is None else width
    low = h * port_bits + digit_bits
    if low >= width:
        return Cat(port, switch[: h * port_bits])
    return Cat(port, switch[: h * port_bits], switch[low:width])


class LinkLevel:
    """P_h of the pipeline: its stage registers, its two memories and their logic.

    Parameters
    ----------
    h : int
        The link level.
    layouts : PipelineLayouts
        The pipeline's register layouts.
    w, depth, port_bits : int
        Up ports per switch, switches of level ``h`` (rows of its memories), bits of a port
        number.
    memory : dict
        Keyword arguments of both :class:`RegisteredReadMemory` (``form``,
        ``poison_collisions``).
    digit_bits, levels : int, optional
        Bits of a base-m digit (FT(l, m, w); default ``port_bits``) and the tree's levels
        (needed with ``digit_bits``: a switch number of level ``h`` is ``(levels-1-h)``
        base-m digits and ``h`` port digits wide).
    """

    def __init__(
        self,
        h: int,
        layouts,
        *,
        w: int,
        depth: int,
        port_bits: int,
        memory: dict,
        digit_bits: int | None = None,
        levels: int | None = None,
    ):
        self.h, self.w, self.depth, self.port_bits = h, w, depth, port_bits
        self.digit_bits = port_bits if digit_bits is None else digit_bits
        # Bits of a switch number at this level (None: the whole field, as when m == w).
        self.width = None
        if levels is not None:
            self.width = (levels - 1 - h) * self.digit_bits + h * port_bits
        self.memory = memory
        self.prefix = p = f"h{h}"
        self.m = Signal(layouts.slot, name=f"{p}_m")
        self.r = Signal(layouts.slot, name=f"{p}_r")
        self.c = Signal(layouts.slot, name=f"{p}_c")
        self.u = Signal(layouts.update, name=f"{p}_u")
        # The write-backs of the last two cycles, for the forwarding.
        self.wrote_1 = Signal(layouts.write, name=f"{p}_wrote_1")
        self.wrote_2 = Signal(layouts.write, name=f"{p}_wrote_2")
        # What leaves U: the slot with P_h (and digit 0 of s_{h+1}, d_{h+1}) filled in.
        self.leaving = Signal(layouts.slot, name=f"{p}_leaving")
        self.hit1 = {}

    def in_flight(self) -> list:
        """The valid bits of the slots in M, R, C and U."""
        return [self.m.valid, self.r.valid, self.c.valid, self.u.slot.valid]

    def elaborate_into(self, m, load, clear):
        """Add the block to ``m``; ``load`` is the slot entering M, ``clear`` the sequencer."""
        ulink, dlink = self._load(m, load)
        on_path, schedule, release_bit = self._decide(m)
        later, refused, take, new_u, new_d = self._compute(m, schedule)
        base_u = self._forward(m, "u", ulink.read_data)
        base_d = self._forward(m, "d", dlink.read_data)
        self._next_vectors(m, on_path, schedule, release_bit, later, base_u, base_d)
        self._update(m, on_path[1], refused, take, new_u, new_d, clear)
        self._encode_port(m)
        self._write_back(m, ulink, dlink, clear)

    def _load(self, m, load):
        """The memories, addressed by the slot entering M; the slot moves on M -> R -> C."""
        full = (1 << self.w) - 1
        ulink = RegisteredReadMemory(self.w, self.depth, init=full, **self.memory)
        dlink = RegisteredReadMemory(self.w, self.depth, init=full, **self.memory)
        m.submodules[f"ulink{self.h}"], m.submodules[f"dlink{self.h}"] = ulink, dlink
        m.d.comb += [ulink.read_addr.eq(load.s), dlink.read_addr.eq(load.d)]
        m.d.sync += [self.m.eq(load), self.r.eq(self.m), self.c.eq(self.r)]
        return ulink, dlink

    def _decide(self, m):
        """What the request does at this level, known from its slot alone: decided in M.

        Returns ``(on_path, schedule, release_bit)``: ``on_path`` = ``(in R, in C)``, the level
        is on the path of the request there (it will write back); ``schedule`` = ``(in R, in
        C)``, it takes the lowest free port; ``release_bit`` (in R) = the port bit it gives
        back (one-hot or 0). The slot does not change between M and C.
        """
        p, mm, h = self.prefix, self.m, self.h
        on_path = Signal(name=f"{p}_on_path_r"), Signal(name=f"{p}_on_path_c")
        schedule = Signal(name=f"{p}_schedule_r"), Signal(name=f"{p}_schedule_c")
        release_bit = Signal(self.w, name=f"{p}_release_bit")
        on_path_in_m = mm.valid & mm.alive & (mm.height > h)
        m.d.sync += [
            on_path[0].eq(on_path_in_m),
            schedule[0].eq(on_path_in_m & (mm.op == Op.SCHEDULE)),
            release_bit.eq(
                Mux(on_path_in_m & (mm.op == Op.RELEASE), Const(1, self.w) << mm.ports[h], 0)
            ),
            on_path[1].eq(on_path[0]),
            schedule[1].eq(schedule[0]),
        ]
        self.on_path = on_path
        return on_path, schedule, release_bit

    def _compute(self, m, schedule):
        """C: the lowest free port of the registered ``avail`` and the vectors written back.

        C's registers (filled in R, :meth:`_next_vectors`): ``avail`` = ``Ulink AND Dlink``,
        already zero unless the request schedules; ``keep_u``/``keep_d`` = the vectors with the
        released bit set. The taken bit is the free one with no free port below it, so the new
        vector is ``keep`` where ``later`` is 1 and ``keep AND NOT avail`` where it is 0: one
        select by ``later`` after the priority encoder.

        Returns ``(later, refused, take, new_u, new_d)``.
        """
        p, w = self.prefix, self.w
        self.avail = avail = Signal(w, name=f"{p}_avail")
        self.keep_u = Signal(w, name=f"{p}_keep_u", reset_less=True)
        self.keep_d = Signal(w, name=f"{p}_keep_d", reset_less=True)
        later, none = lowest_free_port(m, avail, p)
        take = Signal(w, name=f"{p}_take")
        new_u = Signal(w, name=f"{p}_new_u")
        new_d = Signal(w, name=f"{p}_new_d")
        m.d.comb += [
            take.eq(avail & ~later),
            new_u.eq((later & self.keep_u) | (~later & self.keep_u & ~avail)),
            new_d.eq((later & self.keep_d) | (~later & self.keep_d & ~avail)),
        ]
        return later, schedule[1] & none, take, new_u, new_d

    def _forward(self, m, link: str, memory_row):
        """The ``link`` row (``"u"``: Ulink row ``s_h``, ``"d"``: Dlink row ``d_h``) as the
        request in R must see it, except for the write of the request in C: the memory row, or
        the newest write of it the row misses.

        The row is as it was at the end of the request's load cycle. ``hitK``: the request K
        ahead writes this row. The one ahead is in C, computing (:meth:`_next_vectors` takes
        its result); those 2, 3 and 4 ahead are in U and wrote one and two cycles ago, the
        last at the very edge that sampled the address, where the memory's read is undefined
        (older writes are in the row). ``hit1`` .. ``hit4`` are compared in M, while those
        requests are in R, C, U and one cycle past U.
        """
        p = f"{self.prefix}_{link}"
        switch, row, new = ("s" if link == "u" else "d"), f"row_{link}", f"new_{link}"
        mm, r, c, u = self.m, self.r, self.c, self.u.write
        on_path_r, on_path_c = self.on_path
        wrote_1, wrote_2 = self.wrote_1, self.wrote_2
        hit1, hit2, hit3, hit4 = (Signal(name=f"{p}_hit{k}") for k in (1, 2, 3, 4))
        m.d.sync += [
            hit1.eq(on_path_r & (r[switch] == mm[switch])),
            hit2.eq(on_path_c & (c[switch] == mm[switch])),
            hit3.eq(u.enable & (u[row] == mm[switch])),
            hit4.eq(wrote_1.enable & (wrote_1[row] == mm[switch])),
        ]
        self.hit1[link] = hit1
        base = Signal(self.w, name=f"{p}_base")
        m.d.comb += base.eq(
            Mux(hit2, u[new], Mux(hit3, wrote_1[new], Mux(hit4, wrote_2[new], memory_row)))
        )
        return base

    def _next_vectors(self, m, on_path, schedule, release_bit, later, base_u, base_d):
        """R: C's registers for the request in R, with the result of the one in C forwarded.

        If the request in C writes the row (``hit1``), the row is its new vector, ``keep``
        where its ``later`` is 1, ``keep AND NOT avail`` where 0. Both cases are formed from
        registers and the memory row, and ``later`` selects between them last: the same-row
        loop is C's registers -> priority carry chain -> one 2:1 select -> C's registers.
        """
        keep_u, keep_d, avail = self.keep_u, self.keep_d, self.avail
        hit_u, hit_d = self.hit1["u"], self.hit1["d"]
        schedule_r = schedule[0]
        row_if = {}  # the rows as the request in R sees them, for later = 1 and later = 0
        for bit in (1, 0):
            in_c_u = keep_u if bit else keep_u & ~avail
            in_c_d = keep_d if bit else keep_d & ~avail
            row_if[bit] = (Mux(hit_u, in_c_u, base_u), Mux(hit_d, in_c_d, base_d))
        next_avail = Signal(self.w, name=f"{self.prefix}_next_avail")
        next_u = Signal(self.w, name=f"{self.prefix}_next_keep_u")
        next_d = Signal(self.w, name=f"{self.prefix}_next_keep_d")
        for i in range(self.w):
            (u1, d1), (u0, d0) = row_if[1], row_if[0]
            m.d.comb += [
                next_avail[i].eq(
                    Mux(later[i], schedule_r & u1[i] & d1[i], schedule_r & u0[i] & d0[i])
                ),
                next_u[i].eq(Mux(later[i], u1[i], u0[i]) | release_bit[i]),
                next_d[i].eq(Mux(later[i], d1[i], d0[i]) | release_bit[i]),
            ]
        m.d.sync += [avail.eq(next_avail), keep_u.eq(next_u), keep_d.eq(next_d)]

    def _update(self, m, on_path, refused, take, new_u, new_d, clear):
        """The U register: the slot moved on to level ``h+1``, the write-back, its history.

        In C, ``P_h`` is only known for a RELEASE (its ``ports[h]``); a SCHEDULE slot carries
        zeros there, and its port is ORed in after U from the one-hot ``take`` (zero for every
        other slot, and for a refused one, whose new switches are never used).
        """
        c, u, h, b = self.c, self.u, self.h, self.port_bits
        shape = {"digit_bits": self.digit_bits, "width": self.width}
        m.d.sync += [
            u.slot.eq(c),
            u.slot.alive.eq(c.alive & ~refused),
            u.slot.s.eq(next_switch(c.s, c.ports[h], h, b, **shape)),
            u.slot.d.eq(next_switch(c.d, c.ports[h], h, b, **shape)),
            u.take.eq(take),
            u.write.enable.eq(on_path),
            u.write.row_u.eq(c.s),
            u.write.row_d.eq(c.d),
            u.write.new_u.eq(new_u),
            u.write.new_d.eq(new_d),
            self.wrote_1.eq(u.write),
            self.wrote_2.eq(self.wrote_1),
        ]
        with m.If(clear.running):
            # The rows become free: no write from before the clear may be forwarded past it.
            m.d.sync += [self.wrote_1.enable.eq(0), self.wrote_2.enable.eq(0)]

    def _encode_port(self, m):
        """``P_h`` from the registered one-hot ``take``, into the slot leaving U."""
        u, h, b = self.u, self.h, self.port_bits
        port = Signal(b, name=f"{self.prefix}_port")
        for k in range(b):
            m.d.comb += port[k].eq(Cat(u.take[i] for i in range(self.w) if i >> k & 1).any())
        m.d.comb += [
            self.leaving.eq(u.slot),
            self.leaving.ports[h].eq(u.slot.ports[h] | port),
            self.leaving.s[:b].eq(u.slot.s[:b] | port),
            self.leaving.d[:b].eq(u.slot.d[:b] | port),
        ]

    def _write_back(self, m, ulink, dlink, clear):
        """The update: write both rows back (or, while clearing, free row after row)."""
        full = (1 << self.w) - 1
        write = self.u.write
        for memory, row, vector in (
            (ulink, write.row_u, write.new_u),
            (dlink, write.row_d, write.new_d),
        ):
            m.d.comb += [
                memory.write_addr.eq(Mux(clear.running, clear.row, row)),
                memory.write_data.eq(Mux(clear.running, full, vector)),
                memory.write_en.eq(clear.running | write.enable),
            ]
