"""The compiled parts of the fast simulators (sim/fastsim.py): the round kernel's random
stream and pinned results, and Ding's schedulers against the reference model."""

import random

import numpy as np
import pytest

from fattree.sim import fastsim
from fattree.sim.models.scheduler import schedule
from fattree.spec.topology import FatTree

# -- delivery rounds: the same bits, the same rounds -------------------------------------------


@pytest.mark.parametrize("earlier", [0, 1, 2, 3])
@pytest.mark.parametrize("count", [1, 3, 4, 5, 8, 12, 17, 1000, 4096])
def test_random_bit_bytes_are_random_bits(earlier, count):
    # The same bits as rng.integers(0, 2, count, uint8), and the generator left in the same
    # state, also when an earlier 32-bit draw left half a 64-bit word behind (odd `earlier`).
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    for rng in (a, b):
        rng.integers(0, 10, earlier)
    want = a.integers(0, 2, count, dtype=np.uint8)
    data, shift = fastsim.random_bit_bytes(b, count)
    assert ((data >> shift) & 1).tolist() == want.tolist()
    assert a.integers(0, 10, 9).tolist() == b.integers(0, 10, 9).tolist()
    assert a.integers(0, 2**40, 3).tolist() == b.integers(0, 2**40, 3).tolist()


def test_random_bit_bytes_of_other_generators_take_numpys_path():
    a = np.random.Generator(np.random.MT19937(3))
    b = np.random.Generator(np.random.MT19937(3))
    data, shift = fastsim.random_bit_bytes(b, 100)
    assert ((data >> shift) & 1).tolist() == a.integers(0, 2, 100, dtype=np.uint8).tolist()


@pytest.mark.parametrize(
    "n, m, seed, payload, rounds",
    [
        # Measured with the numpy simulator this kernel replaced (commit 30d0c99).
        (4096, 4096, 5, None, [1083, 942, 774, 652, 420, 182, 40, 2, 1]),
        (4096, 512, 6, 3, [401, 98, 13]),
        (2**14, 2**14, 7, 1, [4226, 3504, 3008, 2541, 1852, 953, 272, 27, 1]),
    ],
)
def test_delivery_rounds_are_the_earlier_simulators(n, m, seed, payload, rounds):
    rng = np.random.default_rng(seed)
    src, dst = fastsim.random_traffic(n, m, rng)
    res = fastsim.delivery_rounds(n, src, dst, rng, payload=payload)
    assert res.delivered_per_round == rounds and res.rounds == len(rounds)


def test_delivery_rounds_do_not_depend_on_message_order():
    rng = np.random.default_rng(3)
    src, dst = fastsim.random_traffic(256, 200, rng)
    flip = np.arange(200)[::-1]
    a = fastsim.delivery_rounds(256, src, dst, np.random.default_rng(1), payload=2)
    b = fastsim.delivery_rounds(256, src[flip], dst[flip], np.random.default_rng(1), payload=2)
    assert a.delivered_per_round == b.delivered_per_round


def test_scratch_wraps_around_before_the_clock_overflows():
    rng = np.random.default_rng(11)
    scratch = fastsim.Scratch(64)
    scratch.base = 2**31 - 3 * (8 * 6 + 2 + 8 + 64)  # two rounds from the limit
    for _ in range(6):
        src, dst = fastsim.random_traffic(64, 64, rng)
        bits = fastsim.random_bits(64, rng)
        got = fastsim.round_fast(64, src, dst, bits, 2, scratch).tolist()
        assert got == fastsim.round_reference(64, src, dst, bits, 2)
    assert scratch.base < 2**20  # it did wrap


def test_round_fast_wants_one_bit_per_router():
    with pytest.raises(ValueError, match=r"^bits must have shape \(3, 4\), not \(3, 3\)$"):
        fastsim.round_fast(8, [1], [2], np.zeros((3, 3), np.uint8))


# -- Ding's schedulers ----------------------------------------------------------------------------


def test_mersenne_twister_is_pythons():
    for seed in (0, 1, 12345):
        mt = np.array(random.Random(seed).getstate()[1], dtype=np.int64)
        ref = random.Random(seed)
        assert [fastsim._mt_uint32(mt) for _ in range(1500)] == [
            ref.getrandbits(32) for _ in range(1500)
        ]
        mt = np.array(random.Random(seed).getstate()[1], dtype=np.int64)
        ref = random.Random(seed)
        for n in [1, 2, 3, 5, 7, 16, 63, 64, 1000] * 40:
            assert fastsim._randbelow(mt, n) == ref._randbelow(n)


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
    for algorithm in fastsim.SCHEDULE_ALGORITHMS:
        for mode in ("keep", "release"):
            for rounds in (False, True):
                fast = fastsim.schedule_permutations(
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
        fastsim.schedule_permutations(2, 2, [[0, 0, 1, 2]])
    with pytest.raises(ValueError, match="^dsts must have one row of 4 destinations per trial$"):
        fastsim.schedule_permutations(2, 2, [[0, 1, 2]])
    with pytest.raises(ValueError, match="^algorithm must be one of level-wise, greedy, random"):
        fastsim.schedule_permutations(2, 2, [[0, 1, 2, 3]], "best")
    with pytest.raises(ValueError, match="^failure_mode must be one of keep, release, not 'x'$"):
        fastsim.schedule_permutations(2, 2, [[0, 1, 2, 3]], failure_mode="x")


def test_schedulability_checks_the_fast_path_against_the_model(monkeypatch):
    # A fast scheduler that refuses one more request than the model must stop the run.
    import argparse

    from fattree.sim.experiments import schedulability

    real = fastsim.schedule_permutations

    def broken(*args, **kwargs):
        out = real(*args, **kwargs)
        out.granted[0, np.argmax(out.height[0] > 0)] = False
        return out

    monkeypatch.setattr(fastsim, "schedule_permutations", broken)
    parser = argparse.ArgumentParser()
    schedulability.add_arguments(parser)
    args = parser.parse_args(["--trials", "2", "--sizes", "2x4", "--algorithms", "greedy"])
    with pytest.raises(RuntimeError, match="fast scheduler disagrees with the model on FT"):
        schedulability.run(args, lambda _: None)
