"""The clock check's thresholds, shared by the runner that flags and the report that explains."""

# The guest's clock may disagree with the host's by this much before a run is flagged.
CLOCK_DRIFT_LIMIT = 0.05
# Shorter spans are dominated by console latency, not by the clocks: not judged.
CLOCK_MIN_SPAN_S = 0.2
