"""Command streams for the hardware scheduler and what the sequential reference expects.

:class:`CommandStream` builds a list of commands for
:class:`fattree.hdl.scheduler.LevelWiseScheduler` (``(op, src, dst, ports)``) together with
the result :class:`~fattree.sim.models.scheduler.SchedulerModel` (level-wise, ``keep``, the
mode the hardware implements) gives for each (``(op, src, dst, granted, ports)``), the way
the amaranth.sim tests and the cocotb bench both drive it. :class:`LinkLedger` is the check
that does not trust the model: established connections never share a link.
"""

from __future__ import annotations

import random

from ...spec.scheduler import GeneralizedFatTree, Op, general_tree
from ...spec.topology import FatTree
from .scheduler import SchedulerModel

__all__ = ["CommandStream", "LinkLedger"]


class CommandStream:
    """Commands and expected results, appended command by command (``commands``,
    ``expected``); every port vector is ``levels - 1`` long."""

    def __init__(self, tree: FatTree | GeneralizedFatTree):
        self.tree = tree = general_tree(tree)
        self.model = SchedulerModel(tree, "level-wise", "keep")
        self.zeros = (0,) * (tree.levels - 1)
        #: Granted connections not yet released: ``(src, dst, ports)``.
        self.established: list[tuple[int, int, tuple[int, ...]]] = []
        self.commands: list[tuple] = []
        self.expected: list[tuple] = []

    def clear(self) -> None:
        self.model.clear()
        self.established.clear()
        self.commands.append((Op.CLEAR, 0, 0, self.zeros))
        self.expected.append((Op.CLEAR, 0, 0, 1, self.zeros))

    def release(self, src: int, dst: int, ports: tuple[int, ...]) -> None:
        self.model.release(src, dst, ports)
        vector = tuple(ports) + self.zeros[len(ports) :]
        self.commands.append((Op.RELEASE, src, dst, vector))
        self.expected.append((Op.RELEASE, src, dst, 1, vector))

    def schedule(self, src: int, dst: int) -> None:
        g = self.model.request(src, dst)
        if g.granted and g.height:
            self.established.append((src, dst, g.ports))
        self.commands.append((Op.SCHEDULE, src, dst, self.zeros))
        self.expected.append(
            (Op.SCHEDULE, src, dst, int(g.granted), g.port_vector(self.tree.levels))
        )

    def hot_nodes(self, rng: random.Random, switches: int = 2) -> list[int]:
        """The nodes of a few random leaf switches: back-to-back requests among them keep
        hitting the same memory rows (the forwarding paths)."""
        tree = self.tree
        leaves = tree.switch_count(0)
        chosen = rng.sample(range(leaves), min(switches, leaves))
        return [s * tree.m + p for s in chosen for p in range(tree.m)]

    def random(
        self,
        rng: random.Random,
        count: int,
        *,
        nodes: list[int] | None = None,
        releases: float = 0.2,
        clears: float = 0.0,
    ) -> None:
        """``count`` commands: a clear with probability ``clears``, else the release of a
        random established connection with probability ``releases`` (if there is one), else
        a request between two random ``nodes`` (default: all)."""
        nodes = nodes if nodes is not None else list(self.tree.nodes())
        for _ in range(count):
            roll = rng.random()
            if roll < clears:
                self.clear()
            elif roll < clears + releases and self.established:
                self.release(*self.established.pop(rng.randrange(len(self.established))))
            else:
                self.schedule(rng.choice(nodes), rng.choice(nodes))

    def permutation(self, rng: random.Random) -> None:
        """A clear, then every node sends to a random permutation of the nodes (the paper's
        workload)."""
        self.clear()
        targets = list(self.tree.nodes())
        rng.shuffle(targets)
        for src, dst in zip(self.tree.nodes(), targets, strict=True):
            self.schedule(src, dst)


class LinkLedger:
    """Follows the results and reports any link granted to two established connections, or
    released by a connection that does not hold it."""

    def __init__(self, tree: FatTree | GeneralizedFatTree):
        self.tree = general_tree(tree)
        self.held: dict = {}

    def apply(self, result: tuple) -> list[str]:
        """Take one result ``(op, src, dst, granted, ports)``; return what is wrong with it."""
        op, src, dst, granted, ports = result
        links = self.tree.route(src, dst, ports[: self.tree.common_level(src, dst)])[1:-1]
        problems = []
        if op == Op.CLEAR:
            self.held.clear()
        elif op == Op.RELEASE:
            for link in links:
                holder = self.held.pop(link, None)
                if holder != (src, dst):
                    problems.append(f"{link} released by {(src, dst)} but held by {holder}")
        elif granted:
            for link in links:
                if link in self.held:
                    problems.append(f"{link} granted to {(src, dst)} and {self.held[link]}")
                self.held[link] = (src, dst)
        return problems
