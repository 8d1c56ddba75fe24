"""fattree: fat-tree interconnection networks as verified, synthesisable Amaranth HDL.

The top-level folders of the repository map into this namespace: ``hdl`` -> ``fattree.hdl``
(Amaranth components and the pure-Python structure they are built from), ``sim`` ->
``fattree.sim`` (reference models, simulators, cocotb benches), ``boards`` ->
``fattree.boards`` (self-test tops for real boards) and ``scripts`` -> ``fattree.scripts``
(the ``fattree`` command line).
"""

__version__ = "0.1.0"
