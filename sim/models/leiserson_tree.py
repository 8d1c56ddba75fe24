"""Reference model of a whole Leiserson fat-tree for one delivery cycle.

It reads each message's header exactly as the hardware does (address bit at every node, then
the decision bits of each concentrator stage) and follows the graphs of the shared
:class:`~fattree.hdl.capacities.TreeLayout`, so it checks the scheduler's headers
independently of how they were computed. It also gives the cycle on which every message's M
bit reaches its destination, using the latencies of the RTL:

* a node input's selector: M bit at t -> branch M bit at t + 2 (one address bit);
* a concentrator stage with b decision bits: M bit at t -> t + b + 1;
* an identity cascade (no stage) and the channels between nodes: no delay.

After its M bit, a message's remaining bits follow on consecutive cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...hdl.capacities import TreeLayout

__all__ = ["Arrival", "Delivery", "deliver", "SELECTOR_LATENCY"]

SELECTOR_LATENCY = 2


@dataclass(frozen=True)
class Arrival:
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


def deliver(layout: TreeLayout, frames: dict[tuple[int, int], list[int]]) -> Delivery:
    """Route ``frames[(leaf, wire)] = [M, header..., data...]`` through the tree."""
    n = layout.leaves
    result = Delivery()
    occupied: dict[tuple, tuple[int, int]] = {}
    for (src, src_wire), frame in sorted(frames.items()):
        if not frame or frame[0] != 1:
            continue  # M bit 0: no message
        bits = list(frame[1:])
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
    return result
