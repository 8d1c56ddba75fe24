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
identical deliveries for identical random bits. :func:`round_fast` is the numpy one that
scales to ``n = 2^20``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..params import check_int_range, check_positive_int, check_power_of_two
from ..spec import traffic

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
]

_INF = np.int32(2**30)


def _h(n: int) -> int:
    check_power_of_two("n", n, 2)
    return n.bit_length() - 1


def random_bits(n: int, rng: np.random.Generator) -> np.ndarray:
    """One random bit per router for one round: shape ``(lg n, n / 2)``, indexed like
    ``FatTree`` switches ``SW(level, t)``."""
    h = _h(n)
    return rng.integers(0, 2, size=(h, n // 2), dtype=np.uint8)


def _levels(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    x = np.bitwise_xor(src, dst).astype(np.int64)
    level = np.full(x.shape, -1, dtype=np.int64)
    for b in range(63):
        if not np.any(x >> b):
            break
        level[(x >> b) & 1 == 1] = b
    return level


def _check_messages(n: int, src, dst) -> tuple[np.ndarray, np.ndarray]:
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if src.shape != dst.shape or src.ndim != 1:
        raise ValueError("src and dst must be 1-d arrays of the same length")
    if src.size and (src.min() < 0 or src.max() >= n or dst.min() < 0 or dst.max() >= n):
        raise ValueError(f"sources and destinations must be nodes 0 .. {n - 1}")
    if np.any(src == dst):
        raise ValueError("a message's source and destination must differ")
    if np.unique(src).size != src.size:
        raise ValueError("sources must be distinct (one transmission per node at a time)")
    return src, dst


class Scratch:
    """Wire state reused from round to round (allocating and faulting in ``lg n * n`` words
    every round costs more than the round at ``n = 2^20``). Times are offset by ``base``
    per round, so the previous round's circuits are free without clearing the arrays."""

    def __init__(self, n: int):
        h = _h(n)
        self.free_at = np.zeros(h * n, dtype=np.int32)
        self.stamp = np.zeros(h * n, dtype=np.int32)
        self.base = 0

    def next_round(self, span: int) -> int:
        if self.base + 2 * span >= 2**31 - 1:
            self.free_at[:] = 0
            self.base = 0
        self.base += span
        return self.base


def round_fast(
    n: int, src, dst, bits: np.ndarray, payload: int | None = None, scratch: Scratch | None = None
) -> np.ndarray:
    """One delivery round of the messages ``src[i] -> dst[i]``; returns the delivered mask."""
    h = _h(n)
    src, dst = _check_messages(n, src, dst)
    if payload is not None:
        check_positive_int("payload", payload)
    m = src.size
    level = _levels(src, dst)
    # Up path: `up` = sum p_i 2^i identifies the router at every level (wire ids); `t` is the
    # FatTree switch index (SW(l, t)), which only indexes the random bits.
    up = np.zeros(m, dtype=np.int64)
    t = src >> 1
    for lv in range(h - 1):
        going = np.nonzero(level > lv)[0]
        if going.size == 0:
            break
        tg = t[going]
        p = bits[lv][tg].astype(np.int64) ^ ((src[going] >> lv) & 1)
        up[going] |= p << lv
        block = 1 << (lv + 1)
        t[going] = (tg // block) * block + ((tg % block) * 2 + p) % block

    scratch = Scratch(n) if scratch is None else scratch
    free_at, stamp = scratch.free_at, scratch.stamp
    # Every time of this round is base + (0 .. span - 1); `held` outlasts the round only.
    span = 8 * h + (payload or 0) + 8
    base = scratch.next_round(span)
    held = base + span
    alive = np.ones(m, dtype=bool)
    ids_all = np.arange(m, dtype=np.int64)

    def wire(ids: np.ndarray, v: np.ndarray) -> np.ndarray:
        return v * n + (((dst[ids] >> v) << v) | (up[ids] & ((1 << v) - 1)))

    for k in range(2 * h - 1):
        now = base + 2 * k
        lv_all = level
        sel = alive & (lv_all <= k) & (k <= 2 * lv_all)
        ids = ids_all[sel]
        if ids.size == 0:
            continue
        lv = level[ids]
        v = 2 * lv - k
        w = wire(ids, v)
        prio = np.where(v == lv, 0, 1 + ((up[ids] >> v) & 1))
        free = free_at[w] <= now
        for p in (2, 1, 0):  # lowest priority first; the highest writes last and wins
            s = free & (prio == p)
            stamp[w[s]] = ids[s]  # ids < 2^31
        win = free & (stamp[w] == ids)
        free_at[w[win]] = held
        lost = ids[~win]
        if lost.size:
            alive[lost] = False
            llv = level[lost]
            for vv in range(h):
                # Wires held at hops j = 2L - vv < k, i.e. levels above this claim's level.
                s = (vv > 2 * llv - k) & (vv <= llv)
                if np.any(s):
                    li = lost[s]
                    hop = 2 * level[li] - vv
                    free_at[wire(li, np.full(li.size, vv))] = now + (k - hop) + 1
        if payload is not None:
            done = ids[win & (k == 2 * lv)]
            if done.size:
                dl = level[done]
                for vv in range(h):
                    s = vv <= dl
                    if np.any(s):
                        di = done[s]
                        release = base + 4 * dl[s] + payload + 4 + vv
                        free_at[wire(di, np.full(di.size, vv))] = release
    return alive


def round_reference(n: int, src, dst, bits: np.ndarray, payload: int | None = None) -> list[bool]:
    """The same round, message by message, with the wiring of :class:`FatTree`."""
    from ..spec.topology import FatTree

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
    """Rounds until every message is delivered (rejected ones retried in the next round)."""
    src, dst = _check_messages(n, src, dst)
    result = RoundsResult(0)
    scratch = Scratch(n)
    while src.size:
        if result.rounds >= max_rounds:
            raise RuntimeError(f"messages still pending after {max_rounds} rounds")
        delivered = round_fast(n, src, dst, random_bits(n, rng), payload, scratch)
        result.rounds += 1
        result.delivered_per_round.append(int(delivered.sum()))
        src, dst = src[~delivered], dst[~delivered]
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
