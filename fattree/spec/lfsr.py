"""Linear-feedback shift registers as mathematics: taps, the step function, seeds, masks.

The hardware register is :class:`fattree.hdl.lfsr.LFSR`; :class:`LFSRModel` here is what the
reference models, the traffic generators' Python twins and the board replay memories use.
Both forms are defined:

* **Fibonacci** (external XOR), shifting left: the new bit is the XOR of the tapped bits and
  enters at bit 0. After one clock with ``steps = k`` the ``k`` low bits of ``value`` are the
  ``k`` newest bits of the sequence, so ``value[:k]`` is a fresh ``k``-bit random word every
  cycle.
* **Galois** (internal XOR), shifting right: bit 0 leaves and, if it is 1, toggles the tapped
  bits. Cheaper when tapped bits are many; words taken from it overlap the previous state.

Taps are the exponents of the feedback polynomial, ``x^16 + x^15 + x^13 + x^4 + 1`` being
``(16, 15, 13, 4)``; the largest tap is the register width. :data:`MAXIMAL_TAPS` lists
maximal-length polynomials (period ``2**width - 1``) from Xilinx XAPP052 for widths 2..32
and 64; tests check each one is primitive. The all-zero state is the lock-up state of an XOR
LFSR, so seeds are non-zero.

``steps`` advances the register that many single steps per clock (the steps are unrolled
into one combinational function). With a trinomial such as ``(31, 28)`` and ``steps <= 28``
every new bit is the XOR of two register bits: one LUT per bit, no long XOR chains.
"""

from __future__ import annotations

import functools

from ..params import check_int_range

__all__ = [
    "MAXIMAL_TAPS",
    "KINDS",
    "LFSRModel",
    "check_lfsr_parameters",
    "derive_seed",
    "xor_mask",
]

#: Maximal-length feedback polynomials (Xilinx XAPP052, table 3), by register width.
MAXIMAL_TAPS: dict[int, tuple[int, ...]] = {
    2: (2, 1),
    3: (3, 2),
    4: (4, 3),
    5: (5, 3),
    6: (6, 5),
    7: (7, 6),
    8: (8, 6, 5, 4),
    9: (9, 5),
    10: (10, 7),
    11: (11, 9),
    12: (12, 6, 4, 1),
    13: (13, 4, 3, 1),
    14: (14, 5, 3, 1),
    15: (15, 14),
    16: (16, 15, 13, 4),
    17: (17, 14),
    18: (18, 11),
    19: (19, 6, 2, 1),
    20: (20, 17),
    21: (21, 19),
    22: (22, 21),
    23: (23, 18),
    24: (24, 23, 22, 17),
    25: (25, 22),
    26: (26, 6, 2, 1),
    27: (27, 5, 2, 1),
    28: (28, 25),
    29: (29, 27),
    30: (30, 6, 4, 1),
    31: (31, 28),
    32: (32, 22, 2, 1),
    64: (64, 63, 61, 60),
}

KINDS = ("fibonacci", "galois")


def check_lfsr_parameters(width, taps, seed, kind, steps) -> tuple[int, tuple[int, ...], int]:
    """Validate LFSR parameters; return ``(width, taps, seed)`` with default taps filled in."""
    width = check_int_range("width", width, 2)
    if taps is None:
        if width not in MAXIMAL_TAPS:
            known = ", ".join(str(w) for w in MAXIMAL_TAPS)
            raise ValueError(
                f"no default taps for width {width}; pass taps (known widths: {known})"
            )
        taps = MAXIMAL_TAPS[width]
    if not isinstance(taps, (tuple, list)) or not all(
        isinstance(t, int) and not isinstance(t, bool) for t in taps
    ):
        raise TypeError(f"taps must be a sequence of integers, not {taps!r}")
    taps = tuple(sorted(set(taps), reverse=True))
    if len(taps) < 2 or taps[0] != width or taps[-1] < 1:
        raise ValueError(
            f"taps must include the width {width} and at least one other exponent "
            f"between 1 and {width - 1}, not {taps!r}"
        )
    seed = check_int_range("seed", seed, 1, (1 << width) - 1)
    if kind not in KINDS:
        raise ValueError(f"kind must be 'fibonacci' or 'galois', not {kind!r}")
    check_int_range("steps", steps, 1, width)
    return width, taps, seed


