"""Pure-Python reference models, one per hardware block."""
