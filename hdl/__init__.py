"""Amaranth components of the fat-tree networks."""

from .selector import Selector

__all__ = ["Selector"]
