"""Compiled cycle-level simulator of the circuit-switched fat tree, every retry strategy.

:mod:`fattree.sim.fast.circuit_rounds` simulates delivery *rounds* (every pending message
starts together); it cannot say what immediate retry or back-off do, where each interface
retries on its own clock. :class:`CycleSim` steps every register of the network every clock
cycle, as :class:`~fattree.sim.models.circuit.CircuitTreeModel` does, but in one numba kernel
over flat arrays, so it reaches ``n = 2^16`` leaves (and beyond) in seconds to minutes.

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
arriving is skipped (its outputs are 0).

``tests/test_fast_circuit_cycles.py`` checks every interface output of every cycle against the
cycle-exact model, for every retry strategy and pattern at small ``n``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numba
import numpy as np

from ...params import check_int_range, check_power_of_two
from ...spec.circuit import BACKOFF_CAP, BACKOFF_SLOT, LFSR_WIDTH, check_retry, router_seed
from ...spec.lfsr import LFSRModel

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


@numba.njit(cache=True)
def _kernel(
    n,
    h,
    length,
    retry,
    peer,
    links,
    which,
    st,
    rt,
    busy,
    own,
    idle,
    roff,
    seq,
    nst,
    nidx,
    nlast,
    natt,
    nwait,
    nlvl,
    ndst,
    nup,
    nwas,
    noff,
    tx_done,
    tx_reject,
    rx_valid,
    qpos,
    qend,
    cur_msg,
    msg_dst,
    msg_accept,
    msg_done,
    msg_rejects,
    glob,
    cycles,
):
    """Advance ``cycles`` clock cycles or until every message is acknowledged.

    ``glob`` holds the cycle, ``go`` (round retry), the acknowledged count, the total and
    the cycle of the last acknowledge; ``which`` selects the current link buffer.
    """
    period = seq.size
    half = n // 2
    routers = h * half
    base_ni = 4 * routers
    cap_mask = (1 << BACKOFF_CAP) - 1
    for _ in range(cycles):
        if glob[2] >= glob[3]:
            break
        c = glob[0]
        cur = links[which[0]]
        nxt = links[1 - which[0]]
        go_used = glob[1]
        if retry == 1:
            any_busy = False
            for k in range(n):
                if nst[k] == _N_SEND or nst[k] == _N_WAIT:
                    any_busy = True
                    break
            glob[1] = 0 if any_busy else 1
        # -- routers ---------------------------------------------------------------------
        for r in range(routers):
            base = 4 * r
            b0 = cur[peer[base]]
            b1 = cur[peer[base + 1]]
            b2 = cur[peer[base + 2]]
            b3 = cur[peer[base + 3]]
            if idle[r] and (b0 | b1 | b2 | b3) == 0:
                nxt[base] = 0
                nxt[base + 1] = 0
                nxt[base + 2] = 0
                nxt[base + 3] = 0
                continue
            vm = (b0 & 1) | ((b1 & 1) << 1) | ((b2 & 1) << 2) | ((b3 & 1) << 3)
            dm = ((b0 >> 1) & 1) | (b1 & 2) | (((b2 >> 1) & 1) << 2) | (((b3 >> 1) & 1) << 3)
            jm = ((b0 >> 2) & 1) | (((b1 >> 2) & 1) << 1) | (b2 & 4) | (((b3 >> 2) & 1) << 3)
            km = ((b0 >> 3) & 1) | (((b1 >> 3) & 1) << 1) | (((b2 >> 3) & 1) << 2) | (b3 & 8)
            s0 = st[base]
            s1 = st[base + 1]
            s2 = st[base + 2]
            s3 = st[base + 3]
            bsm = busy[base] | (busy[base + 1] << 1) | (busy[base + 2] << 2) | (busy[base + 3] << 3)
            h0 = (vm & 1) != 0 and s0 == _IDLE
            h1 = (vm & 2) != 0 and s1 == _IDLE
            h2 = (vm & 4) != 0 and s2 == _IDLE
            h3 = (vm & 8) != 0 and s3 == _IDLE
            d0 = dm & 1
            d1 = (dm >> 1) & 1
            d2 = (dm >> 2) & 1
            d3 = (dm >> 3) & 1
            gm = 0  # granted inputs
            xm = 0  # rejected inputs
            o0 = o1 = o2 = o3 = 0
            if h0 or h1 or h2 or h3:
                up_a = h0 and d0 == 0
                up_b = h1 and d1 == 0
                if up_a or up_b:
                    rb = seq[(roff[r] + c) % period] & 1
                    port_a = rb ^ ((bsm >> (2 + rb)) & 1)
                    other = ((bsm >> (3 - rb)) & 1) != 0 or (up_a and port_a == 1 - rb)
                    port_b = (1 - rb) ^ (1 if other else 0)
                    if up_a:
                        gm |= 1
                        o0 = 2 + port_a
                    if up_b:
                        gm |= 2
                        o1 = 2 + port_b
                turn_to_b = h0 and d0 == 1
                turn_to_a = h1 and d1 == 1
                busy_a = bsm & 1
                busy_b = (bsm >> 1) & 1
                if turn_to_b:
                    o0 = 1
                    if busy_b:
                        xm |= 1
                    else:
                        gm |= 1
                if turn_to_a:
                    o1 = 0
                    if busy_a:
                        xm |= 2
                    else:
                        gm |= 2
                if h2:
                    o = d2
                    win = ((bsm >> o) & 1) == 0 and not (turn_to_b if o else turn_to_a)
                    if win:
                        gm |= 4
                        o2 = o
                    else:
                        xm |= 4
                if h3:
                    o = d3
                    win = (
                        ((bsm >> o) & 1) == 0
                        and not (turn_to_b if o else turn_to_a)
                        and not (h2 and d2 == o)
                    )
                    if win:
                        gm |= 8
                        o3 = o
                    else:
                        xm |= 8
            # Inputs: granted, rejected, released by a reject or ack from beyond, finished.
            bkr = xm
            bka = 0
            for i in range(4):
                s = st[base + i]
                if (gm >> i) & 1:
                    st[base + i] = _FWD
                    rt[base + i] = o0 if i == 0 else o1 if i == 1 else o2 if i == 2 else o3
                elif (xm >> i) & 1:
                    st[base + i] = _DEAD
                elif s == _FWD:
                    q = rt[base + i]
                    rr = (jm >> q) & 1
                    ra = (km >> q) & 1
                    if rr or ra:
                        st[base + i] = _DEAD
                        bkr |= rr << i
                        bka |= ra << i
                elif s == _DEAD and ((vm >> i) & 1) == 0:
                    st[base + i] = _IDLE
            # Outputs: a claim takes the port, a release frees it; a held port forwards its
            # owner's word if the owner was forwarding (old state) and valid.
            old_s = (s0, s1, s2, s3)
            any_held = False
            for o in range(4):
                held = (bsm >> o) & 1
                released = held and (((jm | km) >> o) & 1)
                src = own[base + o]
                claim = -1
                if (gm & 1) and o0 == o:
                    claim = 0
                elif (gm & 2) and o1 == o:
                    claim = 1
                elif (gm & 4) and o2 == o:
                    claim = 2
                elif (gm & 8) and o3 == o:
                    claim = 3
                if claim >= 0:
                    busy[base + o] = 1
                    own[base + o] = claim
                elif released:
                    busy[base + o] = 0
                if busy[base + o]:
                    any_held = True
                byte = ((bkr >> o) & 1) << 2 | ((bka >> o) & 1) << 3
                if held and not released:
                    if old_s[src] == _FWD and (vm >> src) & 1:
                        byte |= 1 | (((dm >> src) & 1) << 1)
                nxt[base + o] = byte
            idle[r] = not any_held and (st[base] | st[base + 1] | st[base + 2] | st[base + 3]) == 0
        # -- interfaces ------------------------------------------------------------------
        for k in range(n):
            b = cur[peer[base_ni + k]]
            up_reject = (b >> 2) & 1
            up_ack = (b >> 3) & 1
            down_valid = b & 1
            tx_done[k] = 0
            tx_reject[k] = 0
            s = nst[k]
            up = np.int64(nup[k])
            if s == _N_IDLE:
                i = qpos[k]
                if i < qend[k]:
                    qpos[k] = i + 1
                    cur_msg[k] = i
                    msg_accept[i] = c
                    d = msg_dst[i]
                    x = k ^ d
                    lv = -1
                    while x:
                        x >>= 1
                        lv += 1
                    nlvl[k] = lv
                    ndst[k] = d
                    nlast[k] = 2 * lv + length
                    natt[k] = 0
                    nwait[k] = 0
                    nst[k] = _N_PEND
            elif s == _N_PEND:
                if retry == 0:
                    start = True
                elif retry == 1:
                    start = go_used != 0
                else:
                    start = nwait[k] == 0
                    if nwait[k]:
                        nwait[k] -= 1
                if start:
                    lv = nlvl[k]
                    up = 1 | ((1 if lv == 0 else 0) << 1)  # word 0: 1 only for a turn here
                    nidx[k] = 1
                    nst[k] = _N_SEND
            else:
                if up_reject:
                    up = 0
                    tx_reject[k] = 1
                    nst[k] = _N_PEND
                    msg_rejects[cur_msg[k]] += 1
                    att = natt[k]
                    exp = att + (1 if att != BACKOFF_CAP else 0)
                    if att != BACKOFF_CAP:
                        natt[k] = att + 1
                    if retry == 2:
                        x = np.int64(seq[(noff[k] + c) % period])
                        nwait[k] = (x & cap_mask & ((1 << exp) - 1)) * BACKOFF_SLOT
                elif s == _N_WAIT and up_ack:
                    tx_done[k] = 1
                    nst[k] = _N_IDLE
                    msg_done[cur_msg[k]] = c
                    glob[2] += 1
                    glob[4] = c
                elif s == _N_SEND:
                    j = nidx[k]
                    if j <= nlast[k]:
                        lv = nlvl[k]
                        if j < lv:
                            bit = 0
                        elif j == lv:
                            bit = 1
                        elif j <= 2 * lv:
                            bit = (ndst[k] >> (2 * lv - j)) & 1
                        else:
                            bit = 0  # data words
                        up = 1 | (bit << 1)
                        nidx[k] = j + 1
                    else:
                        up = 0
                        nst[k] = _N_WAIT
            nup[k] = up
            # Receive (always ready): a burst that ended is stored and acknowledged.
            ack = 1 if (nwas[k] and not down_valid) else 0
            rx_valid[k] = ack
            nwas[k] = down_valid
            nxt[base_ni + k] = up | (ack << 3)
        which[0] = 1 - which[0]
        glob[0] = c + 1


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
        self.msg_dst = dst[order].astype(np.int64)
        counts = np.bincount(src, minlength=n).astype(np.int64)
        self.qend = np.cumsum(counts)
        self.qpos = self.qend - counts
        m = src.size
        self.messages = m
        self.msg_accept = np.full(m, -1, dtype=np.int64)
        self.msg_done = np.full(m, -1, dtype=np.int64)
        self.msg_rejects = np.zeros(m, dtype=np.int64)
        self.peer = _wiring(h)
        self.links = np.zeros((2, self.peer.size), dtype=np.uint8)
        self.which = np.zeros(1, dtype=np.int64)
        self.st = np.zeros(4 * routers, dtype=np.int8)
        self.rt = np.zeros(4 * routers, dtype=np.int8)
        self.busy = np.zeros(4 * routers, dtype=np.int8)
        self.own = np.zeros(4 * routers, dtype=np.int8)
        self.idle = np.ones(routers, dtype=np.bool_)
        self.seq, _ = _lfsr_sequence()
        self.roff = np.concatenate([_offsets(seed, lv, half) for lv in range(h)])
        self.noff = _offsets(seed, h, n)
        self.nst = np.zeros(n, dtype=np.int8)
        self.nidx = np.zeros(n, dtype=np.int64)
        self.nlast = np.zeros(n, dtype=np.int64)
        self.natt = np.zeros(n, dtype=np.int64)
        self.nwait = np.zeros(n, dtype=np.int64)
        self.nlvl = np.zeros(n, dtype=np.int64)
        self.ndst = np.zeros(n, dtype=np.int64)
        self.nup = np.zeros(n, dtype=np.uint8)
        self.nwas = np.zeros(n, dtype=np.uint8)
        self.cur_msg = np.zeros(n, dtype=np.int64)
        #: The interfaces' output registers after the last cycle (what the model's
        #: ``step`` returns at the start of the next one).
        self.tx_done = np.zeros(n, dtype=np.uint8)
        self.tx_reject = np.zeros(n, dtype=np.uint8)
        self.rx_valid = np.zeros(n, dtype=np.uint8)
        # cycle, go, acknowledged, total, cycle of the last acknowledge
        self.glob = np.array([0, 0, 0, m, -1], dtype=np.int64)

    @property
    def cycle(self) -> int:
        return int(self.glob[0])

    @property
    def acknowledged(self) -> int:
        return int(self.glob[2])

    @property
    def tx_ready(self) -> np.ndarray:
        """Per node: idle (ready to take its next message) in the coming cycle."""
        return (self.nst == _N_IDLE).astype(np.uint8)

    def step(self, cycles: int = 1) -> None:
        """Advance ``cycles`` clock cycles (fewer once every message is acknowledged)."""
        _kernel(
            self.leaves,
            self.h,
            self.length,
            {"immediate": 0, "round": 1, "backoff": 2}[self.retry],
            self.peer,
            self.links,
            self.which,
            self.st,
            self.rt,
            self.busy,
            self.own,
            self.idle,
            self.roff,
            self.seq,
            self.nst,
            self.nidx,
            self.nlast,
            self.natt,
            self.nwait,
            self.nlvl,
            self.ndst,
            self.nup,
            self.nwas,
            self.noff,
            self.tx_done,
            self.tx_reject,
            self.rx_valid,
            self.qpos,
            self.qend,
            self.cur_msg,
            self.msg_dst,
            self.msg_accept,
            self.msg_done,
            self.msg_rejects,
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
        cycles = int(self.glob[4]) + 2 if self.messages else 0
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
