"""Ding's schedulers on FT(l, w), compiled (the schedulability experiment).

The same algorithms as :mod:`fattree.sim.models.scheduler` (level-wise, greedy, random,
optimal; failure modes keep and release; one round or round after round), restated on arrays
in a numba kernel so that 100 permutations of 4096 nodes take milliseconds instead of the
model's minutes. The ``random`` algorithm draws from Python's own Mersenne Twister (state taken
from ``random.Random(seed).getstate()``, ``choice()`` restated bit for bit), so the results are
the model's, request by request; the experiment checks that on every run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .lazy_jit import njit

__all__ = ["SCHEDULE_ALGORITHMS", "schedule_permutations", "PermutationSchedules"]

SCHEDULE_ALGORITHMS = ("level-wise", "greedy", "random", "optimal")

_MT_N, _MT_M = 624, 397


@njit(cache=True)
def _mt_uint32(mt):
    """CPython's genrand_uint32 on ``mt`` (624 words, then the position: getstate()'s
    layout)."""
    if mt[_MT_N] >= _MT_N:
        for kk in range(_MT_N):
            y = (mt[kk] & 0x80000000) | (mt[(kk + 1) % _MT_N] & 0x7FFFFFFF)
            x = mt[(kk + _MT_M) % _MT_N] ^ (y >> 1)
            if y & 1:
                x ^= 0x9908B0DF
            mt[kk] = x
        mt[_MT_N] = 0
    y = mt[mt[_MT_N]]
    mt[_MT_N] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y


@njit(cache=True)
def _randbelow(mt, n):
    """``random.Random._randbelow_with_getrandbits(n)`` (CPython 3.8+), for n < 2^32."""
    k = 0
    while (n >> k) > 0:
        k += 1
    r = _mt_uint32(mt) >> (32 - k)
    while r >= n:
        r = _mt_uint32(mt) >> (32 - k)
    return r


@njit(cache=True)
def _next_switch(wp, h, s, i):
    block = wp[h + 1]
    return (s // block) * block + ((s % block) * wp[1] + i) % block


@njit(cache=True)
def _height(w, src, dst):
    s, d, level = src // w, dst // w, 0
    while s != d:
        s //= w
        d //= w
        level += 1
    return level


@njit(cache=True)
def _request(up, down, wp, src, dst, alg, release, mt, ports, taken, choices):
    """One request against the link state (``up``/``down``: 1 = free); fills ``ports`` and
    returns ``(granted, height, ports chosen, failed level or -1)``."""
    w = wp[1]
    height = _height(w, src, dst)
    count = 0  # links taken: taken[j] = (direction 0 up / 1 down, level, switch, port)
    failed = -1
    nports = 0
    if alg == 0:  # level-wise (Fig. 7)
        s, d = src // w, dst // w
        for h in range(height):
            i = -1
            for p in range(w):
                if up[h, s, p] and down[h, d, p]:
                    i = p
                    break
            if i < 0:
                failed = h
                break
            up[h, s, i] = 0
            down[h, d, i] = 0
            taken[count, 0], taken[count, 1], taken[count, 2], taken[count, 3] = 0, h, s, i
            taken[count + 1, 0], taken[count + 1, 1] = 1, h
            taken[count + 1, 2], taken[count + 1, 3] = d, i
            count += 2
            ports[nports] = i
            nports += 1
            s, d = _next_switch(wp, h, s, i), _next_switch(wp, h, d, i)
    else:  # local: greedy (1) or random (2), the source side only, then the mirrored path
        s = src // w
        for h in range(height):
            free = 0
            for p in range(w):
                if up[h, s, p]:
                    choices[free] = p
                    free += 1
            if free == 0:
                failed = h
                break
            i = choices[0] if alg == 1 else choices[_randbelow(mt, free)]
            up[h, s, i] = 0
            taken[count, 0], taken[count, 1], taken[count, 2], taken[count, 3] = 0, h, s, i
            count += 1
            ports[nports] = i
            nports += 1
            s = _next_switch(wp, h, s, i)
        if failed < 0:
            d0 = dst // w
            for h in range(height - 1, -1, -1):
                d = (d0 // wp[h]) * wp[h]  # equation (9) with P_0 .. P_{h-1}
                for j in range(h):
                    d += ports[j] * wp[h - 1 - j]
                i = ports[h]
                if not down[h, d, i]:
                    failed = h
                    break
                down[h, d, i] = 0
                taken[count, 0], taken[count, 1], taken[count, 2], taken[count, 3] = 1, h, d, i
                count += 1
    if failed >= 0 and release:
        for j in range(count):
            if taken[j, 0] == 0:
                up[taken[j, 1], taken[j, 2], taken[j, 3]] = 1
            else:
                down[taken[j, 1], taken[j, 2], taken[j, 3]] = 1
    return failed < 0, height, nports, failed


@njit(cache=True)
def _colour(eu, ev, colours, left, right, colour, path):
    """``bipartite_edge_colouring`` of the model on arrays: ``left[u, c]`` / ``right[v, c]``
    the edge of colour c at a vertex, -1 if none; False if a vertex has too many edges."""
    for e in range(eu.size):
        u, v = eu[e], ev[e]
        a, b = -1, -1
        for c in range(colours):
            if left[u, c] < 0:
                a = c
                break
        for c in range(colours):
            if right[v, c] < 0:
                b = c
                break
        if a < 0 or b < 0:
            return False
        if right[v, a] >= 0:
            # Swap a and b along the a/b path from v (see the model for why it ends).
            length, x, c, on_right = 0, v, a, True
            while True:
                f = right[x, c] if on_right else left[x, c]
                if f < 0:
                    break
                path[length] = f
                length += 1
                x = eu[f] if on_right else ev[f]
                on_right = not on_right
                c = b if c == a else a
            for j in range(length):
                f = path[j]
                left[eu[f], colour[f]] = -1
                right[ev[f], colour[f]] = -1
            for j in range(length):
                f = path[j]
                colour[f] = b if colour[f] == a else a
                left[eu[f], colour[f]] = f
                right[ev[f], colour[f]] = f
        colour[e] = a
        left[u, a] = e
        right[v, a] = e
    return True


@njit(cache=True)
def _optimal(wp, levels, src, dst, heights, ports, switches):
    """``optimal_ports`` of the model: level by level, edge-colour the requests that climb
    above the level. False if the requests are not a partial permutation."""
    w = wp[1]
    m = src.size
    at_s = src // w
    at_d = dst // w
    left = np.empty((switches, w), np.int64)
    right = np.empty((switches, w), np.int64)
    active = np.empty(m, np.int64)
    eu = np.empty(m, np.int64)
    ev = np.empty(m, np.int64)
    colour = np.empty(m, np.int64)
    path = np.empty(m, np.int64)
    for h in range(levels - 1):
        count = 0
        for k in range(m):
            if heights[k] > h:
                active[count] = k
                eu[count] = at_s[k]
                ev[count] = at_d[k]
                count += 1
        if count == 0:
            break
        left[:] = -1
        right[:] = -1
        colour[:count] = -1
        if not _colour(eu[:count], ev[:count], w, left, right, colour, path):
            return False
        for j in range(count):
            k, c = active[j], colour[j]
            ports[k, h] = c
            at_s[k] = _next_switch(wp, h, at_s[k], c)
            at_d[k] = _next_switch(wp, h, at_d[k], c)
    return True


@njit(cache=True)
def _schedule_trials(wp, levels, switches, dsts, alg, release, rounds, states):
    """Every permutation ``dsts[t]`` (node ``k`` sends to ``dsts[t, k]``) from an empty
    network; ``states[t]`` is the random algorithm's Mersenne Twister state of trial t."""
    trials, m = dsts.shape
    w = wp[1]
    depth = max(levels - 1, 1)
    granted = np.zeros((trials, m), np.bool_)
    height = np.zeros((trials, m), np.int64)
    ports = np.full((trials, m, depth), -1, np.int64)
    nports = np.zeros((trials, m), np.int64)
    failed = np.full((trials, m), -1, np.int64)
    round_ = np.zeros((trials, m), np.int64)
    ok = True
    up = np.ones((depth, switches, w), np.uint8)
    down = np.ones((depth, switches, w), np.uint8)
    taken = np.empty((2 * depth, 4), np.int64)
    choices = np.empty(w, np.int64)
    buf = np.empty(depth, np.int64)
    src = np.arange(m)
    pending = np.empty(m, np.int64)
    left = np.empty(m, np.int64)
    src_used = np.zeros(m, np.bool_)
    dst_used = np.zeros(m, np.bool_)
    for t in range(trials):
        dst = dsts[t]
        for k in range(m):
            height[t, k] = _height(w, k, dst[k])
        if alg == 3:  # optimal: one round of conflict-free routes (rounds: a permutation
            # has load 1, so optimal_rounds colours everything 0 and routes it the same way)
            if not _optimal(wp, levels, src, dst, height[t], ports[t], switches):
                ok = False
            for k in range(m):
                granted[t, k] = True
                nports[t, k] = height[t, k]
            continue
        mt = states[t].copy()
        if not rounds:
            up[:] = 1
            down[:] = 1
            for k in range(m):
                g, hk, npk, fk = _request(
                    up, down, wp, k, dst[k], alg, release, mt, buf, taken, choices
                )
                granted[t, k] = g
                nports[t, k] = npk
                failed[t, k] = fk
                for j in range(npk):
                    ports[t, k, j] = buf[j]
            continue
        for k in range(m):
            pending[k] = k
        npending, r = m, 0
        while npending:
            up[:] = 1
            down[:] = 1
            src_used[:] = False
            dst_used[:] = False
            nleft = 0
            for j in range(npending):
                k = pending[j]
                d = dst[k]
                if src_used[k] or dst_used[d]:
                    left[nleft] = k
                    nleft += 1
                    continue
                src_used[k] = True
                dst_used[d] = True
                g, hk, npk, fk = _request(up, down, wp, k, d, alg, release, mt, buf, taken, choices)
                if g:
                    granted[t, k] = True
                    round_[t, k] = r
                    nports[t, k] = npk
                    for i in range(npk):
                        ports[t, k, i] = buf[i]
                else:
                    left[nleft] = k
                    nleft += 1
            pending[:nleft] = left[:nleft]
            npending, r = nleft, r + 1
    return ok, granted, height, ports, nports, failed, round_


