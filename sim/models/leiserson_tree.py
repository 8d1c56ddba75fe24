"""Reference model of a whole Leiserson fat-tree for one delivery cycle.

It reads each message's header exactly as the hardware does (address bit at every node, then
the decision bits of each concentrator stage) and follows the graphs of the shared
:class:`~fattree.spec.capacities.TreeLayout`, so it checks the scheduler's headers
independently of how they were computed. It also gives the cycle on which every message's M
bit reaches its destination, using the latencies of the RTL:

* a node input's selector: M bit at t -> branch M bit at t + 2 (one address bit);
* a concentrator stage with b decision bits: M bit at t -> t + b + 1;
* an identity cascade (no stage) and the channels between nodes: no delay.

After its M bit, a message's remaining bits follow on consecutive cycles.

A frame whose source is :data:`OUTSIDE` enters on
a wire of the root's external channel (``root_i``): at the root's U input, where an address
bit 1 goes right and 0 left. A message that leaves the root upwards arrives at
``("root", 0)`` (``root_o``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from ...spec.capacities import TreeLayout
from ..coverage import Coverage, CoverPoint
from .leiserson_coverage import TreeCounter, tree_points

__all__ = [
    "Arrival",
    "Delivery",
    "deliver",
    "LeisersonTreeModel",
    "OUTSIDE",
    "SELECTOR_LATENCY",
    "Wave",
    "delivery_waves",
]

SELECTOR_LATENCY = 2
#: A message end outside the tree: the root's external channel (``root_i``, ``root_o``).
OUTSIDE = -1


@dataclass(frozen=True)
class Arrival:
    #: A leaf, or :data:`OUTSIDE` for a frame that entered at ``root_i``.
    src: int
    src_wire: int
    #: ``("leaf", i)`` or ``("root", 0)`` for the external interface.
    where: tuple[str, int]
    wire: int
    #: Cycle of the M bit at the destination, counted from its injection.
    latency: int
    bits: tuple[int, ...]


@dataclass
class Delivery:
    arrivals: list[Arrival] = field(default_factory=list)
    #: (src, src_wire, reason) of messages that did not get through.
    lost: list[tuple[int, int, str]] = field(default_factory=list)
    #: Two messages on one vertex of one switch stage (would be a wired OR in the RTL).
    collisions: list[tuple] = field(default_factory=list)


def deliver(
    layout: TreeLayout, frames: dict[tuple[int, int], list[int]], counter: TreeCounter | None = None
) -> Delivery:
    """Route ``frames[(leaf, wire)] = [M, header..., data...]`` through the tree; a leaf of
    :data:`OUTSIDE` means the wire of ``root_i``. ``counter`` counts the cover points."""
    n = layout.leaves
    result = Delivery()
    occupied: dict[tuple, tuple[int, int]] = {}
    if counter is not None:
        counter.begin()
    for (src, src_wire), frame in sorted(frames.items()):
        if not frame or frame[0] != 1:
            continue  # M bit 0: no message
        bits = list(frame[1:])
        if counter is not None:
            counter.enter(None if src == OUTSIDE else src)
        if src == OUTSIDE:
            node, in_port, wire = 1, "U", src_wire
        else:
            leaf = n + src
            node, in_port, wire = leaf >> 1, "LR"[leaf & 1], src_wire
        time = 0
        while True:
            level = node.bit_length() - 1
            if not bits:
                result.lost.append((src, src_wire, f"header ended at node {node}"))
                break
            a = bits.pop(0)
            if in_port == "U":
                port = "R" if a else "L"
            else:
                port = "U" if a else ("R" if in_port == "L" else "L")
            time += SELECTOR_LATENCY
            if counter is not None:
                counter.turn(level, in_port, port)
            cascade = layout.cascade(level, port)
            vertex = layout.group_offset(level, port, in_port) + wire
            ok = True
            for t, stage in enumerate(cascade.stages):
                width = stage.graph.decision_bits
                if len(bits) < width:
                    result.lost.append((src, src_wire, f"header ended in node {node}"))
                    ok = False
                    break
                choice = int("".join(map(str, bits[:width])), 2)
                del bits[:width]
                row = stage.graph.adjacency[vertex]
                if counter is not None:
                    counter.edge(level, port, t, choice, len(row))
                if choice >= len(row):
                    result.lost.append((src, src_wire, f"edge {choice} of {len(row)} at {node}"))
                    ok = False
                    break
                vertex = row[choice]
                key = (node, port, t, vertex)
                if key in occupied:
                    result.collisions.append((key, occupied[key], (src, src_wire)))
                occupied[key] = (src, src_wire)
                time += width + 1
            if not ok:
                break
            if not cascade.stages and vertex >= cascade.s:
                result.lost.append((src, src_wire, f"identity cascade overflow at {node}"))
                break
            if counter is not None:
                counter.passed(node, port)
            wire = vertex
            if port == "U":
                if node == 1:
                    result.arrivals.append(
                        Arrival(src, src_wire, ("root", 0), wire, time, tuple([1] + bits))
                    )
                    break
                node, in_port = node >> 1, "LR"[node & 1]
                continue
            child = 2 * node + (port == "R")
            if child >= n:
                result.arrivals.append(
                    Arrival(src, src_wire, ("leaf", child - n), wire, time, tuple([1] + bits))
                )
                break
            node, in_port = child, "U"
    if counter is not None:
        counter.end()
    return result


@dataclass
class Wave:
    """One delivery cycle as waveforms: ``drive[t][leaf]`` is the word on the leaf's send
    wires in cycle t (t = 0 is the ``start`` cycle), ``expect[t][leaf]`` the word its receive
    wires must show, ``root_drive[t]`` and ``root_expect[t]`` the same for ``root_i`` and
    ``root_o``; ``sent[(leaf, wire)] = (message index, data)``, leaf :data:`OUTSIDE` for
    ``root_i``."""

    drive: list[list[int]]
    expect: list[list[int]]
    sent: dict[tuple[int, int], tuple[int, int]]
    delivery: Delivery
    root_drive: list[int]
    root_expect: list[int]
    #: Indices of the messages whose header makes a switch drop them.
    dropped: list[int] = field(default_factory=list)


def delivery_waves(
    layout: TreeLayout,
    messages,
    cycles,
    rng,
    data_bits: int = 8,
    stagger: int = 3,
    wires=None,
    *,
    random_switches: bool = False,
    drop=(),
    counter: TreeCounter | None = None,
):
    """Plan every delivery cycle of a schedule (switch settings and headers; ``wires``, if
    given, each message's wire at its source), attach random data, start each message
    0 .. stagger-1 cycles after ``start``, and give the expected receive waveforms from
    :func:`deliver`. ``random_switches``: every concentrator stage takes a random maximum
    matching drawn from ``rng`` (the deterministic one where a random one does not route).
    ``drop``: message indices whose header names, where it can, an edge a stage lacks
    (:func:`~fattree.sim.models.leiserson_schedule.dropping_header`), so that the tree must
    drop them (:attr:`Wave.dropped`). Raises ``RuntimeError`` if the model loses any other
    message or collides one. ``counter`` counts the cover points of every delivery cycle."""
    from .leiserson_schedule import dropping_header, frame_bits, plan_cycle

    n = layout.leaves
    waves = []
    for cycle in cycles:
        plan = None
        if random_switches:
            try:
                plan = plan_cycle(layout, messages, cycle, wires, rng)
            except RuntimeError:  # a greedy random matching stage by stage can route fewer
                pass
        plan = plan or plan_cycle(layout, messages, cycle, wires)
        frames, sent, offsets, dropped = {}, {}, {}, set()
        tail = 1  # a dropped frame is cut inside the tree: it must have left it before the end
        for mp in plan.messages:
            wire = mp.hops[0][2]  # the wire the plan gave it at its source
            data = rng.getrandbits(data_bits)
            frames[(mp.src, wire)] = frame_bits(mp, data, data_bits)
            header = dropping_header(layout, mp) if mp.index in drop else None
            if header is not None:
                frames[(mp.src, wire)][1 : 1 + len(header)] = header
                dropped.add((mp.src, wire))
                # Its whole path's latency (selectors, then b + 1 per stage), as if delivered.
                path = sum(
                    SELECTOR_LATENCY
                    + sum(b + 1 for b in layout.cascade(node.bit_length() - 1, port).decision_bits)
                    for node, _i, _w, port, _o in mp.hops
                )
                tail = max(tail, len(frames[(mp.src, wire)]) + path)
            sent[(mp.src, wire)] = (mp.index, data)
            offsets[(mp.src, wire)] = rng.randrange(stagger)
        model = deliver(layout, frames, counter)
        if {lost[:2] for lost in model.lost} != dropped or model.collisions:
            raise RuntimeError(f"model: lost {model.lost}, collisions {model.collisions}")
        length = max((len(f) + offsets[k] for k, f in frames.items()), default=1)
        length += max((a.latency for a in model.arrivals), default=0) + 3
        length = max(length, stagger + tail + 3)
        # Column n of each row is the root's channel (root_i, root_o).
        drive = [[0] * (n + 1) for _ in range(length)]
        expect = [[0] * (n + 1) for _ in range(length)]
        for (src, wire), frame in frames.items():
            column = n if src == OUTSIDE else src
            for k, b in enumerate(frame):
                drive[offsets[(src, wire)] + k][column] |= b << wire
        for a in model.arrivals:
            t0 = offsets[(a.src, a.src_wire)] + a.latency
            column = n if a.where[0] == "root" else a.where[1]
            for k, b in enumerate(a.bits):
                expect[t0 + k][column] |= b << a.wire
        waves.append(
            Wave(
                [row[:n] for row in drive],
                [row[:n] for row in expect],
                sent,
                model,
                [row[n] for row in drive],
                [row[n] for row in expect],
                sorted(sent[key][0] for key in dropped),
            )
        )
    return waves


class LeisersonTreeModel:
    """The tree model of one layout, with its cover points (docs/leiserson.md, "Coverage"):
    :meth:`delivery_waves` is :func:`delivery_waves` of :attr:`layout`, counting into
    :attr:`coverage` once :meth:`start_coverage` was called."""

    #: What :meth:`start_coverage` counts into (None: not counted).
    coverage: Coverage | None = None

    def __init__(self, layout: TreeLayout):
        if not isinstance(layout, TreeLayout):
            raise TypeError(f"layout must be a TreeLayout, not {layout!r}")
        self.layout = layout
        self._counter: TreeCounter | None = None

    def cover_points(self) -> list[CoverPoint]:
        return tree_points(self.layout)

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read."""
        self.coverage = Coverage(self.cover_points())
        self._counter = TreeCounter(self.coverage, self.layout)
        return self.coverage

    def clone(self) -> LeisersonTreeModel:
        """An independent copy (its coverage too), to try message sets on."""
        twin = LeisersonTreeModel(self.layout)
        if self.coverage is not None:
            twin.coverage = copy.deepcopy(self.coverage)
            twin._counter = TreeCounter(twin.coverage, self.layout)
        return twin

    def delivery_waves(self, messages, cycles, rng, data_bits: int = 8, **options):
        return delivery_waves(
            self.layout, messages, cycles, rng, data_bits, counter=self._counter, **options
        )
