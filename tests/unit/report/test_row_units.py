"""Each row's unit comes from its own values, the same in every table, and never reads
"1.781M us" (2026-11-27: runsc's start-up teardown did, runc's "39.97k us", and history
showed malloc as "387.4k ns")."""

from __future__ import annotations

from guestbench.report import model


def test_a_row_from_microseconds_to_seconds_reads_in_milliseconds() -> None:
    # native's teardown 20 us, runc's 39.97 ms, runsc's 1.781 s: in ns, as stored
    unit, divisor = model.value_scale("ns", [20_100.0, 39_970_000.0, 1_781_000_000.0])
    assert unit == "ms"
    assert [model.format_value(value / divisor) for value in (20_100.0, 1_781_000_000.0)] == [
        "0.0201", "1781"]


def test_a_series_of_hundreds_of_microseconds_reads_in_microseconds() -> None:
    unit, divisor = model.value_scale("ns", [387_400.0, 391_000.0])
    assert (unit, model.format_value(387_400.0 / divisor)) == ("us", "387.4")


def test_no_value_of_a_time_row_needs_a_suffix_of_m_or_more() -> None:
    for values in ([1.0, 1e9], [150.0, 4e6], [5e3, 2e12], [30.0, 99_999.0]):
        unit, divisor = model.value_scale("ns", values)
        assert all("M" not in model.format_value(value / divisor) and value / divisor < 1e5
                   for value in values), (values, unit)


def test_other_units_and_plain_units_stay_as_they_are() -> None:
    assert model.value_scale("MB/s", [1.0, 1e7]) == ("MB/s", 1.0)
    token = model.UNITS.set("plain")
    try:
        assert model.value_scale("ns", [1e3, 1e9]) == ("ns", 1.0)
    finally:
        model.UNITS.reset(token)
