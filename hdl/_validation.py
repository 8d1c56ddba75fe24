"""Parameter validation for components."""

import functools

__all__ = ["validates_parameters"]


def validates_parameters(init):
    """Decorate a component's ``__init__`` that may reject its parameters.

    Amaranth warns about every elaboratable that is created but never elaborated; one whose
    ``__init__`` raised never really existed, so silence that warning for it and let the
    ``TypeError``/``ValueError`` naming the bad parameter through.
    """

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        try:
            init(self, *args, **kwargs)
        except (TypeError, ValueError):
            self._MustUse__silence = True
            raise

    return wrapper
