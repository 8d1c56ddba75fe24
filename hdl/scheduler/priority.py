"""The priority select of compute: the lowest free port, one-hot."""

from amaranth import Cat, Const, Signal

__all__ = ["CARRY_CHAIN_MIN_W", "lowest_free_port"]

# From this many ports up, the priority select uses the carry chain (measured on ECP5: faster
# at w = 16, as fast with fewer LUTs at w = 8, slower at w = 4; see docs/scheduler.md).
CARRY_CHAIN_MIN_W = 8


def lowest_free_port(m, avail, prefix: str):
    """``(lowest, none)``: the lowest set bit of ``avail`` one-hot, and whether there is none.

    The reference's order (lowest index first). The port number is encoded after the U
    register, out of the compute cycle.
    """
    w = len(avail)
    lowest = Signal(w, name=f"{prefix}_lowest")
    none = Signal(name=f"{prefix}_none")
    if w >= CARRY_CHAIN_MIN_W:
        # ``avail - 1`` flips the lowest set bit and the zeros below it, so
        # ``avail & ~(avail - 1)`` is the lowest set bit, and the borrow out (the extra top
        # bit) says that ``avail`` is zero. On ECP5 a short CCU2C chain instead of LUTs.
        minus1 = Signal(w + 1, name=f"{prefix}_minus1")
        m.d.comb += [
            minus1.eq(avail - 1),
            lowest.eq(avail & ~minus1[:w]),
            none.eq(minus1[w]),
        ]
    else:
        # Few ports: LUTs beat the carry chain's entry and exit. Port i is chosen if it is
        # free and no lower port is, with a two-level prefix (groups of four ports, then the
        # ports inside a group).
        below = Signal(w, name=f"{prefix}_below")  # some port under i is free
        group = 4
        groups = [avail[k : k + group] for k in range(0, w, group)]
        group_any = Cat(g.any() for g in groups)
        for i in range(1, w):
            k, j = divmod(i, group)
            inside = groups[k][:j].any() if j else Const(0)
            earlier = group_any[:k].any() if k else Const(0)
            m.d.comb += below[i].eq(inside | earlier)
        m.d.comb += [lowest.eq(avail & ~below), none.eq(~avail.any())]
    return lowest, none
