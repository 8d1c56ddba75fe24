"""Off-line scheduling on Leiserson fat-trees (Fat-Trees, 1985, section III) and the headers
that carry a schedule through the hardware (section IV).

* :func:`load_factor` is lambda(M) = max over channels of load(M, c) / cap(c).
* :func:`schedule_theorem1` partitions M into one-cycle message sets by Theorem 1: the
  messages through each node left-to-right (and right-to-left) are split in halves by
  *matching and tracing* until every part is one-cycle; parts of different nodes of one level
  and of the two directions share no channel, so they are delivered together, level by level.
  d <= sum over levels of 2^ceil(lg lambda_level) <= lg n * max(1, 2 lambda(M)).
* :func:`schedule_corollary2`: when every capacity exceeds lg n, the split is done against
  cap' = cap - lg n to a uniform depth j = ceil(lg lambda'(M)) and part t of every node is
  delivered in cycle t: d = 2^j <= max(1, 2 lambda'(M)).
* :func:`plan_cycle` sets every concentrator switch of a :class:`TreeLayout` for one delivery
  cycle (a maximum matching per stage) and writes each message's header.

Messages are ``(src, dst)`` pairs of leaves (a list; repeats allowed, ``src != dst``).
:func:`plan_cycle` and :func:`schedule_first_fit` also take :data:`OUTSIDE` as one end: the
external interface on the root's channel (section II: the root's channel connects the tree
to the outside world), entered and left through the root's U port.
Channels are numbered by the heap index u of the node beneath them: ``u`` is the up channel
from u to its parent, ``2n + u`` the down channel from the parent to u.

Header format (one wire, bit-serial; ``docs/leiserson.md`` has the timing)::

    1 (M bit) | for each node on the path: address bit, then for each stage of the
              |   cascade in front of the chosen output port its edge index (MSB first,
              |   ``decision_bits`` bits) | data bits

The address bit is 1 = up and 0 = across on a node's L/R input, 1 = right and 0 = left on its
U input (:mod:`fattree.spec.capacities`). Every node strips what it used, so a leaf receives
``1`` followed by the data.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...params import check_power_of_two
from ...spec.bits import lg
from ...spec.capacities import TreeLayout
from ...spec.traffic import bit_reversal
from .leiserson_tree import OUTSIDE  # the root's external channel as a message end

__all__ = [
    "OUTSIDE",
    "random_messages",
    "Capacities",
    "ideal_capacities",
    "layout_capacities",
    "check_messages",
    "lca_level",
    "channels_of",
    "loads",
    "load_factor",
    "is_one_cycle",
    "split_matching_tracing",
    "schedule_theorem1",
    "schedule_corollary2",
    "theorem1_bound",
    "compact",
    "MessagePlan",
    "CyclePlan",
    "plan_cycle",
    "frame_bits",
    "schedule_first_fit",
    "external_messages",
    "dropping_header",
    "filling_sets",
]


@dataclass(frozen=True)
class Capacities:
    """Per-level capacities of the up and down channels, ``up[k]``, ``down[k]`` for k >= 1."""

    leaves: int
    up: tuple[int, ...]
    down: tuple[int, ...]

    def array(self) -> np.ndarray:
        """Capacity of every channel id (0 for the unused ids 0, 1, 2n, 2n+1)."""
        n = self.leaves
        caps = np.zeros(4 * n, dtype=np.int64)
        for u in range(2, 2 * n):
            k = u.bit_length() - 1
            caps[u] = self.up[k]
            caps[2 * n + u] = self.down[k]
        return caps

    def minus(self, amount: int) -> Capacities:
        return Capacities(
            self.leaves,
            tuple(c - amount for c in self.up),
            tuple(c - amount for c in self.down),
        )


def ideal_capacities(leaves: int, capacities) -> Capacities:
    """Both directions of the channel at level k carry ``capacities[k]`` (ideal switches)."""
    caps = tuple(capacities)
    return Capacities(leaves, caps, caps)


def layout_capacities(layout: TreeLayout) -> Capacities:
    """The alpha-derated capacities of the hardware: what each cascade is verified to route."""
    levels = layout.levels
    up = (0,) + tuple(layout.up_capacity(k) for k in range(1, levels + 1))
    down = (0,) + tuple(layout.down_capacity(k) for k in range(1, levels + 1))
    return Capacities(layout.leaves, up, down)


def check_messages(leaves: int, messages, *, outside: bool = False) -> np.ndarray:
    """``messages`` as an ``(m, 2)`` array; ``outside`` also allows :data:`OUTSIDE` as an end."""
    check_power_of_two("leaves", leaves, 2)
    array = np.array(list(messages), dtype=np.int64).reshape(-1, 2)
    low = OUTSIDE if outside else 0
    if array.size and (array.min() < low or array.max() >= leaves):
        also = f" or OUTSIDE ({OUTSIDE})" if outside else ""
        raise ValueError(f"message endpoints must be leaves 0..{leaves - 1}{also}")
    same = np.nonzero(array[:, 0] == array[:, 1])[0]
    if same.size:
        i = int(same[0])
        raise ValueError(
            f"message {i} goes from {_endpoint(array[i, 0])} to itself; it never enters the network"
        )
    return array


def _endpoint(end) -> str:
    return "outside" if end == OUTSIDE else f"leaf {end}"


def lca_level(leaves: int, src: int, dst: int) -> int:
    """Level of the least common ancestor (root = 0)."""
    return (leaves - 1).bit_length() - ((src ^ dst).bit_length())


def channels_of(leaves: int, array: np.ndarray) -> np.ndarray:
    """``(m, 2 lg n)`` channel ids of every message, -1 where its path is shorter."""
    n, levels = leaves, leaves.bit_length() - 1
    src, dst = array[:, 0] + n, array[:, 1] + n
    out = np.full((len(array), 2 * levels), -1, dtype=np.int64)
    for k in range(levels):
        a, b = src >> k, dst >> k
        used = a != b
        out[:, 2 * k] = np.where(used, a, -1)
        out[:, 2 * k + 1] = np.where(used, 2 * n + b, -1)
    return out


def loads(leaves: int, messages) -> np.ndarray:
    """load(M, c) for every channel id."""
    chans = channels_of(leaves, check_messages(leaves, messages)).ravel()
    return np.bincount(chans[chans >= 0], minlength=4 * leaves)


def load_factor(leaves: int, messages, caps: Capacities) -> Fraction:
    """lambda(M) = max_c load(M, c) / cap(c), exactly."""
    load = loads(leaves, messages)
    cap = caps.array()
    used = np.nonzero(load)[0]
    if not used.size:
        return Fraction(0)
    if (cap[used] <= 0).any():
        raise ValueError("a channel with messages has no capacity")
    return max(Fraction(int(load[c]), int(cap[c])) for c in used)


def is_one_cycle(leaves: int, messages, caps: Capacities) -> bool:
    return load_factor(leaves, messages, caps) <= 1


class _Scheduler:
    def __init__(self, leaves: int, messages, caps: Capacities):
        self.n = leaves
        self.array = check_messages(leaves, messages)
        self.chans = channels_of(leaves, self.array)
        self.cap = caps.array()
        src, dst = self.array[:, 0], self.array[:, 1]
        levels = leaves.bit_length() - 1
        self.levels = levels
        diff_bits = np.array([int(x).bit_length() for x in (src ^ dst)], dtype=np.int64)
        self.lca_height = diff_bits  # LCA node = (n + src) >> height
        self.lca = ((leaves + src) >> diff_bits) if len(src) else src

    def one_cycle(self, part) -> bool:
        if len(part) == 0:
            return True
        ch = self.chans[np.asarray(part)].ravel()
        ids, counts = np.unique(ch[ch >= 0], return_counts=True)
        return bool((counts <= self.cap[ids]).all())

    def groups(self) -> dict[int, tuple[list[int], list[int]]]:
        """LCA node -> (left-to-right messages, right-to-left messages)."""
        out: dict[int, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for i in range(len(self.array)):
            v = int(self.lca[i])
            right_to_left = (int(self.array[i, 0]) + self.n) >> (int(self.lca_height[i]) - 1) & 1
            out[v][right_to_left].append(i)
        return out

    def split(self, part: list[int]) -> tuple[list[int], list[int]]:
        return split_matching_tracing(self.n, self.array, part)


def _pair_ends(leaves: int, ends: list[tuple[int, int]]) -> dict[int, int]:
    """Match string ends within each leaf, then within ever larger subtrees (at most one end
    stays unmatched per subtree)."""
    mate: dict[int, int] = {}
    by_leaf: dict[int, list[int]] = defaultdict(list)
    for leaf, m in ends:
        by_leaf[leaf].append(m)
    carry: dict[int, int] = {}
    for leaf, ms in by_leaf.items():
        for a, b in zip(ms[0::2], ms[1::2], strict=False):
            mate[a], mate[b] = b, a
        if len(ms) % 2:
            carry[leaves + leaf] = ms[-1]
    while len(carry) > 1:
        up: dict[int, int] = {}
        for u in sorted(carry):
            m, p = carry[u], u >> 1
            if p in up:
                other = up.pop(p)
                mate[m], mate[other] = other, m
            else:
                up[p] = m
        carry = up
    return mate


def split_matching_tracing(leaves: int, array: np.ndarray, part: list[int]):
    """Theorem 1's split of messages through one node in one direction into halves A, B.

    For every channel c, load(A, c) and load(B, c) are at most ceil(load(part, c) / 2).
    """
    if len(part) < 2:
        return list(part), []
    mate_src = _pair_ends(leaves, [(int(array[m, 0]), m) for m in part])
    mate_dst = _pair_ends(leaves, [(int(array[m, 1]), m) for m in part])
    side: dict[int, int] = {}
    order = [m for m in part if m not in mate_src] + list(part)
    for start in order:
        if start in side:
            continue
        m = start
        while True:
            side[m] = 0  # traversed source -> destination
            m2 = mate_dst.get(m)
            if m2 is None or m2 in side:
                break
            side[m2] = 1  # traversed destination -> source
            m3 = mate_src.get(m2)
            if m3 is None or m3 in side:
                break
            m = m3
    return [m for m in part if side[m] == 0], [m for m in part if side[m] == 1]


def schedule_theorem1(leaves: int, messages, caps: Capacities) -> list[list[int]]:
    """Theorem 1: a list of delivery cycles, each a list of message indices (one-cycle)."""
    s = _Scheduler(leaves, messages, caps)
    by_level: dict[int, list[list[int]]] = defaultdict(list)
    for v, directions in sorted(s.groups().items()):
        level = v.bit_length() - 1
        node_parts = []
        for part in directions:
            done, todo = [], [part] if part else []
            while todo:
                p = todo.pop(0)
                if s.one_cycle(p):
                    done.append(p)
                else:
                    a, b = s.split(p)
                    todo += [a, b]
            node_parts.append(done)
        cycles = by_level[level]
        lr, rl = node_parts
        for t in range(max(len(lr), len(rl))):
            if t == len(cycles):
                cycles.append([])
            cycles[t] += (lr[t] if t < len(lr) else []) + (rl[t] if t < len(rl) else [])
    return [sorted(c) for level in sorted(by_level) for c in by_level[level]]


def theorem1_bound(leaves: int, messages, caps: Capacities) -> int:
    """The bound the proof gives: sum over LCA levels of 2^ceil(lg lambda_level) (>= 1 each
    level with messages); at most lg n * max(1, 2 lambda(M))."""
    array = check_messages(leaves, messages)
    total = 0
    levels = defaultdict(list)
    for i, (a, b) in enumerate(array):
        levels[lca_level(leaves, int(a), int(b))].append(i)
    for idx in levels.values():
        lam = load_factor(leaves, array[idx], caps)
        total += _pow2_at_least(lam)
    return total


def _pow2_at_least(lam: Fraction) -> int:
    j = 0
    while (1 << j) < lam:
        j += 1
    return 1 << j


def schedule_corollary2(leaves: int, messages, caps: Capacities) -> list[list[int]]:
    """Corollary 2: every capacity must exceed lg n; d = 2^ceil(lg lambda'(M))."""
    gap = lg(leaves)
    levels = leaves.bit_length() - 1
    low = min(min(caps.up[1 : levels + 1]), min(caps.down[1 : levels + 1]))
    if low <= gap:
        raise ValueError(
            f"Corollary 2 needs every capacity above lg n = {gap}; the smallest is {low}"
        )
    fictitious = caps.minus(gap)
    s = _Scheduler(leaves, messages, fictitious)
    if not len(s.array):
        return []
    parts_count = _pow2_at_least(load_factor(leaves, s.array, fictitious))
    cycles: list[list[int]] = [[] for _ in range(parts_count)]
    for _v, directions in sorted(s.groups().items()):
        for part in directions:
            parts = [part]
            while len(parts) < parts_count:
                parts = [half for p in parts for half in s.split(p)]
            for t, p in enumerate(parts):
                cycles[t] += p
    return [sorted(c) for c in cycles if c]


def compact(leaves: int, messages, cycles: list[list[int]], caps: Capacities):
    """Merge delivery cycles first-fit while the union stays one-cycle (not in the paper).

    Theorem 1 gives every level of LCAs its own cycles, so a one-cycle set still takes one
    cycle per level; packing them afterwards never loses a message and never breaks a
    capacity.
    """
    array = check_messages(leaves, messages)
    chans = channels_of(leaves, array)
    cap = caps.array()
    bins: list[tuple[list[int], np.ndarray]] = []
    for cycle in cycles:
        ch = chans[np.asarray(cycle, dtype=np.int64)].ravel() if cycle else chans[:0].ravel()
        load = np.bincount(ch[ch >= 0], minlength=4 * leaves)
        for members, total in bins:
            if ((total + load) <= cap).all():
                members += cycle
                total += load
                break
        else:
            bins.append((list(cycle), load))
    return [sorted(members) for members, _ in bins]


# --- one delivery cycle on the hardware: switch settings and headers ---------------------


@dataclass
class MessagePlan:
    """One message of a delivery cycle: the wire it takes on every channel and its header."""

    index: int
    src: int
    dst: int
    #: [(node, in_port, in_wire, out_port, out_wire)] along the path.
    hops: list[tuple[int, str, int, str, int]]
    header: list[int]


@dataclass
class CyclePlan:
    #: (node, out_port) -> the cascade's stage choices {stage input vertex: edge index}.
    settings: dict[tuple[int, str], list[dict[int, int]]]
    messages: list[MessagePlan]


def _bits(value: int, width: int) -> list[int]:
    return [(value >> (width - 1 - b)) & 1 for b in range(width)]


def plan_cycle(
    layout: TreeLayout,
    messages,
    cycle: list[int],
    wires: dict[int, int] | None = None,
    rng=None,
) -> CyclePlan:
    """Set every switch for the messages ``cycle`` (indices into ``messages``) and build
    their headers. Raises ``RuntimeError`` if a cascade cannot route its active inputs.
    An :data:`OUTSIDE` source enters on a wire of the root's U input, an :data:`OUTSIDE`
    destination leaves through the root's U output. ``wires`` gives a message's wire at its
    source; the others take their source's free wires from 0 up, in ``cycle`` order. With
    ``rng`` every stage takes a random maximum matching instead of the deterministic one (in
    a cascade of several stages that may route fewer: then it raises, as for an overload)."""
    array = check_messages(layout.leaves, messages, outside=True)
    router = _CycleRouter(layout, array, _entry_positions(layout, array, cycle, wires or {}), rng)
    router.route_all()
    plans = [
        MessagePlan(
            m,
            int(array[m, 0]),
            int(array[m, 1]),
            [h[:5] for h in router.hops[m]],
            _header(layout, router.settings, router.hops[m]),
        )
        for m in cycle
    ]
    return CyclePlan(router.settings, plans)


def _entry_positions(
    layout: TreeLayout, array: np.ndarray, cycle: list[int], wires: dict[int, int]
) -> dict[int, tuple[int, str, int]]:
    """Where each message of ``cycle`` enters the tree: ``(node, in_port, wire)`` of the
    first switch, its wire given by ``wires`` or the lowest free one of its source."""
    n, levels = layout.leaves, layout.levels
    position: dict[int, tuple[int, str, int]] = {}
    taken = {(int(array[m, 0]), wires[m]) for m in cycle if m in wires}
    if len(taken) < sum(1 for m in cycle if m in wires):
        raise RuntimeError("two messages given the same source wire")
    for m in cycle:
        src = int(array[m, 0])
        width = layout.cap(0 if src == OUTSIDE else levels)
        wire = wires.get(m)
        if wire is None:
            wire = next((w for w in range(width) if (src, w) not in taken), width)
            taken.add((src, wire))
        if wire >= width:
            raise RuntimeError(f"{_endpoint(src)} sends more than {width} messages")
        if src == OUTSIDE:
            position[m] = (1, "U", wire)
            continue
        leaf = n + src
        position[m] = (leaf >> 1, "LR"[leaf & 1], wire)
    return position


class _CycleRouter:
    """The switches of one delivery cycle set one by one: :attr:`position` follows each
    message from switch to switch, :attr:`hops` records its way, :attr:`settings` each
    switch's cascade choices."""

    def __init__(self, layout: TreeLayout, array: np.ndarray, position: dict, rng):
        self.layout, self.array, self.rng = layout, array, rng
        #: Where each message is: (node, in_port, wire) at the node it enters next.
        self.position = position
        #: Per message: (node, in_port, in_wire, out_port, out_wire, cascade path) per hop.
        self.hops: dict[int, list] = {m: [] for m in position}
        self.settings: dict[tuple[int, str], list[dict[int, int]]] = {}

    def out_port(self, m: int, node: int) -> str:
        """The port message ``m`` leaves ``node`` by: U unless its destination is below."""
        if int(self.array[m, 1]) == OUTSIDE:
            return "U"
        levels = self.layout.levels
        dst_leaf = self.layout.leaves + int(self.array[m, 1])
        level = node.bit_length() - 1
        below = dst_leaf >> (levels - level - 1)  # dst's ancestor one level below node
        if below >> 1 != node:
            return "U"
        return "LR"[below & 1]

    def route_all(self) -> None:
        """Up switches bottom-up, then down switches top-down: each switch's inputs are
        then known when it is set."""
        levels, position = self.layout.levels, self.position
        for level in range(levels - 1, -1, -1):
            for node in range(1 << level, 2 << level):
                here = [m for m, p in position.items() if p[0] == node and p[1] in "LR"]
                going_up = [m for m in here if self.out_port(m, node) == "U"]
                if going_up:
                    self.run_switch(node, "U", going_up)
        for level in range(levels):
            for node in range(1 << level, 2 << level):
                for port in "LR":
                    here = [
                        m
                        for m, p in position.items()
                        if p[0] == node and self.out_port(m, node) == port
                    ]
                    if here:
                        self.run_switch(node, port, here)

    def run_switch(self, node: int, port: str, entering: list[int]) -> None:
        """Route the messages ``entering`` through the cascade of ``node``'s output
        ``port`` and move them to the next node."""
        layout, position = self.layout, self.position
        level = node.bit_length() - 1
        cascade = layout.cascade(level, port)
        inputs = {}
        for m in entering:
            _, in_port, wire = position[m]
            inputs[layout.group_offset(level, port, in_port) + wire] = m
        routing = cascade.route(inputs, self.rng)
        if routing.lost:
            raise RuntimeError(
                f"node {node} port {port}: cascade ({cascade.r} -> {cascade.s}, guaranteed "
                f"{cascade.guaranteed}) lost inputs {routing.lost} of {sorted(inputs)}"
            )
        self.settings[(node, port)] = routing.choices
        for i, m in inputs.items():
            _, in_port, wire = position[m]
            out_wire = routing.outputs[i]
            self.hops[m].append((node, in_port, wire, port, out_wire, routing.paths[i]))
            if port == "U":
                position[m] = (node >> 1, "LR"[node & 1], out_wire)
            else:
                child = 2 * node + (port == "R")
                position[m] = (child, "U", out_wire)


def _header(layout: TreeLayout, settings: dict, hops: list) -> list[int]:
    """A message's header from its hops: per switch its address bit (down: R; up: U),
    then the decision bits of every stage of the cascade on its path."""
    header: list[int] = []
    for node, in_port, _wire, port, _out, path in hops:
        if in_port == "U":
            header.append(int(port == "R"))
        else:
            header.append(int(port == "U"))
        cascade = layout.cascade(node.bit_length() - 1, port)
        for t, stage in enumerate(cascade.stages):
            choice = settings[(node, port)][t][path[t]]
            header += _bits(choice, stage.graph.decision_bits)
    return header


def frame_bits(plan: MessagePlan, data: int, data_bits: int) -> list[int]:
    """What the source leaf puts on its wire: M bit, header, data (MSB first)."""
    return [1] + plan.header + _bits(data, data_bits)


def dropping_header(layout: TreeLayout, plan: MessagePlan) -> list[int] | None:
    """``plan``'s header with the decision bits of one stage on its path whose input has
    fewer edges than its bits can name set to an edge index the graph lacks: the stage drops
    the message there (section IV's switches: an unknown setting connects nothing). Of the
    stages on the path that can drop it, the message's index (modulo their number) picks
    which, so that a set's drops fall on every such stage. None if no stage on the path can
    be given such an index."""
    header = list(plan.header)
    places = []  # (position in the header, bits, the input's degree) of each such stage
    position = 0
    for node, in_port, in_wire, port, _out in plan.hops:
        position += 1  # the address bit
        level = node.bit_length() - 1
        cascade = layout.cascade(level, port)
        vertex = layout.group_offset(level, port, in_port) + in_wire
        for stage in cascade.stages:
            bits, row = stage.graph.decision_bits, stage.graph.adjacency[vertex]
            if len(row) < 1 << bits:
                places.append((position, bits, len(row)))
            vertex = row[int("".join(map(str, header[position : position + bits])), 2)]
            position += bits
    if not places:
        return None
    position, bits, degree = places[plan.index % len(places)]
    header[position : position + bits] = _bits(degree, bits)
    return header


def schedule_first_fit(
    layout: TreeLayout, messages, rng=None
) -> tuple[list[list[int]], dict[int, int]]:
    """Delivery cycles for any messages, :data:`OUTSIDE` ends included: each message goes
    into the first cycle that :func:`plan_cycle` can still route with it, else a new one.
    Returns the cycles and each message's wire at its source: the lowest free one, or with
    ``rng`` a random free one (so that every wire of a wide channel such as the root's is
    used, not only the first few).

    Not in the paper: Theorem 1 counts only messages between processors. This packing uses
    the hardware's own switch capacities (a cascade may route more than it guarantees), so
    it serves traffic through the root's external channel, whose load Theorem 1 leaves out.
    """
    array = check_messages(layout.leaves, messages, outside=True)
    levels = layout.levels
    cycles: list[list[int]] = []
    wires: dict[int, int] = {}
    for m in range(len(messages)):
        src = int(array[m, 0])
        width = layout.cap(0 if src == OUTSIDE else levels)
        for cycle in cycles + [[]]:
            free = [
                w
                for w in range(width)
                if all(int(array[o, 0]) != src or wires[o] != w for o in cycle)
            ]
            if not free:
                continue
            wires[m] = rng.choice(free) if rng is not None else free[0]
            try:
                plan_cycle(layout, messages, cycle + [m], wires)
            except RuntimeError:
                if cycle:
                    continue
                raise  # does not route even alone
            if cycle:
                cycle.append(m)
            else:
                cycles.append([m])
            break
    return cycles, wires


def external_messages(n: int, rng, per_leaf: int = 1) -> list[tuple[int, int]]:
    """Traffic through the root's external channel: ``per_leaf * n`` messages from
    :data:`OUTSIDE` to random leaves and as many from random leaves to :data:`OUTSIDE`,
    mixed with as many random leaf-to-leaf messages, in random order."""
    count = per_leaf * n
    out = [(OUTSIDE, rng.randrange(n)) for _ in range(count)]
    out += [(rng.randrange(n), OUTSIDE) for _ in range(count)]
    out += random_messages(n, count, rng)
    rng.shuffle(out)
    return out


def filling_sets(n: int) -> list[tuple[str, list[tuple[int, int]]]]:
    """Two message sets that fill every channel of a tree of ``n`` leaves to its capacity in
    their first delivery cycle (packed first-fit): every leaf to the leaf across the root
    (every up and down channel below the root carries one message per leaf under it), and
    every leaf to :data:`OUTSIDE` with a message from :data:`OUTSIDE` to every leaf (the
    root's external channel too). Where a channel's capacity is below its leaves, first-fit
    fills it and moves the rest to later cycles."""
    return [
        ("across", [(i, i ^ (n >> 1)) for i in range(n)]),
        ("external-all", [(i, OUTSIDE) for i in range(n)] + [(OUTSIDE, i) for i in range(n)]),
    ]


def random_messages(n: int, count: int, rng) -> list[tuple[int, int]]:
    """``count`` messages between random leaves of ``n``, none to itself."""
    out = []
    while len(out) < count:
        a, b = rng.randrange(n), rng.randrange(n)
        if a != b:
            out.append((a, b))
    return out


def message_set(pattern: str, n: int, rng, per_leaf: int = 3) -> list[tuple[int, int]]:
    """Test traffic on ``n`` leaves: ``random`` (``per_leaf * n`` messages, no self-messages),
    ``permutation`` or ``bit-reversal`` (fixed points left out: they use no channel)."""
    if pattern == "random":
        return random_messages(n, per_leaf * n, rng)
    if pattern == "permutation":
        p = list(range(n))
        rng.shuffle(p)
        return [(i, p[i]) for i in range(n) if p[i] != i]
    if pattern != "bit-reversal":
        raise ValueError(
            f"pattern must be 'random', 'permutation' or 'bit-reversal', not {pattern!r}"
        )
    h = lg(n)
    return [(i, bit_reversal(i, h)) for i in range(n) if bit_reversal(i, h) != i]
