"""Per-request objects must not form reference cycles (measured: a Call<->Exchange cycle left garbage
for the collector and GC pauses under load): garbage the cyclic collector has to find costs pauses
under load. Both builds, keep-alive and new-connection requests."""

from __future__ import annotations

import gc

import fastnet
from fastnet.testing import MockResponse, MockServer


def _garbage_after(requests: int, headers: dict[str, str] | None) -> int:
    with MockServer() as server:
        server.default_response = MockResponse(200, body=b"ok")
        with fastnet.Client() as client:
            url = server.url("/")
            for _ in range(20):  # warm up: imports, caches, the pool
                _ = client.get(url, headers=headers).content
            gc.collect()
            gc.disable()
            try:
                for _ in range(requests):
                    assert client.get(url, headers=headers).content == b"ok"
                return gc.collect()
            finally:
                gc.enable()


def test_no_cycles_keep_alive_requests() -> None:
    assert _garbage_after(200, None) == 0


def test_no_cycles_new_connection_per_request() -> None:
    assert _garbage_after(100, {"Connection": "close"}) == 0
