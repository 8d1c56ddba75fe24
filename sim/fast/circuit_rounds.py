"""Vectorised behavioural simulator of round-based delivery on the circuit-switched fat tree.

Strumpen and Krishnamurthy (2005), sections 3 and 7: ``n = 2^h`` nodes, the router node at
level ``l`` made of ``2^l`` four-port routers (the ``w = 2`` case of
:class:`fattree.spec.topology.FatTree`). In each delivery round every pending message is sent
at cycle 0; rejected messages are retried in the next round (all nodes together).

Rules (the same as the hardware, see docs/circuit_tree.md):

* A message from ``src`` to ``dst`` climbs to level ``L`` (highest differing bit), turns and
  descends. At the up router of level ``l`` it leaves by up port ``p = r XOR e``, where ``r``
  is the router's random bit for the round and ``e`` the down port it came in on (0 = a,
  1 = b): alone it takes a random port, two arriving together take different ports, so the
  way up never collides.
* The router at hop ``k`` of the path (``k = 0`` is the source's leaf router) decides in
  cycle ``2k``. At hops ``k = L .. 2L`` it claims an outgoing downstream wire (the turn at
  ``k = L``, then one per level down to the destination's link). The claim fails if the wire
  is held; of the claims on one free wire in one cycle, the turn wins, then the message
  arriving on up port c, then d.
* A message rejected at hop ``k`` (cycle ``t = 2k``) frees the wire it holds at hop ``j < k``
  from cycle ``t + (k - j) + 1`` (the reject travels back one hop per cycle).
* A delivered message (won hop ``2L`` at cycle ``4L``) with ``payload`` data words frees the
  wire at hop ``j`` from cycle ``4L + payload + 4 + (2L - j)`` (the acknowledge travels back
  one hop per cycle); ``payload=None`` holds every circuit to the end of the round.

:func:`round_reference` is a straightforward per-message implementation of the same rules
that reads the wiring from :class:`~fattree.spec.topology.FatTree`; tests check that both give
identical deliveries for identical random bits. :func:`round_fast` is the compiled one (a
numba kernel, cached in ``__pycache__``) that scales to ``n = 2^20``: messages sorted once by
(level, destination), one pass per cycle over the claims of that cycle, a rejected message's
wires freed lazily (their release cycle is computed when someone next claims them).
:func:`delivery_rounds` draws the same router bits from the generator as :func:`random_bits`
(bit for bit, through :func:`random_bit_bytes`), so a seed gives the rounds the numpy
simulator before it gave.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...params import check_int_range, check_positive_int, check_power_of_two
from ...spec import traffic
from .lazy_jit import njit

__all__ = [
    "random_bits",
    "round_fast",
    "round_reference",
    "delivery_rounds",
    "RoundsResult",
    "random_traffic",
    "transpose",
    "bit_reversal",
    "cyclic_shift",
    "random_bit_bytes",
    "Scratch",
]

_INF = 2**30


def _h(n: int) -> int:
    check_power_of_two("n", n, 2)
    return n.bit_length() - 1


def random_bits(n: int, rng: np.random.Generator) -> np.ndarray:
    """One random bit per router for one round: shape ``(lg n, n / 2)``, indexed like
    ``FatTree`` switches ``SW(level, t)``."""
    h = _h(n)
    return rng.integers(0, 2, size=(h, n // 2), dtype=np.uint8)


def _check_messages(n: int, src, dst) -> tuple[np.ndarray, np.ndarray]:
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if src.shape != dst.shape or src.ndim != 1:
        raise ValueError("src and dst must be 1-d arrays of the same length")
    if src.size and (src.min() < 0 or src.max() >= n or dst.min() < 0 or dst.max() >= n):
        raise ValueError(f"sources and destinations must be nodes 0 .. {n - 1}")
    if np.any(src == dst):
        raise ValueError("a message's source and destination must differ")
    if src.size and np.bincount(src, minlength=n).max() > 1:  # O(n), unlike a sort
        raise ValueError("sources must be distinct (one transmission per node at a time)")
    return src, dst


class Scratch:
    """Wire state reused from round to round (allocating and faulting in ``lg n * n`` words
    every round costs more than the round at ``n = 2^20``). Times are offset by ``base``
    per round, so the previous round's circuits are free without clearing the arrays. A held
    wire stores ``held + j`` (``j`` the holder's slot, below ``n``), so the next round starts
    ``n`` past ``held``."""

    def __init__(self, n: int):
        h = _h(n)
        self.n = n
        self.free_at = np.zeros(h * n, dtype=np.int32)
        self.base = 0

    def next_round(self, span: int) -> int:
        step = span + self.n
        if self.base + 2 * step >= 2**31 - 1:
            self.free_at[:] = 0
            self.base = 0
        self.base += step
        return self.base


@njit(cache=True)
def _levels(src, dst):
    """The level a message turns at: the highest bit in which source and destination
    differ."""
    level = np.empty(src.size, np.int64)
    for i in range(src.size):
        x = src[i] ^ dst[i]
        top = -1
        while x:
            x >>= 1
            top += 1
        level[i] = top
    return level


@njit(cache=True)
def _round_kernel(n, h, src, dst, level, bits, shift, payload, base, span, free_at, alive):
    """One round (the rules of the module docstring) of messages sorted by (level,
    destination); bit ``shift`` of ``bits[lv * n/2 + t]`` is router SW(lv, t)'s random bit,
    ``payload < 0`` holds circuits to the end of the round; fills ``alive`` (delivered).

    In that order every claim of one level at one hop reads its wires in increasing order,
    which keeps the ``lg n * n`` wire array in cache. A wire claimed in the current cycle can
    only be wanted by a message of the same level arriving on the other up port (c against
    d): the later visitor of a wire compares priorities and takes it over if it ranks
    higher, so one pass settles a cycle.
    """
    m = src.size
    half = n // 2
    held = base + span
    start = np.zeros(h + 1, np.int64)
    for i in range(m):
        start[level[i] + 1] += 1
    for lv in range(h):
        start[lv + 1] += start[lv]
    # Up paths level by level: messages above level lv are a suffix, and one level's random
    # bits (n / 2 bytes) stay in the second-level cache.
    up = np.zeros(m, np.int32)  # 32-bit copies: half the bytes streamed per claim
    s32 = src.astype(np.int32)
    t = s32 >> 1
    for lv in range(h - 1):
        block = 1 << (lv + 1)
        for i in range(start[lv + 1], m):
            p = ((bits[lv * half + t[i]] >> shift) & 1) ^ ((s32[i] >> lv) & 1)
            up[i] |= p << lv
            t[i] = (t[i] & ~(block - 1)) | (((t[i] << 1) | p) & (block - 1))
    dst = dst.astype(np.int32)
    # One byte per message: the hop it was rejected at, -1 while it lives (k < 2 lg n).
    lost_at = np.full(m, -1, np.int8)
    lvl = level.astype(np.int8)
    for k in range(2 * h - 1):
        now = base + 2 * k
        for lv in range((k + 1) // 2, min(k, h - 1) + 1):
            v = 2 * lv - k
            low = (1 << v) - 1
            high = ~low
            offset = v * n
            for j in range(start[lv], start[lv + 1]):
                if lost_at[j] >= 0:
                    continue
                w = offset + ((dst[j] & high) | (up[j] & low))
                f = free_at[w]
                if f <= now:
                    free_at[w] = held + j
                    continue
                o = f - held
                if o >= 0:
                    ko = lost_at[o]
                    if ko >= 0:
                        # Held by a message rejected at hop ko: the reject travels back one
                        # hop per cycle, so the wire of its hop 2 L - v is free from cycle
                        # 2 ko + (ko - hop) + 1 (computed here rather than written back for
                        # every wire of every rejected message).
                        if base + 2 * ko + (ko - (2 * lvl[o] - v)) + 1 <= now:
                            free_at[w] = held + j
                            continue
                    elif lvl[o] == lv:  # claimed in this cycle: turn, then c, then d
                        prio = 0 if v == lv else 1 + ((up[j] >> v) & 1)
                        prio_o = 0 if v == lv else 1 + ((up[o] >> v) & 1)
                        if prio < prio_o:
                            free_at[w] = held + j
                            lost_at[o] = k
                            continue
                lost_at[j] = k
        if payload >= 0 and k % 2 == 0 and k // 2 < h:
            lv = k // 2
            for j in range(start[lv], start[lv + 1]):
                if lost_at[j] < 0:  # delivered now: the acknowledge frees one hop per cycle
                    for vv in range(lv + 1):
                        w = vv * n + (((dst[j] >> vv) << vv) | (up[j] & ((1 << vv) - 1)))
                        free_at[w] = base + 4 * lv + payload + 4 + vv
    for j in range(m):
        alive[j] = lost_at[j] < 0


def _round(n, src, dst, level, bits, shift, payload, scratch) -> np.ndarray:
    """One round of messages already sorted by (level, destination)."""
    h = _h(n)
    span = 8 * h + (payload or 0) + 8  # every time of a round is base + (0 .. span - 1)
    base = scratch.next_round(span)
    alive = np.empty(src.size, dtype=np.bool_)
    _round_kernel(
        n,
        h,
        src,
        dst,
        level,
        bits,
        shift,
        -1 if payload is None else payload,
        base,
        span,
        scratch.free_at,
        alive,
    )
    return alive


@njit(cache=True)
def _sort_kernel(n, h, src, dst):
    """Counting sorts: by destination, then stably by level (O(n), unlike lexsort), in
    32-bit counters (half the memory traffic of the scattered writes)."""
    m = src.size
    level = _levels(src, dst)
    count = np.zeros(n + 1, np.int32)
    for i in range(m):
        count[dst[i] + 1] += 1
    for d in range(n):
        count[d + 1] += count[d]
    by_dst = np.empty(m, np.int32)
    for i in range(m):
        by_dst[count[dst[i]]] = i
        count[dst[i]] += 1
    fill = np.zeros(h + 1, np.int64)
    for i in range(m):
        fill[level[i] + 1] += 1
    for lv in range(h):
        fill[lv + 1] += fill[lv]
    src_out = np.empty(m, np.int64)
    dst_out = np.empty(m, np.int64)
    level_out = np.empty(m, np.int64)
    order = np.empty(m, np.int64)
    for i in by_dst:
        q = fill[level[i]]
        fill[level[i]] += 1
        order[q] = i
        src_out[q] = src[i]
        dst_out[q] = dst[i]
        level_out[q] = level[i]
    return order, src_out, dst_out, level_out


def _by_level_and_destination(n, src, dst):
    return _sort_kernel(n, _h(n), src, dst)


def round_fast(
    n: int, src, dst, bits: np.ndarray, payload: int | None = None, scratch: Scratch | None = None
) -> np.ndarray:
    """One delivery round of the messages ``src[i] -> dst[i]``; returns the delivered mask."""
    h = _h(n)
    src, dst = _check_messages(n, src, dst)
    if payload is not None:
        check_positive_int("payload", payload)
    bits = np.ascontiguousarray(bits, dtype=np.uint8)
    if bits.shape != (h, n // 2):
        raise ValueError(f"bits must have shape ({h}, {n // 2}), not {bits.shape}")
    scratch = Scratch(n) if scratch is None else scratch
    order, src, dst, level = _by_level_and_destination(n, src, dst)
    delivered = np.empty(src.size, dtype=np.bool_)
    delivered[order] = _round(n, src, dst, level, bits.ravel(), 0, payload, scratch)
    return delivered


def random_bit_bytes(rng: np.random.Generator, count: int) -> tuple[np.ndarray, int]:
    """``(data, shift)`` with ``data[i] >> shift & 1`` equal to
    ``rng.integers(0, 2, count, dtype=np.uint8)[i]``, leaving ``rng`` where that call leaves
    it, at memory speed.

    For ``PCG64`` (``default_rng``), NumPy draws each of those bytes from a 32-bit word
    (little-endian, four bytes per word; a word left over from an earlier 32-bit draw comes
    first) and Lemire's method keeps the byte's top bit, so the raw 64-bit stream read as
    bytes gives the same bits 30 times faster. Other bit generators take NumPy's own path.
    """
    bg = rng.bit_generator
    if type(bg) is not np.random.PCG64:
        return rng.integers(0, 2, count, dtype=np.uint8), 0
    state = bg.state
    words = -(-count // 4)  # 32-bit draws
    head = None
    if state["has_uint32"] and words:
        head = np.array([state["uinteger"]], dtype="<u4").view(np.uint8)
        words -= 1
    raw = bg.random_raw((words + 1) // 2)
    data = raw.view(np.uint8)
    if head is not None:
        data = np.concatenate([head, data])
    state = bg.state
    if words % 2:  # the last 64-bit draw's high half waits for the next 32-bit draw
        state["has_uint32"], state["uinteger"] = 1, int(raw[-1] >> np.uint64(32))
    else:
        state["has_uint32"], state["uinteger"] = 0, 0
    bg.state = state
    return data[:count], 7


def round_reference(n: int, src, dst, bits: np.ndarray, payload: int | None = None) -> list[bool]:
    """The same round, message by message, with the wiring of :class:`FatTree`."""
    from ...spec.topology import FatTree

    h = _h(n)
    src, dst = _check_messages(n, src, dst)
    tree = FatTree(h, 2)
    msgs = []
    for s, d in zip(src.tolist(), dst.tolist(), strict=True):
        height = tree.common_level(s, d)
        ports: list[int] = []
        switch, entry = divmod(s, 2)
        for lv in range(height):
            p = int(bits[lv][switch]) ^ entry
            ports.append(p)
            _, switch, entry = tree.up_neighbour(lv, switch, p)
        links = tree.route(s, d, ports)
        down = links[1 + height :]  # the turn's down link first, the eject link last
        claims = []
        for j, link in enumerate(down):
            at_level = height - j
            prio = 0 if j == 0 else 1 + ports[at_level]
            claims.append((2 * (height + j), link, prio))
        msgs.append({"height": height, "claims": claims, "held": [], "state": "go"})

    free_at: dict = {}
    for now in range(0, 4 * h, 2):
        requests = []
        for i, msg in enumerate(msgs):
            if msg["state"] != "go":
                continue
            for when, link, prio in msg["claims"]:
                if when == now:
                    requests.append((prio, i, link))
        requests.sort()
        taken = set()
        for _prio, i, link in requests:
            msg = msgs[i]
            hop = now // 2
            if free_at.get(link, 0) <= now and link not in taken:
                taken.add(link)
                free_at[link] = int(_INF)
                msg["held"].append((hop, link))
                if hop == 2 * msg["height"]:
                    msg["state"] = "delivered"
                    if payload is not None:
                        for j, held in msg["held"]:
                            free_at[held] = (
                                4 * msg["height"] + payload + 4 + (2 * msg["height"] - j)
                            )
            else:
                msg["state"] = "rejected"
                for j, held in msg["held"]:
                    free_at[held] = now + (hop - j) + 1
    return [msg["state"] == "delivered" for msg in msgs]


@dataclass
class RoundsResult:
    rounds: int
    delivered_per_round: list[int] = field(default_factory=list)


def delivery_rounds(
    n: int,
    src,
    dst,
    rng: np.random.Generator,
    *,
    payload: int | None = None,
    max_rounds: int = 100_000,
    progress: Callable[[str], None] | None = None,
) -> RoundsResult:
    """Rounds until every message is delivered (rejected ones retried in the next round).

    Each round draws its router bits as :func:`random_bits` would (the same bits and the
    same state of ``rng`` afterwards, through :func:`random_bit_bytes`), so a seed gives the
    rounds it always gave."""
    src, dst = _check_messages(n, src, dst)
    if payload is not None:
        check_positive_int("payload", payload)
    h = _h(n)
    # Levels and destinations never change, so one sort serves every round.
    _, src, dst, level = _by_level_and_destination(n, src, dst)
    result = RoundsResult(0)
    scratch = Scratch(n)
    while src.size:
        if result.rounds >= max_rounds:
            raise RuntimeError(f"messages still pending after {max_rounds} rounds")
        bits, shift = random_bit_bytes(rng, h * (n // 2))
        delivered = _round(n, src, dst, level, bits, shift, payload, scratch)
        result.rounds += 1
        result.delivered_per_round.append(int(delivered.sum()))
        src, dst, level = src[~delivered], dst[~delivered], level[~delivered]
        if progress is not None:
            progress(f"round {result.rounds}: {src.size} pending")
    return result


# -- traffic -------------------------------------------------------------------------------


def random_traffic(n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``m`` distinct random sources, each with a uniformly random destination other than
    itself (Lemma 1's sample space)."""
    _h(n)
    check_int_range("m", m, 1, n)
    src = rng.permutation(n)[:m].astype(np.int64)
    dst = (src + 1 + rng.integers(0, n - 1, m)) % n
    return src, dst


def _without_fixed_points(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = src != dst  # a node's message to itself never enters the network
    return src[keep], dst[keep]


def transpose(n: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fattree.spec.traffic.transpose` of every node (fixed points dropped)."""
    h = _h(n)
    p = np.arange(n, dtype=np.int64)
    return _without_fixed_points(p, traffic.transpose(p, h))


def bit_reversal(n: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fattree.spec.traffic.bit_reversal` of every node (fixed points dropped)."""
    h = _h(n)
    p = np.arange(n, dtype=np.int64)
    return _without_fixed_points(p, traffic.bit_reversal(p, h))


def cyclic_shift(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Node ``p`` sends to ``(p + k) mod n``, ``0 < k < n``."""
    _h(n)
    check_int_range("k", k, 1, n - 1)
    p = np.arange(n, dtype=np.int64)
    return p, traffic.cyclic_shift(p, n, k)
