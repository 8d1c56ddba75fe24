"""A broken design that stops making progress ends the RN1 and hypercube checks' phases soon
after their first mismatch (``patience`` cycles), not at their cycle limit: the mutants of
``fattree mutants`` that hung there (timeouts) are now killed in seconds."""

import asyncio
import random

from fattree.sim.checks.hypercube import CHECKS as HC_CHECKS
from fattree.sim.checks.hypercube import HypercubeCheck
from fattree.sim.checks.rn1 import CHECKS as RN1_CHECKS
from fattree.sim.checks.rn1 import RN1Check, transmissions
from fattree.sim.models.hypercube import HypercubeModel, traffic
from fattree.sim.models.rn1 import RN1Model
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.rn1 import BLOCKED, word


async def _tick():
    pass


def test_stuck_rn1_router_that_only_blocks_ends_the_phase():
    # Every head answered BLOCKED: the senders retry for ever, nothing gets through (a router
    # whose outputs stay 0 ends sooner: a status that never comes is a failure of its own).
    sb = Scoreboard(RN1_CHECKS)
    rng = random.Random(5)
    check = RN1Check(
        RN1Model("primary", 1),
        sb,
        lambda: ([0] * 8, [word(0, BLOCKED)] * 8),
        lambda *a: None,
        _tick,
        rng=rng,
    )
    asyncio.run(check.phase("random", transmissions("random", 20, rng), limit=200_000))
    assert sb.failures["cycle_mismatches"] > 0 and sb.failures["message_mismatches"] > 0
    assert check.cycle < check.patience + 100


def test_dead_hypercube_ends_the_phase():
    # A network that never takes a message (tx_ready 0) and never delivers one.
    dim, procs = 2, 2
    n = (1 << dim) * procs
    sb = Scoreboard(HC_CHECKS)
    rng = random.Random(2)
    check = HypercubeCheck(
        HypercubeModel(dim, procs, 2, 8),
        sb,
        lambda: [[0] * n, [0] * n, [0] * n, [0] * (1 << dim)],
        lambda *a: None,
        _tick,
        rng=rng,
    )
    queues = traffic("random", dim, procs, 8, rng, messages=4)
    asyncio.run(check.phase("random", queues, limit=100_000))
    assert sb.failures["cycle_mismatches"] > 0 and sb.failures["message_mismatches"] == 1
    assert check.patience < check.phases["random"]["cycles"] <= check.patience + 2
