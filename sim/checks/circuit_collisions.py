"""Rounds that steer the paper's circuit tree into every arbitration situation of its routers
below the top, finer than the model's cover points.

The model's cover points lump the claims on a down port together ("a turn over a parent"
is one bin whichever parent and port), but the router decides each port from its own terms:
``claim[C, o] = c_req & free & ~t_req``, ``claim[D, o] = d_req & free & ~t_req & ~c_req``
(``hdl/circuit_router.py``). A term changed for one port and one pair of claimants shows only
when exactly those claim that port together. A *situation* here is, per router and cycle:

* ``down``: a down port, the set of its claimants (``T``, the turn from the other down port;
  ``C``; ``D``) and whether it is held by a path;
* ``up``: which of ``a`` and ``b`` go up, the LFSR bit, and which up port is held.

:func:`situations` reads them from the model before a step (from the registers of every
router's neighbours, the inputs the step takes), :func:`reachable` lists those a tree can
meet, and :func:`collision_rounds` draws rounds of a few messages aimed at one router, tries
each on a copy of the model and keeps the ones that meet a situation not met yet.
"""

from __future__ import annotations

from ..models.circuit import IDLE, CircuitTreeModel, Driver

__all__ = ["situations", "reachable", "collision_rounds"]

A, B, C, D = 0, 1, 2, 3
CLAIMANTS = ("T", "C", "D")


def _inputs(model: CircuitTreeModel, key) -> tuple[list[int], list[int]]:
    """Valid and data that router ``key`` takes in the model's next step, per port."""
    valid, data = [0] * 4, [0] * 4
    for p in range(4):
        peer = model.peer.get((key, p))
        if peer is None:
            continue
        if peer[0] == "ni":
            ni = model.nis[peer[1]]
            valid[p], data[p] = ni.up_valid, ni.up_data
        else:
            router = model.routers[peer[1]]
            valid[p], data[p] = router.out_valid[peer[2]], router.out_data[peer[2]]
    return valid, data


def situations(model: CircuitTreeModel) -> set[tuple]:
    """The situations the routers below the top meet in the model's next step."""
    met = set()
    for key, router in model.routers.items():
        if key[0] == model.h - 1:
            continue
        valid, data = _inputs(model, key)
        head = [bool(valid[i]) and router.state[i] == IDLE for i in range(4)]
        if not any(head):
            continue
        bit = [d & 1 for d in data]
        for o in (A, B):
            other = B if o == A else A
            who = [
                name
                for name, claims in zip(
                    CLAIMANTS,
                    (head[other] and bit[other], head[C] and bit[C] == o, head[D] and bit[D] == o),
                    strict=True,
                )
                if claims
            ]
            if who:
                met.add((key, "down", "AB"[o], "+".join(who), bool(router.busy[o])))
        up = "".join(n for n, i in (("a", A), ("b", B)) if head[i] and not bit[i])
        if up:
            busy = (bool(router.busy[C]), bool(router.busy[D]))
            met.add((key, "up", up, router.lfsr_bit, busy))
    return met


def reachable(model: CircuitTreeModel) -> set[tuple]:
    """Every situation a router below the top can meet: a held down port has an owner that is
    not among its claimants (an input holding a path brings no header), and two heads going
    up find both up ports free (only ``a`` and ``b`` take them, and each holds one at most)."""
    wanted = set()
    sets = ["T", "C", "D", "T+C", "T+D", "C+D", "T+C+D"]
    for key in model.routers:
        if key[0] == model.h - 1:
            continue
        for port in "AB":
            for who in sets:
                wanted.add((key, "down", port, who, False))
                if who != "T+C+D":
                    wanted.add((key, "down", port, who, True))
        for r in (0, 1):
            wanted.add((key, "up", "ab", r, (False, False)))
            for up in ("a", "b"):
                for busy in ((False, False), (True, False), (False, True)):
                    wanted.add((key, "up", up, r, busy))
    return wanted


def _tried(model: CircuitTreeModel, queues, delays) -> set[tuple]:
    """The situations a round meets, run on a clone of ``model`` as the check runs it
    (receivers ready, no pauses) to the last message delivered."""
    twin = model.clone()
    driver = Driver(queues)
    total = sum(len(q) for q in queues)
    done = taken = 0
    met = set()
    start = twin.cycle
    while (done < total or taken < total) and twin.cycle - start < 10_000:
        met |= situations(twin)
        valid, dest, data = driver.inputs()
        age = twin.cycle - start
        valid = [v if age >= d else 0 for v, d in zip(valid, delays, strict=True)]
        out = twin.step(valid, dest, data)
        driver.taken([r & v for r, v in zip(out.tx_ready, valid, strict=True)])
        done += sum(out.tx_done)
        taken += sum(out.rx_valid)
    return met


def _aimed(model: CircuitTreeModel, rng) -> tuple[list, list[int]]:
    """A round aimed at one router below the top: messages across it from the half of its
    subtree on the other side (turns), messages into that half from the sibling subtree (down
    from above through C or D), or heads from its own subtree going up; random delays, the
    ones from the sibling subtree often in the same cycle (so they reach C and D together)."""
    leaves, h = model.leaves, model.h
    level = rng.randrange(max(1, h - 1))
    size = 1 << (level + 1)
    base = rng.randrange(leaves // size) * size
    own = list(range(base, base + size))
    sibling = [n ^ size for n in own]  # the subtree next to it, one level up
    halves = (own[: size // 2], own[size // 2 :])
    target = rng.randrange(2)
    inside, across = halves[target], halves[1 - target]
    queues = [[] for _ in range(leaves)]
    delays = [0] * leaves
    together = rng.randrange(8)
    bits = model.width * model.length
    if rng.random() < 0.25:  # heads going up
        for n in own:
            if rng.random() < 0.8:
                queues[n] = [(rng.choice(sibling), rng.getrandbits(bits))]
                delays[n] = together if rng.random() < 0.6 else rng.randrange(8)
    for n in across + sibling:
        if queues[n] or rng.random() < 0.3:
            continue
        queues[n] = [(rng.choice(inside), rng.getrandbits(bits))]
        same = n in sibling and rng.random() < 0.5
        delays[n] = together if same else rng.randrange(12)
    return queues, delays


def collision_rounds(model: CircuitTreeModel, rng, tries: int, met: set | None = None):
    """Rounds ``(name, queues, options)`` for :meth:`CircuitTreeCheck.phase` that meet every
    reachable situation not in ``met`` (updated as rounds are yielded), one round at a time
    (the caller runs each before the next is drawn), until none is left or ``tries``
    candidates were tried."""
    met = set() if met is None else met
    wanted = reachable(model)
    for k in range(tries):
        if wanted <= met:
            return
        queues, delays = _aimed(model, rng)
        if not any(queues):
            continue
        new = (_tried(model, queues, delays) & wanted) - met
        if new:
            met |= new
            yield f"collide-{k}", queues, {"delays": delays, "stall": 0.0, "gaps": 0.0}
