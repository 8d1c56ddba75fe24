"""Reference models, behavioural simulators, experiments and cocotb benches."""
