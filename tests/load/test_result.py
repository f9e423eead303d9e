"""A load run's result (``fastnet/load/_result.py``): the derived figures, ``to_dict`` as the ``--json``
document (validated against tests/load/result.schema.json, the schema the README points to) and
``to_json``. On a ``LoadResult`` made from real HDR histograms (``tests.support.loadkit``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from fastnet.load._result import SCHEMA_VERSION, LatencyStats, stats_from
from tests.support.loadkit import sample_result

if TYPE_CHECKING:
    from fastnet.load._hist import Summary

pytest.importorskip("hdrh")
jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads((Path(__file__).parent / "result.schema.json").read_text())


def test_result_derived_figures() -> None:
    result = sample_result(completed=100, failed=5, elapsed=4.0, bytes_received=2000)
    assert result.requests == 105
    assert result.requests_per_second == 25.0 and result.bytes_per_second == 500.0
    assert not result.interrupted and sample_result(stopped_by="interrupt").interrupted
    zero = sample_result(elapsed=0.0)
    assert zero.requests_per_second == 0.0 and zero.bytes_per_second == 0.0


def test_result_to_dict_is_the_json_document_of_the_schema() -> None:
    result = sample_result(rate=50.0, duration_limit=2.0, requests_limit=None)
    document = result.to_dict()
    jsonschema.validate(document, SCHEMA)
    assert document["schema"] == SCHEMA_VERSION == 1
    assert document["options"] == {
        "connections": 4,
        "method": "GET",
        "keepalive": True,
        "rate": 50.0,
        "requests": None,
        "duration": 2.0,
    }
    assert document["status_codes"] == {"200": 100, "503": 1}  # JSON keys: strings, sorted
    phases = document["phases"]
    assert isinstance(phases, dict)
    assert phases["dns"] is None and phases["connect"]["count"] == 1
    assert document["errors"] == [
        {"type": "ConnectError (ECONNREFUSED)", "count": 2, "example": result.errors[0].example}
    ]
    latency = document["latency"]
    assert isinstance(latency, dict)
    assert latency["p99_9"] == result.latency.p99_9  # type: ignore[union-attr]
    assert document["histogram"] == [[upper, n] for upper, n in result.histogram]
    assert "latency_histogram" not in document


def test_result_to_json_round_trips() -> None:
    result = sample_result()
    assert json.loads(result.to_json()) == json.loads(json.dumps(result.to_dict()))
    assert "\n" not in result.to_json(indent=None)
    jsonschema.validate(json.loads(result.to_json()), SCHEMA)


def test_result_a_run_without_responses_is_still_a_valid_document() -> None:
    empty = sample_result(
        [1],
        completed=0,
        latency=None,
        phases=dict.fromkeys(("dns", "connect", "tls", "first_byte", "response")),
        status_codes={},
        errors=[],
        percentiles=[],
        histogram=[],
    )
    document = empty.to_dict()
    jsonschema.validate(document, SCHEMA)
    assert document["latency"] is None and document["requests_per_second"] == 0.0


def test_result_stats_from_a_summary() -> None:
    assert stats_from(None) is None
    figures = {"count": 3, "min": 1.0, "mean": 2.0, "stdev": 0.5, "p50": 2.0, "p90": 3.0, "p99": 3.0}
    stats = stats_from(cast("Summary", {**figures, "p99_9": 3.0, "max": 3.0}))
    assert isinstance(stats, LatencyStats) and stats.to_dict() == {**figures, "p99_9": 3.0, "max": 3.0}
    with pytest.raises(TypeError):
        stats_from({"count": 1})  # type: ignore[arg-type]
