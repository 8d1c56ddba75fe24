"""Parameter validation shared by the HDL, the models and the command line.

Messages name the parameter and the bad value, e.g. ``width must be a positive integer,
not 0``; tests pin them.
"""

__all__ = ["check_positive_int", "check_int_range", "check_power_of_two"]


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_positive_int(name: str, value) -> int:
    if not _is_int(value):
        raise TypeError(f"{name} must be a positive integer, not {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


def check_int_range(name: str, value, lo: int, hi: int | None = None) -> int:
    """An integer in ``lo .. hi`` (inclusive; ``hi=None`` for no upper bound)."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        raise ValueError(f"{name} must be {bound}, not {value!r}")
    return value


def check_power_of_two(name: str, value, minimum: int = 1) -> int:
    if not _is_int(value):
        raise TypeError(f"{name} must be a power of two, not {value!r}")
    if value < minimum or value & (value - 1):
        raise ValueError(f"{name} must be a power of two of at least {minimum}, not {value!r}")
    return value