@dataclass
class PermutationSchedules:
    """What :func:`schedule_permutations` found, per trial ``t`` and request ``k`` (node
    ``k`` to ``dsts[t, k]``): ``granted``, ``height`` (common level), ``ports[t, k, :nports[t,
    k]]`` (``P_0 ..``), ``failed`` level (-1 if none) and ``round`` (0 unless rounds)."""

    granted: np.ndarray
    height: np.ndarray
    ports: np.ndarray
    nports: np.ndarray
    failed: np.ndarray
    round: np.ndarray

    def grant(self, t: int, k: int) -> tuple:
        """``(granted, ports, height, failed level or None, round)`` of one request, the
        fields of the model's ``Grant`` after ``src`` and ``dst``."""
        failed = int(self.failed[t, k])
        return (
            bool(self.granted[t, k]),
            tuple(int(p) for p in self.ports[t, k, : self.nports[t, k]]),
            int(self.height[t, k]),
            None if failed < 0 else failed,
            int(self.round[t, k]),
        )


def schedule_permutations(
    levels: int,
    w: int,
    dsts,
    algorithm: str = "level-wise",
    *,
    failure_mode: str = "keep",
    seeds=None,
    rounds: bool = False,
) -> PermutationSchedules:
    """Schedule permutations on FT(levels, w) from an empty network, as
    ``fattree.sim.models.scheduler.schedule(tree, list(enumerate(dsts[t])), algorithm,
    failure_mode=..., seed=seeds[t], rounds=...)`` does for every row ``t`` of ``dsts``."""
    from ...spec.topology import FatTree

    tree = FatTree(levels, w)
    if algorithm not in SCHEDULE_ALGORITHMS:
        known = ", ".join(SCHEDULE_ALGORITHMS)
        raise ValueError(f"algorithm must be one of {known}, not {algorithm!r}")
    if failure_mode not in ("keep", "release"):
        raise ValueError(f"failure_mode must be one of keep, release, not {failure_mode!r}")
    dsts = np.asarray(dsts, dtype=np.int64)
    if dsts.ndim != 2 or dsts.shape[1] != tree.num_nodes:
        raise ValueError(f"dsts must have one row of {tree.num_nodes} destinations per trial")
    if dsts.size and not (np.sort(dsts, axis=1) == np.arange(tree.num_nodes)).all():
        raise ValueError("every row of dsts must be a permutation of the nodes")
    if tree.num_nodes >= 2**31 or w > 64:
        raise ValueError("at most 2^31 nodes and w <= 64")
    seeds = list(range(len(dsts))) if seeds is None else list(seeds)
    if len(seeds) != len(dsts):
        raise ValueError("one seed per row of dsts")
    states = np.zeros((len(dsts), _MT_N + 1), dtype=np.int64)
    if algorithm == "random":
        import random

        for t, seed in enumerate(seeds):
            states[t] = random.Random(seed).getstate()[1]
    wp = np.array([w**k for k in range(levels + 1)], dtype=np.int64)
    ok, *arrays = _schedule_trials(
        wp,
        levels,
        tree.num_switches,
        dsts,
        SCHEDULE_ALGORITHMS.index(algorithm),
        failure_mode == "release",
        rounds,
        states,
    )
    if not ok:  # cannot happen for permutations: Konig's theorem, see optimal_ports
        raise RuntimeError("edge colouring ran out of colours")
    return PermutationSchedules(*arrays)
