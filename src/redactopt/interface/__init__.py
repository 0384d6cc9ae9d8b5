"""The interface: the command line, its reports and the paper benchmarks (no mathematics here)."""
