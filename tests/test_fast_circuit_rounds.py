"""The circuit tree's compiled round-based simulator (sim/fast/circuit_rounds.py): the round
kernel's random stream and pinned results."""

import numpy as np
import pytest

from fattree.sim.fast import circuit_rounds

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
    data, shift = circuit_rounds.random_bit_bytes(b, count)
    assert ((data >> shift) & 1).tolist() == want.tolist()
    assert a.integers(0, 10, 9).tolist() == b.integers(0, 10, 9).tolist()
    assert a.integers(0, 2**40, 3).tolist() == b.integers(0, 2**40, 3).tolist()


def test_random_bit_bytes_of_other_generators_take_numpys_path():
    a = np.random.Generator(np.random.MT19937(3))
    b = np.random.Generator(np.random.MT19937(3))
    data, shift = circuit_rounds.random_bit_bytes(b, 100)
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
    src, dst = circuit_rounds.random_traffic(n, m, rng)
    res = circuit_rounds.delivery_rounds(n, src, dst, rng, payload=payload)
    assert res.delivered_per_round == rounds and res.rounds == len(rounds)


def test_delivery_rounds_do_not_depend_on_message_order():
    rng = np.random.default_rng(3)
    src, dst = circuit_rounds.random_traffic(256, 200, rng)
    flip = np.arange(200)[::-1]
    a = circuit_rounds.delivery_rounds(256, src, dst, np.random.default_rng(1), payload=2)
    b = circuit_rounds.delivery_rounds(
        256, src[flip], dst[flip], np.random.default_rng(1), payload=2
    )
    assert a.delivered_per_round == b.delivered_per_round


def test_scratch_wraps_around_before_the_clock_overflows():
    rng = np.random.default_rng(11)
    scratch = circuit_rounds.Scratch(64)
    scratch.base = 2**31 - 3 * (8 * 6 + 2 + 8 + 64)  # two rounds from the limit
    for _ in range(6):
        src, dst = circuit_rounds.random_traffic(64, 64, rng)
        bits = circuit_rounds.random_bits(64, rng)
        got = circuit_rounds.round_fast(64, src, dst, bits, 2, scratch).tolist()
        assert got == circuit_rounds.round_reference(64, src, dst, bits, 2)
    assert scratch.base < 2**20  # it did wrap


def test_round_fast_wants_one_bit_per_router():
    with pytest.raises(ValueError, match=r"^bits must have shape \(3, 4\), not \(3, 3\)$"):
        circuit_rounds.round_fast(8, [1], [2], np.zeros((3, 3), np.uint8))
