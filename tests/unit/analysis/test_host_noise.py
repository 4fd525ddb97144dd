"""compare knows the host: each side's load, steal and typical variation, and the verdicts a
noisier host explains (fake environment, real CLI and store)."""

from __future__ import annotations

import json

import pytest

from guestbench import host
from guestbench.analysis.host_noise import HostNoise, explain, explains, of
from tests.unit.analysis.test_compare import compare, run_campaign  # noqa: F401 (fixture)


def _noise(load: float | None, steal: float | None = 0.0, cpus: int = 2) -> HostNoise:
    return HostNoise(load, "while it ran", load, steal, 0.02, cpus)


@pytest.mark.parametrize("a, b, side", [
    (_noise(0.4), _noise(5.7), "B"),  # the case: load 5.7 against 0.4
    (_noise(5.7), _noise(0.4), "A"),
    (_noise(1.0), _noise(1.4), None),  # both at rest with a campaign's own load
    (_noise(0.4), _noise(1.3), None),  # under 3/4 of 2 CPUs: the runs do not compete
    (_noise(30.0, cpus=64), _noise(10.0, cpus=64), None),  # 30 of 64 CPUs: room for all
    (_noise(60.0, cpus=64), _noise(10.0, cpus=64), "A"),
    (_noise(0.4, steal=0.2), _noise(0.5, steal=6.0), "B"),  # B's outer hypervisor took CPUs
    (_noise(0.4, steal=None), _noise(0.5, steal=6.0), None),  # unknown steal explains nothing
    (_noise(None), _noise(None), None),
])
def test_which_host_explains(a, b, side) -> None:
    found = explain(a, b)
    assert (found.side if found else None) == side
    if found:
        assert found.reason.startswith(f"{side}'s host ")


def test_a_noisy_side_explains_only_what_goes_its_way() -> None:
    loaded_b = explain(_noise(0.4), _noise(5.7))
    assert explains(loaded_b, worse_in_b=True)  # slower in B, B was loaded
    assert not explains(loaded_b, worse_in_b=False)  # faster in B although loaded: real
    assert not explains(None, worse_in_b=True)


def test_old_campaigns_without_samples_use_the_load_at_their_start() -> None:
    checks = {"before": {"load_avg": [2.5, 1.0, 0.5], "logical_cpus": 2}, "steal_pct": 0.1}
    noise = of(checks, None)
    assert (noise.load, noise.load_when, noise.logical_cpus) == (2.5, "at its start", 2)
    sampled = of({**checks, "load_during": {"median": 3.0, "max": 3.5, "samples": 7}}, None)
    assert (sampled.load, sampled.load_when, sampled.load_max) == (3.0, "while it ran", 3.5)
    assert of(None, None).load is None  # a campaign stored before the checks: unknown
    assert of({"before": {"load_avg": ["x"]}, "steal_pct": "y"}, None).steal_pct is None


def test_a_slower_b_on_a_loaded_host_is_marked_and_fails_the_gate_unless_forgiven(
        run_campaign, monkeypatch) -> None:  # noqa: F811 (the fixture)
    """compare judged native getpid SLOWER 1.82x at load 5.7 against 0.4, and never said
    so (2026-11-27). Here B is slower by its spec (scale) and its host reads loaded. The
    gate counts it: a change that loads the host itself must not pass."""
    monkeypatch.setattr(host, "load_now", lambda: 0.4)
    run_campaign("quiet")
    monkeypatch.setattr(host, "load_now", lambda: 5.7)
    run_campaign("loaded", scale=1.2)
    same = ("--ignore-spec", "scale")
    gate = compare(run_campaign, "quiet", "loaded", "--fail-on-regression", *same)
    assert gate.exit_code == 1, gate.output
    words = " ".join(gate.stdout.split())  # the terminal wraps the note
    assert "SLOWER (host)" in words
    assert "B's host was loaded (load 5.70 against 0.40, " in words
    assert "Rerun both on a quiet host, or use 'guestbench ab', which interleaves" in words
    assert ("2 cell(s) slower in B (--fail-on-regression); 2 of those cells the hosts' noise "
            "may explain") in gate.stderr
    old_flag = compare(run_campaign, "quiet", "loaded", "--fail-on-regression", "--strict", *same)
    assert old_flag.exit_code == 1, old_flag.output
    forgiven = compare(run_campaign, "quiet", "loaded", "--fail-on-regression",
                       "--forgive-host-noise", *same)
    assert forgiven.exit_code == 0, forgiven.output
    assert "2 cell(s) slower in B where the hosts' noise explains it, not counted" \
        in forgiven.stderr
    document = json.loads(compare(run_campaign, "quiet", "loaded", "--format", "json",
                                  *same).stdout)
    noise = document["host_noise"]
    assert (noise["a"]["load_avg_1min"], noise["b"]["load_avg_1min"]) == (0.4, 5.7)
    assert noise["a"]["load_when"] == "while it ran"
    assert noise["explained_by"]["side"] == "B"
    marked = {(c["environment"], c["verdict"]) for c in document["cells"] if c["host_explained"]}
    assert marked == {("vm", "slower")}
    # the other way round, B is faster, and A's load explains that as much
    reverse = compare(run_campaign, "loaded", "quiet", "--fail-on-regression", *same)
    assert reverse.exit_code == 0
    assert "faster (host)" in reverse.stdout and "SLOWER" not in reverse.stdout
    assert "A's host was loaded" in " ".join(reverse.stdout.split())
