"""HDR histograms for the load generator (from the ``hdrhistogram`` package, imported lazily).

Every value is in microseconds: from 0 up to one hour, three significant digits (a value is off by at
most 1 in 1000). ``Histograms`` holds one per measured quantity; ``summary()`` reads the figures a
report prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Protocol, TypedDict

    class Summary(TypedDict):
        """:func:`summary`'s figures (the fields of ``LatencyStats``)."""

        count: int
        min: float
        mean: float
        stdev: float
        p50: float
        p90: float
        p99: float
        p99_9: float
        max: float

    class IterationValue(Protocol):
        """One step of a histogram's iterators (``hdrh.iterators.HdrIterationValue``)."""

        value_iterated_to: int
        count_added_in_this_iter_step: int
        percentile_level_iterated_to: float

    class Histogram(Protocol):
        """What fastnet load uses of an ``hdrh.histogram.HdrHistogram`` (the package ships no types)."""

        highest_trackable_value: int

        def record_value(self, value: int, count: int = 1) -> bool: ...
        def get_total_count(self) -> int: ...
        def get_min_value(self) -> int: ...
        def get_max_value(self) -> int: ...
        def get_mean_value(self) -> float: ...
        def get_stddev(self) -> float: ...
        def get_percentile_to_value_dict(self, percentile_list: list[float]) -> dict[float, int]: ...
        def get_percentile_iterator(self, ticks_per_half_distance: int) -> Iterable[IterationValue]: ...
        def get_recorded_iterator(self) -> Iterable[IterationValue]: ...


__all__ = [
    "HIGHEST_US",
    "SIGNIFICANT_DIGITS",
    "Histograms",
    "MissingDependency",
    "log_bins",
    "new_histogram",
    "percentile_points",
    "require",
    "summary",
]

#: The largest value a histogram tracks (one hour, in µs); larger values are recorded as this.
HIGHEST_US = 3_600_000_000
SIGNIFICANT_DIGITS = 3


class MissingDependency(ImportError):
    """An optional dependency of ``fastnet load`` is not installed."""


def require(module: str, package: str) -> ModuleType:
    """Import ``module`` (from the PyPI package ``package``) or say how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"fastnet load needs the {package!r} package: "
            "pip install 'fastnet-http[load]' (from a checkout: pip install -e '.[load]'; "
            f"or pip install {package})"
        ) from exc


def new_histogram() -> Histogram:
    """An empty ``hdrh.histogram.HdrHistogram`` for microseconds, 1 µs to one hour, 3 digits."""
    hdrh = require("hdrh.histogram", "hdrhistogram")
    histogram: Histogram = hdrh.HdrHistogram(1, HIGHEST_US, SIGNIFICANT_DIGITS)
    return histogram


@dataclass
class Histograms:
    """One histogram per quantity the loop measures (µs)."""

    latency: Histogram
    first_byte: Histogram
    response: Histogram
    connect: Histogram
    dns: Histogram
    tls: Histogram
    lag: Histogram

    @classmethod
    def new(cls) -> Histograms:
        return cls(*(new_histogram() for _ in range(7)))


def summary(histogram: Histogram, scale: float = 1e-6) -> Summary | None:
    """count, min, mean, stdev, p50, p90, p99, p99.9 and max of ``histogram``, times ``scale`` (µs to s
    by default); ``None`` when it is empty."""
    count = int(histogram.get_total_count())
    if count == 0:
        return None
    values = histogram.get_percentile_to_value_dict([50.0, 90.0, 99.0, 99.9])
    return {
        "count": count,
        "min": histogram.get_min_value() * scale,
        "mean": histogram.get_mean_value() * scale,
        "stdev": histogram.get_stddev() * scale,
        "p50": values[50.0] * scale,
        "p90": values[90.0] * scale,
        "p99": values[99.0] * scale,
        "p99_9": values[99.9] * scale,
        "max": histogram.get_max_value() * scale,
    }


def percentile_points(histogram: Histogram, scale: float = 1e-6) -> list[tuple[float, float]]:
    """(percentile, value × ``scale``) points of the distribution, HdrHistogram's usual plot steps (five
    ticks per halving of the distance to 100%), duplicates of a value kept only at their highest level."""
    if histogram.get_total_count() == 0:
        return []
    points: list[tuple[float, float]] = []
    for item in histogram.get_percentile_iterator(5):
        point = (float(item.percentile_level_iterated_to), item.value_iterated_to * scale)
        if points and points[-1][1] == point[1] and point[0] < 100.0:
            points[-1] = point
        else:
            points.append(point)
    return points


def log_bins(histogram: Histogram, bins: int = 12, scale: float = 1e-6) -> list[tuple[float, int]]:
    """The recorded values in ``bins`` log-spaced bins from the minimum to the maximum: (upper bound ×
    ``scale``, count) each."""
    total = int(histogram.get_total_count())
    if total == 0:
        return []
    lo = max(1, int(histogram.get_min_value()))
    hi = max(lo, int(histogram.get_max_value()))
    if hi <= lo:
        return [(hi * scale, total)]
    ratio = (hi / lo) ** (1.0 / bins)
    edges = [lo * ratio ** (i + 1) for i in range(bins)]
    edges[-1] = float(hi)
    counts = [0] * bins
    i = 0
    for item in histogram.get_recorded_iterator():
        value = item.value_iterated_to
        while i < bins - 1 and value > edges[i]:
            i += 1
        counts[i] += int(item.count_added_in_this_iter_step)
    return [(edge * scale, count) for edge, count in zip(edges, counts, strict=True)]
