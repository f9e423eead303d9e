"""The load generator's HDR histograms (``fastnet/load/_hist.py``): microseconds from 1 µs to an hour at
three significant digits, ``summary`` (the figures a report prints, scaled to seconds), the percentile
plot's points and the log-spaced bins, and the error that names the package to install."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from fastnet.load._hist import (
    HIGHEST_US,
    Histograms,
    MissingDependency,
    log_bins,
    new_histogram,
    percentile_points,
    require,
    summary,
)

if TYPE_CHECKING:
    from fastnet.load._hist import Histogram

pytest.importorskip("hdrh")


def histogram_of(*values: int) -> Histogram:
    histogram = new_histogram()
    for value in values:
        histogram.record_value(value)
    return histogram


def test_hist_empty_histograms_have_no_figures() -> None:
    empty = new_histogram()
    assert summary(empty) is None and percentile_points(empty) == [] and log_bins(empty) == []


def test_hist_summary_in_seconds_within_three_digits() -> None:
    figures = summary(histogram_of(*range(1000, 2000)))  # 1.000 ms .. 1.999 ms, one each
    assert figures is not None and figures["count"] == 1000
    assert figures["min"] == pytest.approx(0.001, rel=1e-3)
    assert figures["max"] == pytest.approx(0.001999, rel=1e-3)
    assert figures["p50"] == pytest.approx(0.0015, rel=1e-3)
    assert figures["p90"] == pytest.approx(0.0019, rel=1e-3)
    assert figures["mean"] == pytest.approx(0.0015, rel=1e-3)
    assert set(figures) == {"count", "min", "mean", "stdev", "p50", "p90", "p99", "p99_9", "max"}
    assert summary(histogram_of(5), scale=1.0)["max"] == 5  # type: ignore[index]


def test_hist_tracks_up_to_an_hour() -> None:
    figures = summary(histogram_of(1, HIGHEST_US))
    assert figures is not None and figures["max"] == pytest.approx(3600.0, rel=1e-3)


def test_hist_percentile_points_rise_to_100_each_value_once() -> None:
    points = percentile_points(histogram_of(*([1000] * 90 + [5000] * 9 + [90_000])))
    levels = [p for p, _ in points]
    values = [v for _, v in points]
    assert levels == sorted(levels) and values == sorted(values) and levels[-1] == 100.0
    assert values[-1] == pytest.approx(0.09, rel=1e-3)
    assert len(set(values[:-1])) == len(values[:-1])  # a value kept only at its highest level (but 100%)


def test_hist_log_bins_count_every_value_between_min_and_max() -> None:
    values = [100] * 10 + [1_000] * 5 + [100_000]
    bins = log_bins(histogram_of(*values), bins=10)
    assert len(bins) == 10 and sum(n for _, n in bins) == len(values)
    uppers = [upper for upper, _ in bins]
    assert uppers == sorted(uppers) and uppers[-1] == pytest.approx(0.1, rel=1e-3)
    assert bins[0][1] == 10 and bins[-1][1] == 1
    assert log_bins(histogram_of(7, 7, 7)) == [(7e-6, 3)]  # one value: one bin


def test_hist_histograms_one_per_quantity() -> None:
    histograms = Histograms.new()
    quantities = ("latency", "first_byte", "response", "connect", "dns", "tls", "lag")
    assert len({id(getattr(histograms, q)) for q in quantities}) == 7
    histograms.latency.record_value(10)
    assert histograms.lag.get_total_count() == 0


def test_hist_require_names_the_package_to_install() -> None:
    assert require("json", "json").dumps([]) == "[]"
    with pytest.raises(
        MissingDependency,
        match=(
            r"pip install 'fastnet-http\[load\]' "
            r"\(from a checkout: pip install -e '\.\[load\]'; or pip install nopkg\)"
        ),
    ):
        require("no_such_module_here", "nopkg")
    assert issubclass(MissingDependency, ImportError)
