"""HDR histograms for the load generator (from the ``hdrhistogram`` package, imported lazily).

Every value is in microseconds: from 0 up to one hour, three significant digits (a value is off by at
most 1 in 1000). ``Histograms`` holds one per measured quantity; ``summary()`` reads the figures a
report prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "HIGHEST_US",
    "SIGNIFICANT_DIGITS",
    "Histograms",
    "MissingDependency",
    "new_histogram",
    "require",
    "summary",
]

#: The largest value a histogram tracks (one hour, in µs); larger values are recorded as this.
HIGHEST_US = 3_600_000_000
SIGNIFICANT_DIGITS = 3


class MissingDependency(ImportError):
    """An optional dependency of ``fastnet load`` is not installed."""


def require(module: str, package: str) -> Any:
    """Import ``module`` (from the PyPI package ``package``) or say how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"fastnet load needs the {package!r} package: pip install 'fastnet[load]' (or pip install {package})"
        ) from exc


def new_histogram() -> Any:
    """An empty ``hdrh.histogram.HdrHistogram`` for microseconds, 1 µs to one hour, 3 digits."""
    hdrh = require("hdrh.histogram", "hdrhistogram")
    return hdrh.HdrHistogram(1, HIGHEST_US, SIGNIFICANT_DIGITS)


@dataclass
class Histograms:
    """One histogram per quantity the loop measures (µs)."""

    latency: Any
    first_byte: Any
    connect: Any
    dns: Any
    tls: Any
    lag: Any

    @classmethod
    def new(cls) -> Histograms:
        return cls(*(new_histogram() for _ in range(6)))


def summary(histogram: Any, scale: float = 1e-6) -> dict[str, float | int] | None:
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
