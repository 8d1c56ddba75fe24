"""The priority select of compute: which free port is not the lowest, and whether none is."""

from amaranth import Cat, Const, Signal

__all__ = ["CARRY_CHAIN_MIN_W", "lowest_free_port"]

# From this many ports up, the priority select uses the carry chain (measured on ECP5: faster
# at w = 16, as fast with fewer LUTs at w = 8, slower at w = 4; see docs/scheduler.md).
CARRY_CHAIN_MIN_W = 8


def lowest_free_port(m, avail, prefix: str):
    """``(later, none)``: per free port, whether a lower port is free too; and whether no port is.

    The reference's order (lowest index first): the port taken is the free one whose ``later``
    bit is 0 (``avail & ~later``, one-hot). ``later`` is only meaningful where ``avail`` is
    set: compute uses it as the one select after the priority encoder (the bit stays free iff
    ``later``), so nothing but a 2:1 select lies between it and the next stage's registers.
    """
    w = len(avail)
    later = Signal(w, name=f"{prefix}_later")
    none = Signal(name=f"{prefix}_none")
    if w >= CARRY_CHAIN_MIN_W:
        # ``avail - 1`` flips the lowest set bit and the zeros below it: at a set bit it is 1
        # exactly when a lower bit is set; the borrow out (the extra top bit) says that
        # ``avail`` is zero. On ECP5 a short CCU2C chain instead of LUTs.
        minus1 = Signal(w + 1, name=f"{prefix}_minus1")
        m.d.comb += [minus1.eq(avail - 1), later.eq(minus1[:w]), none.eq(minus1[w])]
    else:
        # Few ports: LUTs beat the carry chain's entry and exit. A two-level prefix (groups of
        # four ports, then the ports inside a group).
        group = 4
        groups = [avail[k : k + group] for k in range(0, w, group)]
        group_any = Cat(g.any() for g in groups)
        for i in range(w):
            k, j = divmod(i, group)
            inside = groups[k][:j].any() if j else Const(0)
            earlier = group_any[:k].any() if k else Const(0)
            m.d.comb += later[i].eq(inside | earlier)
        m.d.comb += none.eq(~avail.any())
    return later, none
