"""Ding's schedulers, compiled (sim/fast/schedulers.py): the Mersenne Twister restated, and
every grant against the reference model."""

import random

import numpy as np
import pytest

from fattree.sim.fast import schedulers
from fattree.sim.models.scheduler import schedule
from fattree.spec.topology import FatTree


def test_mersenne_twister_is_pythons():
    for seed in (0, 1, 12345):
        mt = np.array(random.Random(seed).getstate()[1], dtype=np.int64)
        ref = random.Random(seed)
        assert [schedulers._mt_uint32(mt) for _ in range(1500)] == [
            ref.getrandbits(32) for _ in range(1500)
        ]
        mt = np.array(random.Random(seed).getstate()[1], dtype=np.int64)
        ref = random.Random(seed)
        for n in [1, 2, 3, 5, 7, 16, 63, 64, 1000] * 40:
            assert schedulers._randbelow(mt, n) == ref._randbelow(n)


def _permutations(tree, trials, seed):
    rng = random.Random(seed)
    dsts = []
    for _ in range(trials):
        dst = list(tree.nodes())
        rng.shuffle(dst)
        dsts.append(dst)
    return dsts


@pytest.mark.parametrize("size", [(1, 3), (2, 2), (2, 3), (3, 2), (3, 4), (2, 8), (4, 3), (5, 2)])
def test_schedule_permutations_equal_the_model(size):
    # Every grant (granted, ports, height, failed level, round) for every algorithm, failure
    # mode and rounds setting, on random permutations.
    tree = FatTree(*size)
    dsts = _permutations(tree, 5, f"perm-{size}")
    seeds = [7 * t + 1 for t in range(5)]
    refused = 0
    for algorithm in schedulers.SCHEDULE_ALGORITHMS:
        for mode in ("keep", "release"):
            for rounds in (False, True):
                fast = schedulers.schedule_permutations(
                    *size, dsts, algorithm, failure_mode=mode, seeds=seeds, rounds=rounds
                )
                for t, dst in enumerate(dsts):
                    grants = schedule(
                        tree,
                        list(enumerate(dst)),
                        algorithm,
                        failure_mode=mode,
                        seed=seeds[t],
                        rounds=rounds,
                    )
                    want = [(g.granted, g.ports, g.height, g.failed_level, g.round) for g in grants]
                    assert [fast.grant(t, k) for k in range(len(dst))] == want
                    refused += sum(not g.granted for g in grants)
    if tree.num_nodes > 4:
        assert refused > 0  # the comparison covered failures


def test_schedule_permutations_errors():
    with pytest.raises(ValueError, match="^every row of dsts must be a permutation of the nodes$"):
        schedulers.schedule_permutations(2, 2, [[0, 0, 1, 2]])
    with pytest.raises(ValueError, match="^dsts must have one row of 4 destinations per trial$"):
        schedulers.schedule_permutations(2, 2, [[0, 1, 2]])
    with pytest.raises(ValueError, match="^algorithm must be one of level-wise, greedy, random"):
        schedulers.schedule_permutations(2, 2, [[0, 1, 2, 3]], "best")
    with pytest.raises(ValueError, match="^failure_mode must be one of keep, release, not 'x'$"):
        schedulers.schedule_permutations(2, 2, [[0, 1, 2, 3]], failure_mode="x")


def test_schedulability_checks_the_fast_path_against_the_model(monkeypatch):
    # A fast scheduler that refuses one more request than the model must stop the run.
    import argparse

    from fattree.sim.experiments import scheduler_schedulability as schedulability

    real = schedulers.schedule_permutations

    def broken(*args, **kwargs):
        out = real(*args, **kwargs)
        out.granted[0, np.argmax(out.height[0] > 0)] = False
        return out

    monkeypatch.setattr(schedulers, "schedule_permutations", broken)
    parser = argparse.ArgumentParser()
    schedulability.add_arguments(parser)
    args = parser.parse_args(["--trials", "2", "--sizes", "2x4", "--algorithms", "greedy"])
    with pytest.raises(RuntimeError, match="fast scheduler disagrees with the model on FT"):
        schedulability.run(args, lambda _: None)
