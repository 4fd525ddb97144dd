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


def test_a_tiny_value_is_written_in_fixed_point():
    """The efficiency table wrote a start's 21 us of host time as '2.13e-05' (2026-11-29)."""
    from guestbench.report.tables.efficiency import _seconds
    assert model.format_value(2.13e-05) == "0.0000213"
    assert _seconds(2.13e-05) == "0.0000213" and _seconds(1234.5) == "1230"
    assert model.format_value(0.000123) == "0.000123" and model.format_value(12.5) == "12.5"


def test_the_published_check_counts_what_a_reader_should_not_see():
    """tests/support/published_check.py, which the seed tests and the closing notes use."""
    from tests.support import published_check
    markdown = "\n".join([
        "### Boot phases: median duration per phase, ms", "",
        "| phase (ms) | uml | qemu |", "|---|---:|---:|",
        "| boot_clock_zero | -29 | 2.1e+03 |", "",
        "[1] unstable (native, uml): its runs vary", "[2] kvm: not run here: no KVM"])
    found = published_check.counts(markdown)
    assert [len(items) for items in found.values()] == [1, 2, 1, 1], found


def test_a_count_gets_no_decimals_and_a_figure_keeps_two_significant_digits():
    """With decimals = 1 (boot in s as the seed writes it), counts read "20.0" and a 0.2666 s
    upload "0.3" (2026-11-28)."""
    with model.styled(model.Style(plain=True, decimals=1)):
        assert model.format_count(20.0) == "20" and model.format_count(2.5) == "2.5"
        assert model.format_value(0.2666) == "0.27" and model.format_value(3.94) == "3.9"
    assert model.format_count(10000.0) == "10k"  # without decimals, as any figure
