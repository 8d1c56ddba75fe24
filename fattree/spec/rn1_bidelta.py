"""The Transit bidelta network of RN1 routers as data (DeHon 1993, introduction and "Bidelta
leaf clusters"; Knight 1989; DeHon, Knight and Minsky 1990).

``N = 4^s`` endpoints, each with two network outputs and two network inputs (the paper:
"processing nodes generally each have two inputs and two outputs to the network"), and ``s``
stages of ``N / 4`` RN1 routers in the primary mode (radix 4, dilation 2: ``2N`` links
between stages). Stage ``j`` routes on base-4 digit ``s - 1 - j`` of the destination (most
significant first), so after stage ``j`` a transmission is among the routers of the group
named by the digits so far; the group's links are spread over the next stage's routers of
the sub-group, each router of a group sending its two links of a direction to the sub-group.
Which link lands on which router input inside a group is a **random permutation**
(seeded): Leighton's randomly wired redundant paths, as the paper asks for fault tolerance,
drawn among those that put a router's two links of a direction on different routers
(:func:`deal_apart`), so that any one dead router leaves every pair connected.
The last stage's direction ``d`` is one endpoint. For ``N >= 16`` the last stage is in the
dual-crossbar mode, so each endpoint's two inputs come from different routers (as DeHon's
2-wide unit trees do), and endpoint outputs 0 are dealt at random over the first half of
stage 0, outputs 1 over the second half, so its two ways in never share a router either.

One head byte routes four stages (:func:`fattree.spec.rn1.pass_head`), so ``N <= 256``.
Link ends are ``("ep_out", e, k)`` (endpoint ``e``'s output ``k``, into the network),
``("ep_in", e, k)``, and ``("in"|"out", stage, router, port)``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..params import Contract, Param
from .rn1 import CHANNELS, DIRECTIONS, head_for

__all__ = [
    "RN1_BIDELTA",
    "ENDPOINT_LINKS",
    "SIZES",
    "Bidelta",
    "bidelta",
    "check_endpoints",
    "deal_apart",
]

#: Network outputs and inputs of one endpoint.
ENDPOINT_LINKS = 2
#: Endpoint counts the definitions accept: 4 .. 256, powers of four.
SIZES = (4, 16, 64, 256)


#: Shuffles :func:`deal_apart` tries before it calls a dealing impossible (the acceptance
#: rate of the dealings here is 2-25 %: a few tens of tries).
DEAL_TRIES = 10_000


def deal_apart(groups, routers, rng: random.Random | None = None) -> list[tuple[tuple, tuple]]:
    """``(source, sink)`` links dealing the link sources of ``groups`` onto the input slots of
    ``routers`` (one list of slots per router or crossbar, equal lengths), so that the links
    of one group (the two outputs of a dilated direction, or a node's two ways) land on
    **different routers**: one dead router or link then never takes a whole group.

    Without ``rng``: in order, slot ``m`` of the round-robin over the routers gets link
    ``m`` of the groups one after the other (a group's links on consecutive routers). With
    ``rng``: a uniformly random dealing among those that keep every group apart (shuffles
    until one does: Leighton's random wiring under the constraint)."""
    sources = [s for g in groups for s in g]
    size = len(routers[0])
    if any(len(r) != size for r in routers) or len(sources) != size * len(routers):
        raise AssertionError(f"{len(sources)} links for {sum(map(len, routers))} inputs")
    if any(len(g) > len(routers) for g in groups):
        raise AssertionError(f"a group of more than {len(routers)} links cannot be kept apart")
    slots = [
        (m % len(routers), routers[m % len(routers)][m // len(routers)])
        for m in range(len(sources))
    ]
    if rng is None:
        return [(s, slot) for s, (_, slot) in zip(sources, slots, strict=True)]
    group_of = [k for k, g in enumerate(groups) for _ in g]
    for _ in range(DEAL_TRIES):
        rng.shuffle(slots)
        seen = set()
        for k, (r, _) in zip(group_of, slots, strict=True):
            if (k, r) in seen:
                break
            seen.add((k, r))
        else:
            return [(s, slot) for s, (_, slot) in zip(sources, slots, strict=True)]
    raise AssertionError(f"no dealing of {len(groups)} groups apart in {DEAL_TRIES} tries")


def check_endpoints(endpoints) -> int:
    if endpoints not in SIZES:
        raise ValueError(f"endpoints must be one of 4, 16, 64, 256, not {endpoints!r}")
    return endpoints


@dataclass
class Bidelta:
    endpoints: int
    seed: int
    stages: int
    #: (source, sink) link ends.
    links: list[tuple[tuple, tuple]] = field(default_factory=list)

    @property
    def dual_last(self) -> bool:
        """The last stage is in the alternate (dual crossbar) mode (``N >= 16``): router
        pair ``2m, 2m + 1`` serves groups ``2m`` (crossbar 0 of both) and ``2m + 1``
        (crossbar 1), so an endpoint's two inputs come from different routers."""
        return self.endpoints >= 16

    def mode(self, stage: int) -> str:
        return "alternate" if self.dual_last and stage == self.stages - 1 else "primary"

    @property
    def routers_per_stage(self) -> int:
        return self.endpoints // DIRECTIONS

    @property
    def routers(self) -> int:
        return self.stages * self.routers_per_stage

    def digits(self, dest: int) -> list[int]:
        """Direction at each stage for destination ``dest``, stage 0 first."""
        return [(dest >> 2 * (self.stages - 1 - j)) & 3 for j in range(self.stages)]

    def head(self, dest: int, fill: int = 0) -> int:
        """The head byte that routes a transmission to endpoint ``dest``."""
        return head_for(self.digits(dest), fill)

    def destination(self, head: int) -> int:
        """Inverse of :meth:`head`: the endpoint a head byte (as sent) routes to."""
        dest = 0
        for j in range(self.stages):
            dest = dest << 2 | (head >> 2 * j) & 3
        return dest

    def sink_of(self) -> dict[tuple, tuple]:
        return dict(self.links)

    def connected(self, dead: set[tuple[int, int]]) -> list[list[bool]]:
        """``[src][dst]``: some path from endpoint ``src`` (either of its outputs) to ``dst``
        avoids the ``dead`` routers (``(stage, router)``), following the routers' rule (a
        head takes either output of its direction)."""
        sink_of = self.sink_of()
        result = []
        reach_by_dst = []
        for dst in range(self.endpoints):
            digits = self.digits(dst)
            memo: dict[tuple, bool] = {}

            def reaches(end, digits=digits, dst=dst, memo=memo):
                if end in memo:
                    return memo[end]
                sink = sink_of[end]
                if sink[0] == "ep_in":
                    ok = sink[1] == dst
                else:
                    _, j, r, p = sink
                    d = digits[j]
                    if (j, r) in dead:
                        ok = False
                    elif self.mode(j) == "alternate":
                        ok = reaches(("out", j, r, 4 * (p // 4) + d))
                    else:
                        ok = reaches(("out", j, r, 2 * d)) or reaches(("out", j, r, 2 * d + 1))
                memo[end] = ok
                return ok

            reach_by_dst.append(
                [
                    any(reaches(("ep_out", s, k)) for k in range(ENDPOINT_LINKS))
                    for s in range(self.endpoints)
                ]
            )
        for src in range(self.endpoints):
            result.append([reach_by_dst[dst][src] for dst in range(self.endpoints)])
        return result


def bidelta(
    endpoints: int, seed: int = 0, random_wiring: bool = True, *, apart: bool = False
) -> Bidelta:
    """The bidelta network of ``endpoints`` (4, 16, 64 or 256), wired with ``seed``;
    ``random_wiring=False`` deals every group's links in order instead (the regular wiring
    the fault experiments compare against: a router's two links of a direction enter one
    router of the next stage). ``apart=True`` with it: the regular wiring that deals them
    round-robin (:func:`deal_apart` in order), so they enter two different routers, as the
    random wiring's always do (``apart`` changes nothing there)."""
    if not isinstance(apart, bool):
        raise TypeError(f"apart must be True or False, not {apart!r}")
    n = RN1_BIDELTA.check("endpoints", endpoints)
    RN1_BIDELTA.check("seed", seed)
    rng = random.Random(seed)
    stages = (n.bit_length() - 1) // 2
    net = Bidelta(n, seed, stages)
    per_stage = n // DIRECTIONS
    last = stages - 1

    def group_inputs(stage, g):
        """Input ends of group ``g`` of ``stage`` (the routers or crossbars it owns)."""
        if stage == last and net.dual_last:
            pair, x = g - g % 2, g % 2
            return [
                ("in", stage, r, DIRECTIONS * x + p) for r in (pair, pair + 1) for p in range(4)
            ]
        size = per_stage // DIRECTIONS**stage
        return [
            ("in", stage, r, p) for r in range(g * size, (g + 1) * size) for p in range(CHANNELS)
        ]

    def group_outputs(stage, g, d):
        """Output ends of group ``g`` of ``stage`` for direction ``d``."""
        if stage == last and net.dual_last:
            pair, x = g - g % 2, g % 2
            return [("out", stage, r, DIRECTIONS * x + d) for r in (pair, pair + 1)]
        size = per_stage // DIRECTIONS**stage
        return [
            ("out", stage, r, 2 * d + k) for r in range(g * size, (g + 1) * size) for k in (0, 1)
        ]

    def deal(sources, sinks):
        if len(sinks) != len(sources):
            raise AssertionError(f"{len(sources)} links for {len(sinks)} inputs")
        order = list(sources)
        if random_wiring:
            rng.shuffle(order)
        net.links.extend(zip(order, sinks, strict=True))

    ins = group_inputs(0, 0)
    if n >= 16:
        # Outputs 0 of the endpoints into the first half of stage 0, outputs 1 into the
        # second: an endpoint's two ways into the network never share a router.
        half = len(ins) // 2
        for k in range(ENDPOINT_LINKS):
            deal([("ep_out", e, k) for e in range(n)], ins[k * half : (k + 1) * half])
    else:
        deal([("ep_out", e, k) for e in range(n) for k in range(ENDPOINT_LINKS)], ins)
    for j in range(stages):
        for g in range(DIRECTIONS**j):
            for d in range(DIRECTIONS):
                outs = group_outputs(j, g, d)
                if j == last:
                    e = g * DIRECTIONS + d
                    net.links.extend((o, ("ep_in", e, k)) for k, o in enumerate(outs))
                elif random_wiring or apart:
                    # Both links of a router's direction onto different routers (crossbars
                    # of different chips at the last stage), so no one router or link takes
                    # a direction's two ways: every single fault leaves every pair connected.
                    ins = group_inputs(j + 1, g * DIRECTIONS + d)
                    per = DIRECTIONS if j + 1 == last and net.dual_last else CHANNELS
                    routers = [ins[c : c + per] for c in range(0, len(ins), per)]
                    pairs = [outs[k : k + 2] for k in range(0, len(outs), 2)]
                    net.links.extend(deal_apart(pairs, routers, rng if random_wiring else None))
                else:
                    deal(outs, group_inputs(j + 1, g * DIRECTIONS + d))
    return net


#: The bidelta network's parameters: the design table's, and what ``RN1Bidelta`` and
#: ``RN1BideltaModel`` check.
RN1_BIDELTA = Contract(
    "rn1-bidelta",
    (
        Param(
            "endpoints",
            16,
            "endpoints: 4, 16, 64 or 256",
            lo=min(SIZES),
            hi=max(SIZES),
            value=check_endpoints,
        ),
        Param("seed", 1, "seed of the wiring and of the routers' LFSRs", lo=0),
    ),
)