class LFSRModel:
    """Python twin of :class:`LFSR`: the same state, step for step.

    Parameters are those of :class:`LFSR`. :attr:`state` is what ``LFSR.value`` holds; each
    :meth:`clock` does what one enabled clock edge does (``steps`` single steps).
    """

    def __init__(self, width, *, taps=None, seed=1, kind="fibonacci", steps=1):
        self.width, self.taps, self.seed = check_lfsr_parameters(width, taps, seed, kind, steps)
        self.kind = kind
        self.steps = steps
        self.mask = (1 << self.width) - 1
        self._toggle = sum(1 << (t - 1) for t in self.taps)
        self.state = self.seed

    def reset(self) -> None:
        self.state = self.seed

    def step(self) -> int:
        """One single step (one bit of the sequence); returns the new state."""
        s = self.state
        if self.kind == "fibonacci":
            feedback = 0
            for t in self.taps:
                feedback ^= (s >> (t - 1)) & 1
            s = ((s << 1) | feedback) & self.mask
        else:
            out = s & 1
            s >>= 1
            if out:
                s ^= self._toggle
        self.state = s
        return s

    def clock(self) -> int:
        """One enabled clock edge: ``steps`` single steps; returns the new state."""
        for _ in range(self.steps):
            self.step()
        return self.state

    def word(self) -> int:
        """The fresh word of the current state: its ``steps`` low bits."""
        return self.state & ((1 << self.steps) - 1)

    def period(self, limit: int | None = None) -> int:
        """Single steps until the state repeats (brute force; for small widths and tests).

        Raises ``RuntimeError`` if ``limit`` steps pass first.
        """
        limit = (1 << self.width) if limit is None else limit
        saved = self.state
        try:
            for n in range(1, limit + 1):
                if self.step() == saved:
                    return n
        finally:
            self.state = saved
        raise RuntimeError(f"no repeat within {limit} steps")


#: Odd 32-bit multipliers of :func:`derive_seed`, one per position (seed, then the path).
_SEED_MULTIPLIERS = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1)


def derive_seed(width: int, seed: int, *path: int) -> int:
    """A non-zero ``width``-bit LFSR seed for the register at ``path`` of a design seeded
    with ``seed`` (e.g. ``(level, switch)`` of a router, or an index in a bank).

    A multiply-xorshift hash, so neighbouring paths get unrelated seeds; the same arguments
    always give the same seed, which is how a model and the hardware agree.
    """
    if len(path) >= len(_SEED_MULTIPLIERS):
        raise ValueError(f"path must have at most {len(_SEED_MULTIPLIERS) - 1} parts")
    x = 0
    for part, k in zip((seed, *path), _SEED_MULTIPLIERS[: len(path) + 1], strict=True):
        x += part * k
    x &= 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x ^= x >> 12
    return x % ((1 << width) - 1) + 1


@functools.cache
def xor_mask(width: int, shared_seed: int, seed: int) -> int:
    """The bits of an LFSR seeded with ``shared_seed`` whose XOR is, in every cycle, bit 0 of
    an LFSR of the same (default, maximal) polynomial seeded with ``seed``.

    All nonzero states of a maximal LFSR lie on one cycle, so the ``seed`` register is the
    shared one some fixed number of steps ahead, and bit 0 of a linear map of the state is a
    linear function of the shared state. Both sequences satisfy the recurrence of the
    feedback polynomial, so agreeing on the first ``width`` cycles makes them agree forever:
    solve for the mask over GF(2) from ``width`` cycles.
    """
    check_int_range("seed", seed, 1, (1 << width) - 1)
    shared = LFSRModel(width, seed=shared_seed)
    own = LFSRModel(width, seed=seed)
    rows = []  # (shared state, wanted bit) with the state as a row of coefficients
    for _ in range(width):
        rows.append((shared.state, own.state & 1))
        shared.clock()
        own.clock()
    # Gauss-Jordan elimination on [state | bit]; the states are linearly independent.
    pivots = []  # (pivot bit, row state, row bit)
    for state, want in rows:
        for bit_, pstate, pwant in pivots:
            if state >> bit_ & 1:
                state, want = state ^ pstate, want ^ pwant
        if state == 0:
            raise AssertionError(f"{width} consecutive LFSR states are not independent")
        bit_ = state.bit_length() - 1
        pivots = [
            (b, ps ^ state, pw ^ want) if ps >> bit_ & 1 else (b, ps, pw) for b, ps, pw in pivots
        ]
        pivots.append((bit_, state, want))
    # Reduced rows are unit vectors: row for pivot b says mask bit b = its wanted bit.
    return sum(pw << b for b, ps, pw in pivots)
