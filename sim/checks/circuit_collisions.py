"""Rounds that steer a circuit tree into every arbitration situation of its routers below the
top, finer than the models' cover points.

The cover points lump the claims on a down port together ("a turn over a parent" is one bin
whichever parent and port), but a router decides each port from its own terms: in the
paper's tree ``claim[C, o] = c_req & free & ~t_req``, ``claim[D, o] = d_req & free & ~t_req &
~c_req`` (``hdl/circuit_router.py``); in the fast tree the children's requests first, then C
and D in the order the LFSR bit gives (``hdl/circuit_fast/router.py``). A term changed for one
port and one set of claimants shows only when exactly those claim that port together. A
*situation* here is, per router and cycle:

* ``down``: a down port, the set of its claimants and whether it is held by a path; in the
  paper's tree the claimants are ``T`` (the turn from the other down port), ``C`` and ``D``;
  in the fast tree ``A``, ``B`` (a child's head, at level 0 also one for its own node), ``C``
  and ``D``, with the LFSR bit when C and D claim together;
* ``up``: which of ``a`` and ``b`` go up, the LFSR bit, and which up port is held.

:func:`situations` reads them from the model before a step (the words every router takes in
that step), :func:`reachable` lists those a tree can meet, and :func:`collision_rounds` draws
rounds of a few messages aimed at one router, tries each on a copy of the model and keeps the
ones that meet a situation not met yet.
"""

from __future__ import annotations

from itertools import combinations

from ..models.circuit import IDLE, CircuitTreeModel, Driver
from ..models.circuit_fast import CircuitFastTreeModel

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


def situations(model) -> set[tuple]:
    """The situations the routers below the top meet in the model's next step."""
    if isinstance(model, CircuitFastTreeModel):
        return _fast_situations(model)
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


def _fast_situations(model: CircuitFastTreeModel) -> set[tuple]:
    """:func:`situations` of the fast tree: its routers read the links' words of this cycle
    (``(head, dest, data)`` or None), a body word of an input that holds an output keeps it
    busy."""
    met = set()
    for key, router in model.routers.items():
        level = key[0]
        if level == model.h - 1:
            continue
        words = [None if link is None else model.fwd[link] for link in router.inputs]
        head = [w is not None and bool(w[0]) for w in words]
        if not any(head):
            continue
        busy = [False] * 4
        for i, w in enumerate(words):
            if w is not None and not w[0] and not router.dead[i] and router.hold[i] is not None:
                busy[router.hold[i]] = True
        x = router.lfsr_bit(model.cycle)
        # Where each head goes: a down port, or "up" (a child's head for outside its subtree).
        wants = [None] * 4
        for i in range(4):
            if head[i]:
                dest = words[i][1]
                up = i < C and dest >> (level + 1) != router.sub
                wants[i] = "up" if up else (dest >> level) & 1
        for o in (A, B):
            who = "+".join(n for i, n in enumerate("ABCD") if wants[i] == o)
            if who:
                both = "C" in who and "D" in who
                met.add((key, "down", "AB"[o], who, bool(busy[o]), x if both else None))
        up = "".join(n for n, i in (("a", A), ("b", B)) if wants[i] == "up")
        if up:
            met.add((key, "up", up, x, (bool(busy[C]), bool(busy[D]))))
    return met


def reachable(model) -> set[tuple]:
    """Every situation a router below the top can meet (:func:`situations`); for the paper's
    tree, :func:`_reachable_paper`. In the fast tree a child's head turns into the other
    child's port only (at level 0 into either: a node may send to itself), a held port has an
    owner outside its claimants, and two heads going up find both up ports free."""
    if not isinstance(model, CircuitFastTreeModel):
        return _reachable_paper(model)
    wanted = set()
    for key in model.routers:
        level = key[0]
        if level == model.h - 1:
            continue
        for o, port in enumerate("AB"):
            children = "AB" if level == 0 else "BA"[o]
            inputs = [*children, "C", "D"]
            for k in range(1, len(inputs) + 1):
                for chosen in combinations(inputs, k):
                    who = "+".join(n for n in "ABCD" if n in chosen)
                    owners = "ABCD" if level == 0 else "BA"[o] + "CD"
                    helds = (False, True) if set(owners) - set(chosen) else (False,)
                    xs = (0, 1) if "C" in chosen and "D" in chosen else (None,)
                    wanted |= {(key, "down", port, who, h, x) for h in helds for x in xs}
        wanted |= _up_situations(key)
    return wanted


def _up_situations(key) -> set[tuple]:
    wanted = set()
    for r in (0, 1):
        wanted.add((key, "up", "ab", r, (False, False)))
        for up in ("a", "b"):
            for busy in ((False, False), (True, False), (False, True)):
                wanted.add((key, "up", up, r, busy))
    return wanted


def _reachable_paper(model: CircuitTreeModel) -> set[tuple]:
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
        wanted |= _up_situations(key)
    return wanted


def _tried(model, queues, delays) -> set[tuple]:
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


def _aimed(model, rng) -> tuple[list, list[int]]:
    """A round aimed at one router below the top: messages across it from the half of its
    subtree on the other side (turns), messages into that half from the sibling subtree (down
    from above through C or D), or heads from its own subtree going up; random delays, the
    ones from the sibling subtree often in the same cycle (so they reach C and D together).
    In the fast tree the half's own nodes also send into it (at level 0: to themselves)."""
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
    if not isinstance(model, CircuitFastTreeModel):
        for n in across + sibling:
            if queues[n] or rng.random() < 0.3:
                continue
            queues[n] = [(rng.choice(inside), rng.getrandbits(bits))]
            same = n in sibling and rng.random() < 0.5
            delays[n] = together if same else rng.randrange(12)
        return queues, delays
    # The fast tree's heads advance a hop a cycle and a message's body follows its head at
    # once: each group of senders starts within a few cycles, so that heads meet, or meet a
    # port held for one or two cycles.
    local = rng.randrange(2, 7)
    start = {"local": local, "sibling": local - rng.randrange(5)}
    for n in across + sibling + inside:
        if queues[n] or rng.random() < 0.3:
            continue
        queues[n] = [(rng.choice(inside), rng.getrandbits(bits))]
        group = "sibling" if n in sibling else "local"
        delays[n] = start[group] + rng.choice((0, 0, 0, 0, 0, 1, 2))
    return queues, delays


def collision_rounds(model, rng, tries: int, met: set | None = None):
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
