"""Self-test tops for real FPGA boards."""
