"""report --format bmf and github-action-benchmark over a real native campaign, checked
against the formats' schemas: Bencher's BMF (bencher.dev/docs/reference/bencher-metric-format)
and github-action-benchmark's custom-tool entries (its src/extract.ts: an array of
{name: string, value: number, unit: string, range?: string, extra?: string})."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

pytestmark = pytest.mark.integration
GUESTBENCH = [sys.executable, "-m", "guestbench"]

METRIC = {"type": "object", "required": ["value"], "properties": {
    "value": {"type": "number"}, "lower_value": {"type": "number"},
    "upper_value": {"type": "number"}}}
BMF = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
       "additionalProperties": {"type": "object", "additionalProperties": METRIC,
                                "propertyNames": {"minLength": 1, "maxLength": 64}},
       "propertyNames": {"minLength": 1, "maxLength": 1024}}
ENTRY = {"type": "object", "required": ["name", "value", "unit"], "additionalProperties": False,
         "properties": {"name": {"type": "string"}, "value": {"type": "number"},
                        "unit": {"type": "string"}, "range": {"type": "string"},
                        "extra": {"type": "string"}}}
ACTION = {"type": "array", "items": ENTRY}


def test_the_dashboard_exports_of_a_real_campaign_match_their_schemas(tmp_path, available):
    available("native")
    done = subprocess.run([*GUESTBENCH, "run", "--env", "native", "--workload",
                           "getpid,stream_triad", "--repeat", "3", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    def export(name: str):
        shown = subprocess.run([*GUESTBENCH, "report", "--format", name], cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout)

    bmf = export("bmf")
    jsonschema.validate(bmf, BMF)
    getpid = bmf["native/getpid"]["time_per_op (ns)"]
    assert getpid["lower_value"] <= getpid["value"] <= getpid["upper_value"]
    action = export("github-action-benchmark")
    for direction in ("customSmallerIsBetter", "customBiggerIsBetter"):
        jsonschema.validate(action[direction], ACTION)  # what the action reads from one file
    smaller = {entry["name"] for entry in action["customSmallerIsBetter"]}
    bigger = {entry["name"] for entry in action["customBiggerIsBetter"]}
    assert "native/getpid time_per_op" in smaller
    assert any(name.startswith("native/stream_triad") for name in bigger)  # MB/s
