"""``fakenrt simulate``: a whole GPU cluster in one process, in simulated time, scheduling
strategies compared on the same workload. Pure (no I/O but what the command hands in);
see ``docs/simulate.md``."""
