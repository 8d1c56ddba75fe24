"""One P_h block: the link memories of level ``h`` and the stages M, R, C, U.

The paper's load -> compute -> update, with the read of the load split over two cycles:

* **load** (the cycle before M): the slot entering M addresses both memories with ``s_h``
  and ``d_h``;
* **M**: the memory read is in flight;
* **R**: the rows arrive in a register; the forwarding select and what the request will do
  at this level are registered here;
* **C** (compute): the current vectors, ``Ulink AND Dlink``, the priority select, the bit
  clear (or set, for a release), the next level's switches;
* **U** (update): the write-back; also the load of level ``h+1``.
"""

from amaranth import Cat, Const, Mux, Signal

from ...spec.scheduler import Op
from ..registered_memory import RegisteredReadMemory
from .priority import lowest_free_port

__all__ = ["LinkLevel"]


def next_switch(switch, port, h: int, port_bits: int):
    """Theorem 1: from ``SW(h, switch)`` up port ``port`` to level ``h+1``.

    The digits above ``h`` stay, the low ``h+1`` digits shift up one (digit ``h`` drops out)
    and ``port`` becomes digit 0.
    """
    low = (h + 1) * port_bits
    if low >= len(switch):
        return Cat(port, switch[: low - port_bits])
    return Cat(port, switch[: low - port_bits], switch[low:])


class LinkLevel:
    """P_h of the pipeline: its stage registers, its two memories and their logic.

    Parameters
    ----------
    h : int
        The link level.
    layouts : PipelineLayouts
        The pipeline's register layouts.
    w, depth, port_bits : int
        Ports per switch side, switches per level, bits of a port number.
    memory : dict
        Keyword arguments of both :class:`RegisteredReadMemory` (``form``,
        ``poison_collisions``).
    """

    def __init__(self, h: int, layouts, *, w: int, depth: int, port_bits: int, memory: dict):
        self.h, self.w, self.depth, self.port_bits = h, w, depth, port_bits
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

    def in_flight(self) -> list:
        """The valid bits of the slots in M, R, C and U."""
        return [self.m.valid, self.r.valid, self.c.valid, self.u.slot.valid]

    def elaborate_into(self, m, load, clear):
        """Add the block to ``m``; ``load`` is the slot entering M, ``clear`` the sequencer."""
        ulink, dlink = self._load(m, load)
        on_path, schedule, release_bit = self._decide(m)
        current_u = self._forward(m, "u", ulink.read_data, on_path)
        current_d = self._forward(m, "d", dlink.read_data, on_path)
        take, refused, new_u, new_d = self._compute(m, current_u, current_d, schedule, release_bit)
        self._update(m, on_path, refused, take, new_u, new_d, clear)
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
        """What the request does at this level, known from its slot alone: decided in R.

        ``on_path`` = the level is on its path (it will write back), ``schedule`` = it takes
        the lowest free port, ``release_bit`` = the port bit it gives back (one-hot or 0).
        """
        p, r, h = self.prefix, self.r, self.h
        on_path = Signal(name=f"{p}_on_path")
        schedule = Signal(name=f"{p}_schedule")
        release_bit = Signal(self.w, name=f"{p}_release_bit")
        on_path_in_r = r.valid & r.alive & (r.height > h)
        m.d.sync += [
            on_path.eq(on_path_in_r),
            schedule.eq(on_path_in_r & (r.op == Op.SCHEDULE)),
            release_bit.eq(
                Mux(on_path_in_r & (r.op == Op.RELEASE), Const(1, self.w) << r.ports[h], 0)
            ),
        ]
        return on_path, schedule, release_bit

    def _forward(self, m, link: str, memory_row, writes_in_c):
        """The ``link`` row (``"u"``: Ulink row ``s_h``, ``"d"``: Dlink row ``d_h``) as the
        request in C must see it: the memory row, or the newest write of it the row misses.

        The row is as it was at the end of the request's load cycle. ``hitK``: the request K
        ahead writes this row. The one ahead writes now (in U); those 2, 3 and 4 ahead wrote
        one, two and three cycles ago, the last at the very edge that sampled the address,
        where the memory's read is undefined (older writes are in the row). ``hit2`` ..
        ``hit4`` are compared in M, while those requests are in C, U and one cycle past U;
        in R the newest hit (else the memory row) is registered as ``base``, taken from U and
        the writes of one and two cycles ago, so no three-cycle-old write needs a register.
        Only ``hit1`` is compared in R: C has a 2:1 select before its AND.
        """
        p = f"{self.prefix}_{link}"
        switch, row, new = ("s" if link == "u" else "d"), f"row_{link}", f"new_{link}"
        mm, r, c, u = self.m, self.r, self.c, self.u.write
        wrote_1, wrote_2 = self.wrote_1, self.wrote_2
        hit2, hit3, hit4 = (Signal(name=f"{p}_hit{k}") for k in (2, 3, 4))
        m.d.sync += [
            hit2.eq(writes_in_c & (c[switch] == mm[switch])),
            hit3.eq(u.enable & (u[row] == mm[switch])),
            hit4.eq(wrote_1.enable & (wrote_1[row] == mm[switch])),
        ]
        hit1 = Signal(name=f"{p}_hit1")
        base = Signal(self.w, name=f"{p}_base", reset_less=True)
        m.d.sync += [
            hit1.eq(writes_in_c & (c[switch] == r[switch])),
            base.eq(
                Mux(hit2, u[new], Mux(hit3, wrote_1[new], Mux(hit4, wrote_2[new], memory_row)))
            ),
        ]
        current = Signal(self.w, name=f"{p}_current")
        m.d.comb += current.eq(Mux(hit1, u[new], base))
        return current

    def _compute(self, m, current_u, current_d, schedule, release_bit):
        """``Ulink AND Dlink``, the lowest free port: ``(take, refused, new_u, new_d)``."""
        p = self.prefix
        avail = Signal(self.w, name=f"{p}_avail")
        m.d.comb += avail.eq(current_u & current_d)
        lowest, none = lowest_free_port(m, avail, p)
        take = Signal(self.w, name=f"{p}_take")
        new_u = Signal(self.w, name=f"{p}_new_u")
        new_d = Signal(self.w, name=f"{p}_new_d")
        m.d.comb += [
            take.eq(Mux(schedule, lowest, 0)),
            new_u.eq((current_u & ~take) | release_bit),
            new_d.eq((current_d & ~take) | release_bit),
        ]
        return take, schedule & none, new_u, new_d

    def _update(self, m, on_path, refused, take, new_u, new_d, clear):
        """The U register: the slot moved on to level ``h+1``, the write-back, its history.

        In C, ``P_h`` is only known for a RELEASE (its ``ports[h]``); a SCHEDULE slot carries
        zeros there, and its port is ORed in after U from the one-hot ``take`` (zero for every
        other slot, and for a refused one, whose new switches are never used).
        """
        c, u, h, b = self.c, self.u, self.h, self.port_bits
        m.d.sync += [
            u.slot.eq(c),
            u.slot.alive.eq(c.alive & ~refused),
            u.slot.s.eq(next_switch(c.s, c.ports[h], h, b)),
            u.slot.d.eq(next_switch(c.d, c.ports[h], h, b)),
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
