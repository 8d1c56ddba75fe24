"""The definitions layer: what the hardware and the reference models both read.

Pure Python (the standard library, :mod:`fattree.params`, and numpy where a check needs it;
never Amaranth): topology, capacities, concentrator graphs, LFSR mathematics, the circuit
protocol's encodings, the scheduler's command codes and fields, and the traffic patterns.
``hdl/``
elaborates hardware from these objects and ``sim/models/`` restates the behaviour from them,
so a wiring or encoding mistake cannot hide in only one of the two, while a mistake in the
behaviour of either is caught by the other. ``tests/test_layers.py`` keeps the walls.
"""
