"""The clock check's thresholds, shared by the runner that flags and the report that explains."""

# The guest's clock may disagree with the host's by this much before a run is flagged.
CLOCK_DRIFT_LIMIT = 0.05
# Shorter spans are dominated by console latency, not by the clocks: not judged.
CLOCK_MIN_SPAN_S = 0.2


def clock_ratio(agent_span_ns: int, host_span_ns: int) -> float | None:
    """The guest's time over the host's for one span, None when too short to judge."""
    if host_span_ns < CLOCK_MIN_SPAN_S * 1e9:
        return None
    return agent_span_ns / host_span_ns


def drifted(ratio: float) -> bool:
    return abs(ratio - 1) > CLOCK_DRIFT_LIMIT
