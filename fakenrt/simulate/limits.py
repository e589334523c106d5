"""The bounds every input of ``fakenrt simulate`` is checked against (documented in
``docs/simulate.md``), so hostile sizes fail at once with a clear message instead of
hanging or eating memory. Pure."""

from __future__ import annotations

#: Trace files larger than this are refused before they are read.
MAX_TRACE_BYTES = 64 * 2**20
#: Pods in one workload (trace entries times their ``count``, or generated arrivals): above
#: the fleet scale ``benchmarks/bench_simulate.py --huge`` measures (about 500,000 pods on
#: 10,000 nodes, about 3 GiB).
MAX_PODS = 600_000
#: Nodes in one scenario: a fleet of GPU nodes, twice Kubernetes' largest supported
#: cluster (one profile file still holds at most 5,000: ``fakenrt.profiles.limits``).
MAX_NODES = 10_000
#: Simulated time: the horizon, arrivals and run durations (30 days).
MAX_SECONDS = 30 * 86_400.0
#: NRT delay / jitter, exporter delay (one day).
MAX_LAG_SECONDS = 86_400.0
#: The scheduling period: at least this (10 ms) and at most a day.
MIN_PERIOD = 0.01
#: Values in one ``--sweep``.
MAX_SWEEP_VALUES = 16
#: Seeds every point of a run is simulated with (``--seeds``).
MAX_SEEDS = 100
#: Simulations in one invocation (strategies x points x seeds).
MAX_RUNS = 10_000
#: Re-creations of one rejected pod.
MAX_REQUEUES = 100
#: Scheduling periods in the horizon (horizon / period).
MAX_CYCLES = 10_000_000
#: Scheduling attempts evaluated in one run (a pod retried every backoff step counts each
#: time; parked pods moved on in a batch while their shape fits nowhere cost one check for
#: the batch and are not counted here); a run that would need more stops with an error
#: instead of running for hours.
MAX_ATTEMPTS = 20_000_000
#: The seed of the generator and the NRT jitter (a signed 64-bit integer, as a Go or
#: NumPy consumer of the JSON would read it).
MAX_SEED = 2**63 - 1
#: Arrivals per hour of the generator.
MAX_ARRIVALS_PER_HOUR = 100_000.0


class LimitError(ValueError):
    """An input beyond a documented bound; the message names the input and the bound."""


def shown(value: float) -> str:
    """A number for an error message: short even when it is huge (a 400-digit integer
    cannot become a float; a message quotes at most a few digits of it)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() <= 64:
            return str(value)
        try:
            return f"an integer of {len(str(abs(value)))} digits"
        except ValueError:  # beyond Python's 4,300-digit conversion limit
            return "an integer of more than 4,300 digits"
    return f"{value:.10g}"


def check_range(value: float, *, name: str, low: float, high: float) -> float:
    if not (low <= value <= high):
        raise LimitError(
            f"{name} must be between {shown(low)} and {shown(high)} (got {shown(value)})"
        )
    return value
