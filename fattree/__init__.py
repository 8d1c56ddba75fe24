"""fattree: fat-tree interconnection networks as verified, synthesisable Amaranth HDL.

The definitions both the hardware and the models read are in ``fattree.spec`` (pure
Python). The top-level folders of the repository map into this namespace: ``hdl`` ->
``fattree.hdl`` (Amaranth components), ``sim`` -> ``fattree.sim`` (reference models,
simulators, cocotb benches), ``boards`` -> ``fattree.boards`` (self-test tops for real
boards) and ``scripts`` -> ``fattree.scripts`` (the ``fattree`` command line).
docs/architecture.md has the map.
"""

__version__ = "0.2.0"
