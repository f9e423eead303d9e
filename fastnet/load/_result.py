"""The result of a load run: what ``fastnet.load.run()`` returns and ``fastnet load`` prints.

Times are seconds (floats), sizes bytes. ``to_dict()`` is the ``--json`` document (schema version
``SCHEMA_VERSION``, checked by ``tests/load/result.schema.json``); the text and HTML reports are drawn
from the same object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastnet.load._hist import Histogram, Summary

__all__ = ["SCHEMA_VERSION", "ErrorGroup", "Generator", "LatencyStats", "LoadResult", "stats_from"]

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class LatencyStats:
    """Figures of one HDR histogram, in seconds (count is a number of values)."""

    count: int
    min: float
    mean: float
    stdev: float
    p50: float
    p90: float
    p99: float
    p99_9: float
    max: float

    def to_dict(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "min": self.min,
            "mean": self.mean,
            "stdev": self.stdev,
            "p50": self.p50,
            "p90": self.p90,
            "p99": self.p99,
            "p99_9": self.p99_9,
            "max": self.max,
        }


def stats_from(summary: Summary | None) -> LatencyStats | None:
    if summary is None:
        return None
    return LatencyStats(**summary)


@dataclass(frozen=True)
class ErrorGroup:
    """Failed requests of one kind: the error type (with the errno name where there is one), how many,
    and the first message as an example."""

    type: str
    count: int
    example: str


@dataclass(frozen=True)
class Generator:
    """How busy the generator's loop thread was (fractions of the wall time).

    ``demand`` is time on a CPU plus time runnable but waiting for one; ``saturated`` when it is at least
    90%: then the load tool, not the server, set the pace. ``lag`` (open loop only) is how late sends
    went out against the timetable while a connection was free, i.e. the generator's own lateness.
    """

    cpu: float
    waiting: float
    demand: float
    saturated: bool
    lag: LatencyStats | None
    note: str


@dataclass
class LoadResult:
    """Everything a load run measured. ``requests_per_second`` counts completed responses."""

    urls: list[str]
    engine: str
    connections: int
    method: str
    keepalive: bool
    rate: float | None
    requests_limit: int | None
    duration_limit: float | None
    stopped_by: str
    elapsed: float
    completed: int
    failed: int
    abandoned: int
    backlog: int
    bytes_received: int
    connections_opened: int
    latency: LatencyStats | None
    phases: dict[str, LatencyStats | None]
    status_codes: dict[int, int]
    errors: list[ErrorGroup]
    generator: Generator
    #: (percentile, seconds) points of the latency distribution, for plots.
    percentiles: list[tuple[float, float]] = field(default_factory=list)
    #: (upper bound in seconds, count) bins of the latency histogram (log-spaced), for plots.
    histogram: list[tuple[float, int]] = field(default_factory=list)
    #: The latency ``hdrh.histogram.HdrHistogram`` (µs) itself, for further analysis; not serialised.
    latency_histogram: Histogram | None = field(default=None, repr=False, compare=False)

    @property
    def requests(self) -> int:
        """Requests that ended, with a response or an error."""
        return self.completed + self.failed

    @property
    def requests_per_second(self) -> float:
        return self.completed / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def bytes_per_second(self) -> float:
        return self.bytes_received / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def interrupted(self) -> bool:
        return self.stopped_by == "interrupt"

    def to_dict(self) -> dict[str, object]:
        """The ``--json`` document."""
        g = self.generator
        return {
            "schema": SCHEMA_VERSION,
            "urls": list(self.urls),
            "engine": self.engine,
            "options": {
                "connections": self.connections,
                "method": self.method,
                "keepalive": self.keepalive,
                "rate": self.rate,
                "requests": self.requests_limit,
                "duration": self.duration_limit,
            },
            "stopped_by": self.stopped_by,
            "elapsed": self.elapsed,
            "requests": self.requests,
            "completed": self.completed,
            "failed": self.failed,
            "abandoned": self.abandoned,
            "backlog": self.backlog,
            "requests_per_second": self.requests_per_second,
            "bytes_received": self.bytes_received,
            "bytes_per_second": self.bytes_per_second,
            "connections_opened": self.connections_opened,
            "latency": self.latency.to_dict() if self.latency is not None else None,
            "phases": {name: (s.to_dict() if s is not None else None) for name, s in self.phases.items()},
            "status_codes": {str(code): count for code, count in sorted(self.status_codes.items())},
            "errors": [{"type": e.type, "count": e.count, "example": e.example} for e in self.errors],
            "generator": {
                "cpu": g.cpu,
                "waiting": g.waiting,
                "demand": g.demand,
                "saturated": g.saturated,
                "lag": g.lag.to_dict() if g.lag is not None else None,
                "note": g.note,
            },
            "percentiles": [[p, v] for p, v in self.percentiles],
            "histogram": [[le, n] for le, n in self.histogram],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)
