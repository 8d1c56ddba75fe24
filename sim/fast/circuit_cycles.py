"""Compiled cycle-level simulator of the circuit-switched fat tree, every retry strategy.

:mod:`fattree.sim.fast.circuit_rounds` simulates delivery *rounds* (every pending message
starts together); it cannot say what immediate retry or back-off do, where each interface
retries on its own clock. :class:`CycleSim` steps every register of the network every clock
cycle, as :class:`~fattree.sim.models.circuit.CircuitTreeModel` does, but compiled with numba
over packed arrays, so it reaches ``n = 2^16`` leaves (and beyond) in seconds to minutes.

What it restates (the rules of docs/circuit_tree.md, "Router rules" and "Network
interface"), and what it leaves out:

* Every router: per input its state (idle, forwarding, dead until valid falls) and route,
  per output busy and owner; the up-port choice ``r XOR e`` (the other port if busy, a before
  b), the down-port priority turn > c > d, release by reject or ack at the end of the cycle,
  registered forward words and backward pulses. ``r`` is bit 0 of the router's own 16-bit
  LFSR seeded with ``router_seed(seed, level, switch)``: the shared LFSR's state sequence read
  at that seed's position plus the cycle (all maximal LFSRs of one polynomial run through the
  same states).
* Every interface: one message at a time from its queue (taken the cycle it is idle), route
  words then ``length`` data words (all data bits 0: only bit 0 of a route word is read by the
  routers), retry ``immediate`` (one idle cycle after the reject), ``round`` (the tree's ``go``:
  one cycle after no interface has a message in flight) or ``backoff`` (wait ``BACKOFF_SLOT *
  (x mod 2^min(k, BACKOFF_CAP))`` cycles after the ``k``-th reject, ``x`` its LFSR).
* Receivers are always ready (no full-interface rejects) and there are no faults: what
  :func:`~fattree.sim.models.circuit.run_model` runs by default.

Links are one byte per direction pair: bit 0 forward valid, bit 1 forward data bit 0, bit 2
the reject and bit 3 the ack travelling back on the same link, stored at the sending
port (the byte of router ``r`` port ``p`` is what ``r`` drives on port ``p``'s wires). Two
buffers, read the current one, write the next, swap: every block reads its neighbours'
registers of the previous cycle, as in the hardware. A router with nothing held and nothing
arriving is skipped (its outputs are 0). A router's registers are one int32 word, an
interface's one int64 row; a router's cycle and its arbitration are pure functions of scalars
(``_router_step``, ``_grant``), inlined into the loop over all routers.

``tests/test_fast_circuit_cycles.py`` checks every interface output of every cycle against the
cycle-exact model, for every retry strategy and pattern at small ``n``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...params import check_int_range, check_power_of_two
from ...spec.circuit import BACKOFF_CAP, BACKOFF_SLOT, LFSR_WIDTH, check_retry, router_seed
from ...spec.lfsr import LFSRModel
from .lazy_jit import njit

__all__ = ["CycleSim", "CycleResult", "run_cycles", "diameter_cycles", "MAX_LEAVES"]

#: The largest network the simulator builds (2^22 leaves: 44 million router ports).
MAX_LEAVES = 1 << 22

_IDLE, _FWD, _DEAD = 0, 1, 2
_N_IDLE, _N_PEND, _N_SEND, _N_WAIT = 0, 1, 2, 3
_PERIOD = (1 << LFSR_WIDTH) - 1


@functools.cache
def _lfsr_sequence() -> tuple[np.ndarray, np.ndarray]:
    """One period of the 16-bit LFSR's states from state 1, and each state's position."""
    lfsr = LFSRModel(LFSR_WIDTH, seed=1)
    seq = np.empty(_PERIOD, dtype=np.uint16)
    for i in range(_PERIOD):
        seq[i] = lfsr.state
        lfsr.clock()
    where = np.zeros(1 << LFSR_WIDTH, dtype=np.int64)
    where[seq] = np.arange(_PERIOD)
    return seq, where


def _offsets(seed: int, level: int, count: int) -> np.ndarray:
    """Positions in the LFSR sequence of the seeds of blocks ``(level, 0 .. count-1)``."""
    _, where = _lfsr_sequence()
    seeds = np.fromiter((router_seed(seed, level, t) for t in range(count)), np.int64, count)
    return where[seeds]


def _wiring(h: int) -> np.ndarray:
    """``peer[i]``: the byte a port reads (its neighbour's output byte on the same link).

    Router ``SW(level, t)`` is block ``level * n/2 + t``, its port ``p`` byte ``4 * block + p``;
    interface ``k`` is byte ``4R + k``; ``4R + n`` is a byte that is always 0 (the root's up
    ports). The up links are those of :class:`fattree.spec.topology.FatTree` with ``w = 2``
    (Theorem 1's parent, arriving on down port ``(t >> level) & 1``).
    """
    n = 1 << h
    half = n // 2
    routers = h * half
    zero = 4 * routers + n
    peer = np.full(zero + 1, zero, dtype=np.int64)
    nodes = np.arange(n, dtype=np.int64)
    leaf_port = 4 * (nodes // 2) + nodes % 2
    peer[leaf_port] = 4 * routers + nodes
    peer[4 * routers + nodes] = leaf_port
    t = np.arange(half, dtype=np.int64)
    for lv in range(h - 1):
        block = 1 << (lv + 1)
        down = (t >> lv) & 1
        for up in (0, 1):
            parent = (t // block) * block + ((t % block) * 2 + up) % block
            child_byte = 4 * (lv * half + t) + 2 + up
            parent_byte = 4 * ((lv + 1) * half + parent) + down
            peer[child_byte] = parent_byte
            peer[parent_byte] = child_byte
    return peer


# The cycle, split along the hardware's blocks. Numba passes an array to a compiled function
# with two atomic reference-count updates, inline="always" or not: helpers taking the state
# arrays once per router and interface ran 3-13x slower than one monolithic kernel. So what
# runs every cycle for every block is a pure function of scalars, inlined into a loop that
# takes the arrays once per cycle; helpers taking arrays run once per message or reject.
#
# A router's registers, packed in one int32 word: per input port p its state (bits 2p, 2p+1)
# and route (bits 8 + 2p, 9 + 2p), per output port o busy (bit 16 + o) and owner (bits
# 20 + 2o, 21 + 2o).
_RT_AT, _BUSY_AT, _OWN_AT = 8, 16, 20
_LIVE = 0xFF | (0xF << _BUSY_AT)  # state and busy bits: 0 for a router that holds nothing
# Interfaces: one int64 row of _I_COLS per node, the columns read every cycle first.
_I_COLS = 13
(
    _I_ST,  # _N_IDLE, _N_PEND, _N_SEND or _N_WAIT
    _I_UP,  # the byte driven up (valid, data bit 0)
    _I_WAS,  # down valid seen last cycle (a burst ends when it falls)
    _I_WAIT,  # back-off cycles left
    _I_IDX,  # next word
    _I_LAST,  # last word (2 * level + length)
    _I_LVL,  # level of the turn
    _I_DST,  # destination
    _I_QPOS,  # next message of the queue
    _I_QEND,  # end of the queue
    _I_MSG,  # current message
    _I_ATT,  # rejects of the current message, capped at BACKOFF_CAP
    _I_OFF,  # the interface LFSR's position in the sequence at cycle 0
) = range(_I_COLS)
_M_DST, _M_ACCEPT, _M_DONE, _M_REJECTS = range(4)  # messages: one int64 row each
_O_DONE, _O_REJECT, _O_RX = range(3)  # interface output registers: one uint8 row per node
# glob: cycle, go (round retry), acknowledged, total, cycle of the last acknowledge, and
# which of the two link buffers is the current one.
_G_CYCLE, _G_GO, _G_ACKED, _G_TOTAL, _G_LAST, _G_WHICH = range(6)
_IMMEDIATE, _ROUND, _BACKOFF = range(3)
_CAP_MASK = (1 << BACKOFF_CAP) - 1


@njit(cache=True, inline="always")
def _grant(hm, dm, bsm, rb):
    """One router's arbitration: from the new heads ``hm`` (valid on an idle input), their
    route bits ``dm``, the busy outputs ``bsm`` and the LFSR bit ``rb``, the granted and the
    rejected inputs and the granted routes (input ``i``'s output in bits ``2i, 2i+1``)."""
    h0 = (hm & 1) != 0
    h1 = (hm & 2) != 0
    d0 = dm & 1
    d1 = (dm >> 1) & 1
    d2 = (dm >> 2) & 1
    d3 = (dm >> 3) & 1
    gm = 0  # granted inputs
    xm = 0  # rejected inputs
    route = 0
    # Up (a or b with bit 0): port r XOR e, the other one if busy, a before b; never refused.
    up_a = h0 and d0 == 0
    up_b = h1 and d1 == 0
    if up_a or up_b:
        port_a = rb ^ ((bsm >> (2 + rb)) & 1)
        other = ((bsm >> (3 - rb)) & 1) != 0 or (up_a and port_a == 1 - rb)
        port_b = (1 - rb) ^ (1 if other else 0)
        if up_a:
            gm |= 1
            route |= 2 + port_a
        if up_b:
            gm |= 2
            route |= (2 + port_b) << 2
    # Down, priority turn > c > d: a turn (a to b, b to a) is refused only by a busy port.
    turn_to_b = h0 and d0 == 1
    turn_to_a = h1 and d1 == 1
    if turn_to_b:
        route |= 1
        if bsm & 2:
            xm |= 1
        else:
            gm |= 1
    if turn_to_a:  # route 0
        if bsm & 1:
            xm |= 2
        else:
            gm |= 2
    if hm & 4:
        if ((bsm >> d2) & 1) == 0 and not (turn_to_b if d2 else turn_to_a):
            gm |= 4
            route |= d2 << 4
        else:
            xm |= 4
    if hm & 8:
        o = d3
        c_took = (hm & 4) != 0 and d2 == o
        if ((bsm >> o) & 1) == 0 and not (turn_to_b if o else turn_to_a) and not c_took:
            gm |= 8
            route |= o << 6
        else:
            xm |= 8
    return gm, xm, route


@njit(cache=True, inline="always")
def _asks_up(word, b0, b1):
    """Whether a new head on port a or b asks to go up (only then the LFSR bit is read)."""
    a = (b0 & 3) == 1 and (word & 3) == _IDLE
    return a or ((b1 & 3) == 1 and ((word >> 2) & 3) == _IDLE)


@njit(cache=True, inline="always")
def _router_step(word, b0, b1, b2, b3, rb):
    """One router's cycle: from its registers ``word``, the bytes on its four links and its
    LFSR bit, its registers after the cycle and the bytes it drives on ports 0 .. 3."""
    # Per port bit masks: forward valid and data bit 0, backward reject and ack.
    vm = (b0 & 1) | ((b1 & 1) << 1) | ((b2 & 1) << 2) | ((b3 & 1) << 3)
    dm = ((b0 >> 1) & 1) | (b1 & 2) | (((b2 >> 1) & 1) << 2) | (((b3 >> 1) & 1) << 3)
    jm = ((b0 >> 2) & 1) | (((b1 >> 2) & 1) << 1) | (b2 & 4) | (((b3 >> 2) & 1) << 3)
    km = ((b0 >> 3) & 1) | (((b1 >> 3) & 1) << 1) | (((b2 >> 3) & 1) << 2) | (b3 & 8)
    hm = 0  # new heads: valid on an idle input
    fm = 0  # inputs forwarding (before this cycle's updates)
    for p in range(4):
        s = (word >> (2 * p)) & 3
        if s == _IDLE:
            hm |= vm & (1 << p)
        elif s == _FWD:
            fm |= 1 << p
    bsm = (word >> _BUSY_AT) & 15
    gm, xm, route = _grant(hm, dm, bsm, rb)
    # Inputs: granted, rejected, released by a reject or ack from beyond, finished.
    new = 0
    bkr = xm
    bka = 0
    for i in range(4):
        s = (word >> (2 * i)) & 3
        q = (word >> (_RT_AT + 2 * i)) & 3
        if (gm >> i) & 1:
            s = _FWD
            q = (route >> (2 * i)) & 3
        elif (xm >> i) & 1:
            s = _DEAD
        elif s == _FWD:
            rr = (jm >> q) & 1
            ra = (km >> q) & 1
            if rr or ra:
                s = _DEAD
                bkr |= rr << i
                bka |= ra << i
        elif s == _DEAD and ((vm >> i) & 1) == 0:
            s = _IDLE
        new |= (s << (2 * i)) | (q << (_RT_AT + 2 * i))
    # Outputs: a claim takes the port, a release frees it; a held port forwards its owner's
    # word if the owner was forwarding (old state) and valid.
    y = 0
    for o in range(4):
        held = (bsm >> o) & 1
        released = held and (((jm | km) >> o) & 1)
        own = (word >> (_OWN_AT + 2 * o)) & 3
        byte = ((bkr >> o) & 1) << 2 | ((bka >> o) & 1) << 3
        if held and not released and (fm >> own) & 1 and (vm >> own) & 1:
            byte |= 1 | (((dm >> own) & 1) << 1)
        busy = held and not released
        for i in range(4):  # at most one granted input claims an output
            if (gm >> i) & 1 and ((route >> (2 * i)) & 3) == o:
                busy = True
                own = i
                break
        new |= ((1 if busy else 0) << (_BUSY_AT + o)) | (own << (_OWN_AT + 2 * o))
        y |= byte << (8 * o)
    return new, y & 0xFF, (y >> 8) & 0xFF, (y >> 16) & 0xFF, y >> 24


@njit(cache=True)
def _routers(c, cur, nxt, peer, rstate, roff, seq):
    """Every router's cycle ``c``: read the links in ``cur``, drive the next bytes in ``nxt``.
    A router holding nothing with nothing arriving is skipped (its outputs are 0)."""
    for r in range(rstate.size):
        base = 4 * r
        b0 = cur[peer[base]]
        b1 = cur[peer[base + 1]]
        b2 = cur[peer[base + 2]]
        b3 = cur[peer[base + 3]]
        word = rstate[r]
        if (word & _LIVE) == 0 and (b0 | b1 | b2 | b3) == 0:
            nxt[base] = 0
            nxt[base + 1] = 0
            nxt[base + 2] = 0
            nxt[base + 3] = 0
            continue
        rb = 0
        if _asks_up(word, b0, b1):
            rb = seq[(roff[r] + c) % _PERIOD] & 1
        rstate[r], nxt[base], nxt[base + 1], nxt[base + 2], nxt[base + 3] = _router_step(
            word, b0, b1, b2, b3, rb
        )


@njit(cache=True, inline="always")
def _word_bit(j, lv, dst):
    """Bit 0 of word ``j`` of a message to ``dst`` turning at level ``lv``: ``lv`` zeros
    (up), a one (turn), ``dst``'s bits ``lv - 1 .. 0`` (down), then the data words' 0s."""
    if j < lv:
        return 0
    if j == lv:
        return 1
    if j <= 2 * lv:
        return (dst >> (2 * lv - j)) & 1
    return 0


@njit(cache=True)
def _take(k, c, length, nif, msgs):
    """Interface ``k`` takes the next message of its queue at cycle ``c``."""
    i = nif[k, _I_QPOS]
    nif[k, _I_QPOS] = i + 1
    nif[k, _I_MSG] = i
    msgs[i, _M_ACCEPT] = c
    d = msgs[i, _M_DST]
    x = k ^ d
    lv = -1  # the turn is at the level of the highest differing bit
    while x:
        x >>= 1
        lv += 1
    nif[k, _I_LVL] = lv
    nif[k, _I_DST] = d
    nif[k, _I_LAST] = 2 * lv + length
    nif[k, _I_ATT] = 0
    nif[k, _I_WAIT] = 0
    nif[k, _I_ST] = _N_PEND


@njit(cache=True)
def _rejected(k, c, retry, nif, msgs, seq):
    """Interface ``k`` is rejected at cycle ``c``: count it, back to pending and, for
    back-off, wait ``BACKOFF_SLOT * (x mod 2^min(rejects, BACKOFF_CAP))`` cycles."""
    nif[k, _I_ST] = _N_PEND
    msgs[nif[k, _I_MSG], _M_REJECTS] += 1
    att = nif[k, _I_ATT]
    exp = att + (1 if att != BACKOFF_CAP else 0)
    if att != BACKOFF_CAP:
        nif[k, _I_ATT] = att + 1
    if retry == _BACKOFF:
        x = np.int64(seq[(nif[k, _I_OFF] + c) % _PERIOD])
        nif[k, _I_WAIT] = (x & _CAP_MASK & ((1 << exp) - 1)) * BACKOFF_SLOT


@njit(cache=True)
def _interfaces(c, go, retry, length, cur, nxt, peer, nif, msgs, outs, glob, seq):
    """Every interface's cycle ``c`` (``go``: the round retry's go of the previous cycle):
    read the links in ``cur``, drive the next bytes in ``nxt``, set the output registers."""
    base = peer.size - 1 - nif.shape[0]  # interface k's byte; then the always-0 byte
    for k in range(nif.shape[0]):
        b = cur[peer[base + k]]
        outs[k, _O_DONE] = 0
        outs[k, _O_REJECT] = 0
        s = nif[k, _I_ST]
        up = nif[k, _I_UP]
        if s == _N_IDLE:
            if nif[k, _I_QPOS] < nif[k, _I_QEND]:
                _take(k, c, length, nif, msgs)
        elif s == _N_PEND:
            if retry == _BACKOFF and nif[k, _I_WAIT]:
                nif[k, _I_WAIT] -= 1
            elif retry != _ROUND or go:
                up = 1 | (_word_bit(0, nif[k, _I_LVL], nif[k, _I_DST]) << 1)
                nif[k, _I_IDX] = 1
                nif[k, _I_ST] = _N_SEND
        elif (b >> 2) & 1:  # a reject, sending or waiting
            up = 0
            outs[k, _O_REJECT] = 1
            _rejected(k, c, retry, nif, msgs, seq)
        elif s == _N_WAIT:
            if (b >> 3) & 1:  # the ack
                outs[k, _O_DONE] = 1
                nif[k, _I_ST] = _N_IDLE
                msgs[nif[k, _I_MSG], _M_DONE] = c
                glob[_G_ACKED] += 1
                glob[_G_LAST] = c
        else:
            j = nif[k, _I_IDX]
            if j <= nif[k, _I_LAST]:
                up = 1 | (_word_bit(j, nif[k, _I_LVL], nif[k, _I_DST]) << 1)
                nif[k, _I_IDX] = j + 1
            else:
                up = 0
                nif[k, _I_ST] = _N_WAIT
        nif[k, _I_UP] = up
        # Receive (always ready): a burst that ended is stored and acknowledged.
        valid = b & 1
        ack = 1 if nif[k, _I_WAS] and not valid else 0
        outs[k, _O_RX] = ack
        nif[k, _I_WAS] = valid
        nxt[base + k] = up | (ack << 3)


@njit(cache=True)
def _in_flight(nif):
    """Whether any interface is sending or waiting for its ack (no round retry's go)."""
    for k in range(nif.shape[0]):
        if nif[k, _I_ST] == _N_SEND or nif[k, _I_ST] == _N_WAIT:
            return True
    return False


@njit(cache=True)
def _kernel(retry, length, peer, links, rstate, roff, seq, nif, msgs, outs, glob, cycles):
    """Advance ``cycles`` clock cycles or until every message is acknowledged: every router,
    then every interface, each reading the current link buffer and writing the next."""
    for _ in range(cycles):
        if glob[_G_ACKED] >= glob[_G_TOTAL]:
            break
        c = glob[_G_CYCLE]
        w = glob[_G_WHICH]
        cur = links[w]
        nxt = links[1 - w]
        go = glob[_G_GO]
        if retry == _ROUND:
            glob[_G_GO] = 0 if _in_flight(nif) else 1
        _routers(c, cur, nxt, peer, rstate, roff, seq)
        _interfaces(c, go, retry, length, cur, nxt, peer, nif, msgs, outs, glob, seq)
        glob[_G_WHICH] = 1 - w
        glob[_G_CYCLE] = c + 1


def _port_field(at: int, width: int) -> property:
    """A property: per router port (``4 * block + p``) its ``width``-bit field at bit
    ``at + width * p`` of the router's word, as the former int8 array (a copy)."""
    shifts = at + width * np.arange(4)
    mask = (1 << width) - 1
    return property(lambda self: ((self.rstate[:, None] >> shifts) & mask).astype(np.int8).ravel())


def _column(table: str, col: int) -> property:
    """A property: column ``col`` of the array attribute ``table`` (a writable view)."""
    return property(lambda self: getattr(self, table)[:, col])


@dataclass
class CycleResult:
    """One run to the end: ``cycles`` as :func:`~fattree.sim.models.circuit.run_model`
    counts them (steps until the last acknowledge has been seen at its source), and per
    message (in the order given) the cycle it was taken, the cycle its acknowledge reached
    the source's ``tx_done`` register, and how often it was rejected."""

    leaves: int
    retry: str
    cycles: int
    messages: int
    rejects: int
    accept: np.ndarray
    done: np.ndarray
    rejects_per_message: np.ndarray

    def as_dict(self) -> dict:
        per = self.rejects_per_message
        return {
            "leaves": self.leaves,
            "retry": self.retry,
            "cycles": self.cycles,
            "messages": self.messages,
            "rejects": self.rejects,
            "retries_per_message": self.rejects / self.messages if self.messages else 0.0,
            "max_retries": int(per.max()) if per.size else 0,
        }


class CycleSim:
    """The whole network, register for register, on arrays (see the module docstring).

    Parameters
    ----------
    leaves : int
        Nodes, a power of two from 2 to :data:`MAX_LEAVES`.
    src, dst : array-like of int
        The messages: ``src[i]`` sends to ``dst[i]`` (different nodes); a node sends its
        messages in the order they appear.
    length : int
        Data words per message (1 .. 64, as the hardware).
    seed : int
        Network seed: every router's and interface's LFSR seed derives from it, as in
        :class:`~fattree.sim.models.circuit.CircuitTreeModel`.
    retry : str or int
        ``"immediate"``, ``"round"``, ``"backoff"`` (or 0, 1, 2).
    """

    def __init__(self, leaves, src, dst, length=2, seed=1, retry="immediate"):
        self.leaves = check_power_of_two("leaves", leaves, 2)
        check_int_range("leaves", leaves, 2, MAX_LEAVES)
        self.length = check_int_range("length", length, 1, 64)
        self.seed = check_int_range("seed", seed, 0)
        self.retry = check_retry(retry)
        src = np.asarray(src)
        dst = np.asarray(dst)
        if src.size == 0 and dst.size == 0:  # np.asarray([]) is a float array
            src = dst = np.zeros(0, dtype=np.int64)
        if (
            src.ndim != 1
            or dst.shape != src.shape
            or src.dtype.kind not in "iu"
            or dst.dtype.kind not in "iu"
        ):
            raise ValueError("src and dst must be 1-d integer arrays of the same length")
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= leaves):
            raise ValueError(f"src and dst must be nodes 0 .. {leaves - 1}")
        if np.any(src == dst):
            raise ValueError("a message's source and destination must differ")
        n = leaves
        h = n.bit_length() - 1
        self.h = h
        half = n // 2
        routers = h * half
        # Messages grouped by source, each node's in the given order (a stable sort).
        order = np.argsort(src, kind="stable")
        self._order = order
        m = src.size
        self.messages = m
        self.msgs = np.zeros((m, 4), dtype=np.int64)
        self.msgs[:, _M_DST] = dst[order]
        self.msgs[:, _M_ACCEPT] = -1
        self.msgs[:, _M_DONE] = -1
        self.peer = _wiring(h)
        self.links = np.zeros((2, self.peer.size), dtype=np.uint8)
        self.rstate = np.zeros(routers, dtype=np.int32)  # see _RT_AT ..
        self.seq, _ = _lfsr_sequence()
        self.roff = np.concatenate([_offsets(seed, lv, half) for lv in range(h)])
        self.nif = np.zeros((n, _I_COLS), dtype=np.int64)
        self.nif[:, _I_OFF] = _offsets(seed, h, n)
        counts = np.bincount(src, minlength=n).astype(np.int64)
        self.nif[:, _I_QEND] = np.cumsum(counts)
        self.nif[:, _I_QPOS] = self.nif[:, _I_QEND] - counts
        #: The interfaces' output registers after the last cycle (what the model's
        #: ``step`` returns at the start of the next one): ``tx_done``, ``tx_reject``,
        #: ``rx_valid``.
        self.outs = np.zeros((n, 3), dtype=np.uint8)
        self.glob = np.array([0, 0, 0, m, -1, 0], dtype=np.int64)  # see _G_CYCLE ..

    # The former per-field arrays: the columns of the packed state (views), and the routers'
    # fields decoded from their words (copies).
    st = _port_field(0, 2)
    rt = _port_field(_RT_AT, 2)
    busy = _port_field(_BUSY_AT, 1)
    own = _port_field(_OWN_AT, 2)
    idle = property(lambda self: (self.rstate & _LIVE) == 0)
    which = property(lambda self: self.glob[_G_WHICH : _G_WHICH + 1])
    nst = _column("nif", _I_ST)
    nup = _column("nif", _I_UP)
    nwas = _column("nif", _I_WAS)
    nwait = _column("nif", _I_WAIT)
    nidx = _column("nif", _I_IDX)
    nlast = _column("nif", _I_LAST)
    nlvl = _column("nif", _I_LVL)
    ndst = _column("nif", _I_DST)
    natt = _column("nif", _I_ATT)
    cur_msg = _column("nif", _I_MSG)
    qpos = _column("nif", _I_QPOS)
    qend = _column("nif", _I_QEND)
    noff = _column("nif", _I_OFF)
    msg_dst = _column("msgs", _M_DST)
    msg_accept = _column("msgs", _M_ACCEPT)
    msg_done = _column("msgs", _M_DONE)
    msg_rejects = _column("msgs", _M_REJECTS)
    tx_done = _column("outs", _O_DONE)
    tx_reject = _column("outs", _O_REJECT)
    rx_valid = _column("outs", _O_RX)

    @property
    def cycle(self) -> int:
        return int(self.glob[_G_CYCLE])

    @property
    def acknowledged(self) -> int:
        return int(self.glob[_G_ACKED])

    @property
    def tx_ready(self) -> np.ndarray:
        """Per node: idle (ready to take its next message) in the coming cycle."""
        return (self.nst == _N_IDLE).astype(np.uint8)

    def step(self, cycles: int = 1) -> None:
        """Advance ``cycles`` clock cycles (fewer once every message is acknowledged)."""
        _kernel(
            {"immediate": _IMMEDIATE, "round": _ROUND, "backoff": _BACKOFF}[self.retry],
            self.length,
            self.peer,
            self.links,
            self.rstate,
            self.roff,
            self.seq,
            self.nif,
            self.msgs,
            self.outs,
            self.glob,
            cycles,
        )

    def run(self, max_cycles: int = 10_000_000, chunk: int = 4096) -> CycleResult:
        """Run until every message is acknowledged; ``RuntimeError`` past ``max_cycles``."""
        check_int_range("max_cycles", max_cycles, 1)
        while self.acknowledged < self.messages:
            if self.cycle >= max_cycles:
                left = self.messages - self.acknowledged
                raise RuntimeError(f"{left} messages pending after {max_cycles} cycles")
            self.step(min(chunk, max_cycles - self.cycle))
        # The model's run sees the last acknowledge in the output of the following cycle.
        cycles = int(self.glob[_G_LAST]) + 2 if self.messages else 0
        back = np.empty(self.messages, dtype=np.int64)
        back[self._order] = np.arange(self.messages)
        return CycleResult(
            self.leaves,
            self.retry,
            cycles,
            self.messages,
            int(self.msg_rejects.sum()),
            self.msg_accept[back],
            self.msg_done[back],
            self.msg_rejects[back],
        )


def run_cycles(leaves, src, dst, *, length=2, seed=1, retry="immediate", max_cycles=10_000_000):
    """Build a :class:`CycleSim` and run it to the end: its :class:`CycleResult`."""
    return CycleSim(leaves, src, dst, length, seed, retry).run(max_cycles)


def diameter_cycles(leaves: int, length: int = 2, seed: int = 1) -> int:
    """Cycles of one message across the diameter (node 0 to node ``leaves - 1``) alone, as
    :func:`run_model` counts them: the normalisation of the paper's Fig. 4."""
    return run_cycles(leaves, [0], [leaves - 1], length=length, seed=seed).cycles
