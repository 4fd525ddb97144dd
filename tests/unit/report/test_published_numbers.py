"""Numbers a published table shows: no scientific notation in a "% of native", no +++++ in a
percentage (bonnie++'s "too fast" is no number), the baseline's own row 100, and a build
under a second in seconds, not "0m00"."""

from __future__ import annotations

from guestbench.report import model
from tests.support.campaigns import Campaign
from tests.support.samples import THREE


def test_a_share_is_never_written_in_scientific_notation():
    assert model.format_share(1090.4) == "1090"  # '1.09e+03' before
    assert model.format_share(1234567.0) == "1230000"
    assert model.format_share(10.54) == "10.5" and model.format_share(7.0) == "7"
    assert model.format_share(99.96) == "100"


def test_a_build_under_a_second_is_written_in_seconds():
    assert model.format_clock(0.42) == "0.42 s"  # '0m00' said nothing of it
    assert model.format_clock(113.0) == "1m53" and model.format_clock(43.0) == "0m43"


def test_bonnie_s_percent_table_has_no_plus_signs_and_the_baseline_at_100(store):
    """out per chr too fast to time in native's runs (bonnie++'s +++++), measured in the
    guest: no share of +++++ can be taken, so 'n/a', and native's own row reads 100."""
    campaign = Campaign(store, {"native": {}, "tcg": {"kind": "qemu"}}, baseline="native")
    for env, factor in (("native", 1.0), ("tcg", 0.1)):
        for jitter in THREE:
            samples = [("out_block", "KiB/s", 500000 * factor * jitter),
                       ("rewrite", "KiB/s", 200000 * factor * jitter)]
            if env == "tcg":
                samples.append(("out_char", "KiB/s", 900 * jitter))
            campaign.run(env, "bonnie", samples,
                         flags=("too-fast:out_char",) if env == "native" else ())
    percent = campaign.tables()["bonnie-percent"]
    native = next(row for row in percent.rows if row[0] == "native")
    tcg = next(row for row in percent.rows if row[0] == "tcg")
    assert native[1:4] == ["100", "100", "100"], native
    assert tcg[1] == "n/a" and tcg[2:4] == ["10", "10"], tcg
    assert not any("+++++" in cell for row in percent.rows for cell in row)
    assert "n/a: bonnie++ printed +++++" in percent.note
