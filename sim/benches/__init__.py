"""cocotb benches: one module per design, loaded by :mod:`fattree.sim.cocotb_runner`."""
