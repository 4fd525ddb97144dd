"""The runner, in four parts: schedule.py (the cells a campaign owes and when each stops),
campaign.py (the Runner: environments probed, rounds run, runs stored), outcomes.py (a
run's records judged into a status) and caches.py (the host's caches dropped)."""

from guestbench.runner.campaign import Interrupted, Progress, Runner
from guestbench.runner.outcomes import Outcome, Status
from guestbench.runner.schedule import StopReason

__all__ = ["Interrupted", "Outcome", "Progress", "Runner", "Status", "StopReason"]
