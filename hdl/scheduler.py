"""Pipelined level-wise scheduler for FT(l, w) fat-trees (Ding et al., SC'06, section 6).

One P_h block per link level ``h = 0 .. l-2``. Each block keeps the availability vectors
``Ulink(h, t)`` and ``Dlink(h, t)`` (``w`` bits, 1 = free) of its level in two memories
(:class:`~fattree.hdl.registered_memory.RegisteredReadMemory`, one row per switch: an
``amaranth.lib.memory.Memory`` that maps to block RAM, or on ECP5 a ``DP16KD`` with its
output register) and runs the paper's three steps:

* **load**: address the two memories with the request's switches ``s_h`` and ``d_h``;
* **compute**: ``Ulink(h, s_h) AND Dlink(h, d_h)``, select the lowest free port ``P_h`` with a
  priority selector, clear that bit in both vectors, and form the next level's switches
  ``s_{h+1}``, ``d_{h+1}`` (Theorem 1: a shift of the low digits and ``P_h`` as digit 0);
* **update**: write both vectors back.

The priority select yields the port one-hot (a carry chain, ``avail & ~(avail - 1)``, from
``w = 8`` up); it is encoded into ``P_h`` and digit 0 of ``s_{h+1}``, ``d_{h+1}`` after the
update register, out of the compute cycle.

A block-RAM read has a long clock-to-output time, so the read data is registered right behind
the memory (on ECP5 in the block RAM's own output register) and used one cycle later: a
request spends four cycles per level (M: read in flight, R: read data registered, forwarding
pre-selected, C: compute, U: update), and the update of level ``h`` is the load of level
``h+1``. With the input register and two cycles through the output FIFO the latency is
``4 * (l - 1) + 3`` cycles (``latency``).

One request per clock (initiation interval 1)
---------------------------------------------
Back-to-back requests may use the same switch. A request in compute works on the rows the
memory held when it was loaded, four cycles earlier; the four requests ahead of it have
written since (or are writing now): the one in U, and the writes of the last three cycles.
Their new vectors are forwarded, newest first. Which of the older three address the same row
is compared two stages early (in M), and the newest of them that does is selected in R and
registered with the memory row; only the request just ahead is compared in R, so the loop
that limits the clock -- the vector a request writes is the vector the next one may start
from -- is only a 2:1 select, the AND, the priority select and the bit clear. The result is exactly
the sequential algorithm of Fig. 7 taken request by request, in ``keep`` failure mode: a
request refused at level ``h`` keeps the links it took below ``h`` (see
:mod:`fattree.sim.models.scheduler`).

Commands (``op`` of a request)
------------------------------
``SCHEDULE``
    Schedule ``src -> dst``; the result carries ``granted`` and ``ports`` = ``P_0 ..
    P_{l-2}`` (zero above the common level; for a refused request, the ports chosen below
    the level where it failed).
``RELEASE``
    Tear down the connection ``src -> dst`` that was granted ``ports``: its links become free
    (bits set back to 1; releasing a connection that does not exist is not detected). Pipelined
    like a request, one per clock, with the same forwarding.
``CLEAR``
    Free every link. It waits until the pipeline is empty, then writes all rows of every
    memory in parallel, one row per cycle: ``w**(l-1)`` cycles. The memories also start free
    after configuration.

Every command produces one result, in order. The pipeline never stalls (no clock enables on
its datapath): results wait in an output FIFO, and ``requests`` is ready only while the FIFO
has room for everything already in flight, so back-pressure on ``results`` reaches
``requests`` without holding the pipeline.

Supported range: ``levels`` 2..6, ``w`` a power of two 2..64, at most 65536 switches per
level (the depth of each memory).
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..params import check_int_range, check_power_of_two
from ..spec.scheduler import Op, request_fields, result_fields
from ..spec.topology import FatTree
from ._validation import validates_parameters
from .registered_memory import RegisteredReadMemory

__all__ = ["Op", "LevelWiseScheduler", "request_layout", "result_layout"]

MAX_SWITCHES = 1 << 16
# From this many ports up, the priority select uses the carry chain (measured on ECP5: faster
# at w = 16, as fast with fewer LUTs at w = 8, slower at w = 4; see docs/scheduler.md).
CARRY_CHAIN_MIN_W = 8


def _layout(fields) -> data.StructLayout:
    """A :mod:`fattree.spec.scheduler` field list as a layout (``op`` typed as :class:`Op`)."""
    return data.StructLayout(
        {
            name: Op
            if name == "op"
            else data.ArrayLayout(*size)
            if isinstance(size, tuple)
            else size
            for name, size in fields
        }
    )


def request_layout(levels: int, w: int) -> data.StructLayout:
    """``op``, ``src``, ``dst`` and ``ports`` (``P_0 .. P_{l-2}``, read by ``RELEASE`` only)."""
    return _layout(request_fields(levels, w))


def result_layout(levels: int, w: int) -> data.StructLayout:
    """``op``, ``src``, ``dst``, ``granted`` and ``ports`` (``P_0 .. P_{l-2}``)."""
    return _layout(result_fields(levels, w))


class LevelWiseScheduler(wiring.Component):
    """Level-wise P_h scheduler for FT(levels, w), one command per clock.

    Parameters
    ----------
    levels : int
        Levels of the fat-tree, 2..6 (``levels - 1`` P_h blocks).
    w : int
        Ports per switch side, a power of two 2..64.

    Attributes
    ----------
    requests : In(stream.Signature(request_layout(levels, w)))
        Commands: ``op``, ``src``, ``dst``, ``ports`` (for ``RELEASE``).
    results : Out(stream.Signature(result_layout(levels, w)))
        One per command, in order: ``op``, ``src``, ``dst``, ``granted``, ``ports``.
    latency : int
        Cycles from a request's handshake to its result being valid (without back-pressure).
    """

    @validates_parameters
    def __init__(self, levels: int, w: int):
        self.levels = check_int_range("levels", levels, 2, 6)
        self.w = check_power_of_two("w", w, 2)
        if w > 64:
            raise ValueError(f"w must be at most 64, not {w!r}")
        if w ** (levels - 1) > MAX_SWITCHES:
            raise ValueError(
                f"FT({levels}, {w}) has {w ** (levels - 1)} switches per level; the scheduler "
                f"supports at most {MAX_SWITCHES}"
            )
        self.tree = FatTree(levels, w)
        self.port_bits = ceil_log2(w)
        self.switch_bits = (levels - 1) * self.port_bits
        # Input register, four stages per level, two cycles through the output FIFO.
        self.latency = 4 * (levels - 1) + 3
        super().__init__(
            {
                "requests": In(stream.Signature(request_layout(levels, w))),
                "results": Out(stream.Signature(result_layout(levels, w))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        levels, w = self.levels, self.w
        b, sb = self.port_bits, self.switch_bits
        nb = levels * b
        depth = self.tree.num_switches
        full = (1 << w) - 1
        link_levels = levels - 1

        slot = data.StructLayout(
            {
                "valid": 1,
                "op": Op,
                "src": nb,
                "dst": nb,
                "height": range(levels),
                "alive": 1,  # not refused so far
                "s": sb,  # s_h, d_h: the switches this level works on
                "d": sb,
                "ports": data.ArrayLayout(b, link_levels),
            }
        )
        # After compute: the slot with s, d already moved to level h+1, plus the write-back.
        update = data.StructLayout(
            {
                "slot": slot,
                "we": 1,
                "ws": sb,
                "wd": sb,
                "nu": w,
                "nd": w,
                "take": w,  # one-hot port taken (SCHEDULE), encoded into P_h after the register
            }
        )
        written = data.StructLayout({"we": 1, "ws": sb, "wd": sb, "nu": w, "nd": w})

        req = self.requests.payload
        res = self.results.payload

        # Stages of level h: M (memory read in flight), R (read data registered), C (compute),
        # U (update); the update of level h is the load of level h+1. W1, W2: the writes of the
        # last two cycles.
        r0 = Signal(slot)
        mem_stage = [Signal(slot, name=f"m{h}") for h in range(link_levels)]
        read_stage = [Signal(slot, name=f"r{h}") for h in range(link_levels)]
        comp = [Signal(slot, name=f"c{h}") for h in range(link_levels)]
        upd = [Signal(update, name=f"u{h}") for h in range(link_levels)]
        hist1 = [Signal(written, name=f"w1_{h}") for h in range(link_levels)]
        hist2 = [Signal(written, name=f"w2_{h}") for h in range(link_levels)]
        # What leaves U: the slot with P_h (and digit 0 of s_{h+1}, d_{h+1}) filled in from the
        # registered one-hot `take`, so the encoder is not in the compute cycle.
        outs = [Signal(slot, name=f"uo{h}") for h in range(link_levels)]
        last = outs[-1]

        # The pipeline never stalls (no clock enables on the datapath, which is what limits
        # the clock): results queue in a FIFO, and a command is only accepted while the FIFO
        # has room for it and for everything ahead of it in the pipeline.
        fifo_depth = self.latency + 1
        m.submodules.out_fifo = fifo = SyncFIFOBuffered(
            width=result_layout(levels, w).size, depth=fifo_depth
        )
        outstanding = Signal(range(fifo_depth + 1))  # accepted and not yet taken out
        room = Signal()
        m.d.comb += room.eq(outstanding < fifo_depth)

        # -- CLEAR: drain, then write every row of every memory, one row per cycle ----------
        clearing = Signal()
        clear_row = Signal(range(depth))
        clear_last = Signal()
        empty = Signal()
        m.d.comb += [
            empty.eq(
                ~r0.valid
                & ~Cat(
                    *(x.valid for x in mem_stage),
                    *(x.valid for x in read_stage),
                    *(c.valid for c in comp),
                    *(u.slot.valid for u in upd),
                ).any()
            ),
            clear_last.eq(clearing & (clear_row == depth - 1)),
        ]
        is_clear = Signal()
        m.d.comb += is_clear.eq(req.op == Op.CLEAR)
        with m.If(~clearing):
            with m.If(self.requests.valid & is_clear & empty):
                m.d.sync += [clearing.eq(1), clear_row.eq(0)]
        with m.Else():
            m.d.sync += clear_row.eq(clear_row + 1)
            with m.If(clear_last):
                m.d.sync += clearing.eq(0)

        # A CLEAR is accepted in the cycle its last row is written; other commands whenever
        # the pipeline moves and no clear is waiting or running.
        accept = Signal()
        m.d.comb += [
            self.requests.ready.eq(room & ((~is_clear & ~clearing) | clear_last)),
            accept.eq(self.requests.valid & self.requests.ready),
        ]

        # -- input stage: level-0 switches and the common level ------------------------------
        s0, d0 = req.src[b:], req.dst[b:]
        diff = Signal(sb)
        height = Signal(range(levels))
        m.d.comb += diff.eq(s0 ^ d0)
        for k in range(link_levels):
            with m.If(diff[k * b : (k + 1) * b].any()):
                m.d.comb += height.eq(k + 1)
        m.d.sync += [
            r0.valid.eq(accept),
            r0.op.eq(req.op),
            r0.src.eq(req.src),
            r0.dst.eq(req.dst),
            r0.height.eq(height),
            r0.alive.eq(1),
            r0.s.eq(s0),
            r0.d.eq(d0),
            r0.ports.eq(req.ports),
        ]
        with m.If(is_clear):
            m.d.sync += r0.height.eq(0)  # touches no link in the pipeline
        with m.If(req.op != Op.RELEASE):
            m.d.sync += r0.ports.eq(0)

        # -- one P_h block per link level ----------------------------------------------------
        for h in range(link_levels):
            load = r0 if h == 0 else outs[h - 1]
            mm, rr, c, u = mem_stage[h], read_stage[h], comp[h], upd[h]
            w1, w2 = hist1[h], hist2[h]

            # The read data arrives registered (on ECP5 in the block RAM's own output
            # register) two cycles after the address: at the start of R.
            u_mem = RegisteredReadMemory(w, depth, init=full)
            d_mem = RegisteredReadMemory(w, depth, init=full)
            m.submodules[f"ulink{h}"], m.submodules[f"dlink{h}"] = u_mem, d_mem

            # load: address the memories with the switches of the slot entering M.
            m.d.comb += [
                u_mem.read_addr.eq(load.s),
                d_mem.read_addr.eq(load.d),
            ]

            # The request in C works on the rows the memory had when it was in load. The
            # writes of the four requests ahead of it came later: the one now in U, and the
            # ones in W1, W2 and W3 (wrote one, two and three cycles ago). Which of them hit
            # the same row is decided two stages early: in M against C, U and W1 (which are U,
            # W1 and W2 when the request is in R), registered, and in R the newest of those
            # three that hits (or the memory row) is selected and registered as `base`. In R
            # only the request ahead (in C, in U next) is compared, so compute has a
            # registered 2:1 select ahead of its AND.
            c_we = Signal(name=f"c_we{h}")  # the request in C will write (set below)
            m.d.sync += [
                mm.eq(load),
                rr.eq(mm),
                c.eq(rr),
            ]
            # Per memory: `newest` = the request ahead (in C now, in U next) hits the row;
            # `base` = the vector of the newest of the three after it (in U, W1 and W2 now, in
            # W1, W2 and W3 next) that hits the row, else the memory row.
            cur = {}
            for name, addr, row, new_field in (("u", "s", "ws", "nu"), ("d", "d", "wd", "nd")):
                hit = [Signal(name=f"hit_{name}{h}_{k}") for k in range(3)]  # U, W1, W2 in R
                m.d.sync += [
                    hit[0].eq(c_we & (c[addr] == mm[addr])),
                    hit[1].eq(u.we & (u[row] == mm[addr])),
                    hit[2].eq(w1.we & (w1[row] == mm[addr])),
                ]
                newest = Signal(name=f"newest_{name}{h}")
                base = Signal(w, name=f"base_{name}{h}", reset_less=True)
                memory_row = (u_mem if name == "u" else d_mem).read_data
                m.d.sync += [
                    newest.eq(c_we & (c[addr] == rr[addr])),
                    base.eq(
                        Mux(
                            hit[0],
                            u[new_field],
                            Mux(hit[1], w1[new_field], Mux(hit[2], w2[new_field], memory_row)),
                        )
                    ),
                ]
                cur[name] = Signal(w, name=f"cur_{name}{h}")
                m.d.comb += cur[name].eq(Mux(newest, u[new_field], base))
            cur_u, cur_d = cur["u"], cur["d"]

            # Priority select of the lowest free port (the reference's order: lowest index
            # first), one-hot; `none` = no port is free. The port number is encoded after the
            # U register, off the loop.
            avail = Signal(w, name=f"avail{h}")
            lowest = Signal(w, name=f"lowest{h}")
            none = Signal(name=f"none{h}")
            m.d.comb += avail.eq(cur_u & cur_d)
            if w >= CARRY_CHAIN_MIN_W:
                # On the carry chain: ``avail - 1`` flips the lowest set bit and the zeros
                # below it, so ``avail & ~(avail - 1)`` is the lowest set bit, and the borrow
                # out (the extra top bit) says that ``avail`` is zero. On ECP5 this is a short
                # CCU2C chain instead of a tree of LUTs.
                minus1 = Signal(w + 1, name=f"minus1_{h}")
                m.d.comb += [
                    minus1.eq(avail - 1),
                    lowest.eq(avail & ~minus1[:w]),
                    none.eq(minus1[w]),
                ]
            else:
                # Few ports: LUTs beat the carry chain's entry and exit. Port i is chosen if it
                # is free and no lower port is, with a two-level prefix (groups of four ports,
                # then the ports inside a group).
                below = Signal(w, name=f"below{h}")  # some port under i is free
                group = 4
                groups = [avail[k : k + group] for k in range(0, w, group)]
                group_any = Cat(g.any() for g in groups)
                for i in range(1, w):
                    k, j = divmod(i, group)
                    inside = groups[k][:j].any() if j else Const(0)
                    earlier = group_any[:k].any() if k else Const(0)
                    m.d.comb += below[i].eq(inside | earlier)
                m.d.comb += [lowest.eq(avail & ~below), none.eq(~avail.any())]

            # What the request does at this level is known from its slot alone, so decide it
            # in R and register it: `act` = the level is on its path (it will write back),
            # `sched` = it takes the lowest free port, `release` = the port bit it gives back.
            act = Signal(name=f"act{h}")
            sched = Signal(name=f"sched{h}")
            release = Signal(w, name=f"release{h}")
            r_act = rr.valid & rr.alive & (rr.height > h)
            m.d.sync += [
                act.eq(r_act),
                sched.eq(r_act & (rr.op == Op.SCHEDULE)),
                release.eq(Mux(r_act & (rr.op == Op.RELEASE), Const(1, w) << rr.ports[h], 0)),
            ]
            m.d.comb += c_we.eq(act)

            take = Signal(w, name=f"take{h}")
            new_u, new_d = Signal(w, name=f"new_u{h}"), Signal(w, name=f"new_d{h}")
            m.d.comb += [
                take.eq(Mux(sched, lowest, 0)),
                new_u.eq((cur_u & ~take) | release),
                new_d.eq((cur_d & ~take) | release),
            ]

            # Theorem 1: digits above h stay, the low h+1 digits shift up one, P_h enters.
            # (Slots that are refused or not on this level never use the new switches.) In C
            # P_h is only known for a RELEASE (its `ports[h]`); a SCHEDULE slot carries zeros
            # there, and its port is ORed in after the U register from the one-hot `take`
            # (zero for every other slot, and for a refused one).
            def climb(switch, port=c.ports[h], h=h):
                low = (h + 1) * b
                if low >= sb:
                    return Cat(port, switch[: low - b])
                return Cat(port, switch[: low - b], switch[low:])

            m.d.sync += [
                u.slot.eq(c),
                u.slot.alive.eq(c.alive & ~(sched & none)),
                u.slot.s.eq(climb(c.s)),
                u.slot.d.eq(climb(c.d)),
                u.take.eq(take),
                u.we.eq(act),
                u.ws.eq(c.s),
                u.wd.eq(c.d),
                u.nu.eq(new_u),
                u.nd.eq(new_d),
                w1.we.eq(u.we),
                w1.ws.eq(u.ws),
                w1.wd.eq(u.wd),
                w1.nu.eq(u.nu),
                w1.nd.eq(u.nd),
                w2.eq(w1),
            ]
            with m.If(clearing):
                m.d.sync += [w1.we.eq(0), w2.we.eq(0)]

            port = Signal(b, name=f"port{h}")
            for k in range(b):
                m.d.comb += port[k].eq(Cat(u.take[i] for i in range(w) if i >> k & 1).any())
            m.d.comb += [
                outs[h].eq(u.slot),
                outs[h].ports[h].eq(u.slot.ports[h] | port),
                outs[h].s[:b].eq(u.slot.s[:b] | port),
                outs[h].d[:b].eq(u.slot.d[:b] | port),
            ]

            # update: write back (or, while clearing, free row after row).
            for mem, row, vector in ((u_mem, u.ws, u.nu), (d_mem, u.wd, u.nd)):
                m.d.comb += [
                    mem.write_addr.eq(Mux(clearing, clear_row, row)),
                    mem.write_data.eq(Mux(clearing, full, vector)),
                    mem.write_en.eq(clearing | u.we),
                ]

        # -- results -------------------------------------------------------------------------
        out = Signal(result_layout(levels, w))
        m.d.comb += [
            out.op.eq(last.op),
            out.src.eq(last.src),
            out.dst.eq(last.dst),
            out.granted.eq(last.alive),
            out.ports.eq(last.ports),
            fifo.w_data.eq(out.as_value()),
            fifo.w_en.eq(last.valid),
            self.results.valid.eq(fifo.r_rdy),
            res.eq(fifo.r_data),
            fifo.r_en.eq(self.results.ready),
        ]
        m.d.sync += outstanding.eq(outstanding + accept - (self.results.valid & self.results.ready))
        return m
