"""Thread safety, proven: one Client shared by 64 threads and by its dispatcher, under cancels and timeouts.

The supported way to use fastnet from many threads is one ``Client`` shared by all of them. This test
holds it to that: 64 threads run calls with ``execute()`` on one client while the same client's
dispatcher works through 10,000 enqueued calls, all against MockServers on three loopback hosts (in a
child process, tests/support/stress_server.py, so they share neither this process's GIL nor its descriptors).
A canceler thread cancels running calls at random moments, some calls are canceled before they start
(``call.cancel()`` or ``future.cancel()``), and some run on siblings with a short ``call_timeout``
against answers that are slow or dripped. Every answer names its request, so crossed connections
would show.

It asserts that nothing deadlocks (every thread and future finishes before a deadline), that every call
is accounted for exactly once (a response with the right body, or an error, never both, never lost; the
callback and the future agree), that the only errors are the ones asked for (``CanceledError`` for a
canceled call, ``CallTimeout`` for one with a call timeout), that the pool is back in balance (every
connection idle) and that ``/proc/self/fd`` is back to its count before the client existed.

Size: ``FASTNET_STRESS=full`` runs the issue's 64 threads × 2,000 requests; the default (what CI runs) is
64 threads × ``FASTNET_STRESS_REQUESTS`` (400) requests. The 10,000 enqueued calls run in both.
"""

from __future__ import annotations

import concurrent.futures
import gc
import os
import random
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import fastnet
from tests.support.clients import make_client
from tests.support.stress_server import body_for

FULL = os.environ.get("FASTNET_STRESS", "").lower() == "full"
THREADS = 64
PER_THREAD = 2000 if FULL else int(os.environ.get("FASTNET_STRESS_REQUESTS", "400"))
ENQUEUED = 10_000
DEADLINE = 600.0 if FULL else 110.0  # seconds for the whole run: past it, something hangs
HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
TIMEOUTS = (0.0, 0.05, 0.3)  # call_timeout of the client that runs a call (0.0: none)

pytestmark = pytest.mark.timeout(DEADLINE + 60)


@dataclass(frozen=True)
class Spec:
    ident: str
    url: str
    size: int
    timeout: float
    cancel_first: bool


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def servers() -> Iterator[dict[str, int]]:
    """The stress servers' ports by host, in a child process ended when the test ends."""
    script = Path(__file__).resolve().parents[1] / "support" / "stress_server.py"
    child = subprocess.Popen(
        [sys.executable, str(script), *HOSTS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdin is not None
    ports: dict[str, int] = {}
    try:
        for _ in range(len(HOSTS) + 1):
            line = child.stdout.readline().split()
            if line == ["ready"]:
                break
            ports[line[0]] = int(line[1])
        assert set(ports) == set(HOSTS), ports
        yield ports
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=10)
        child.stdout.close()


def plan(rng: random.Random, ident: str, ports: dict[str, int]) -> Spec:
    """One call's shape: mostly quick answers of assorted sizes, some slow or dripped, some timed."""
    host = rng.choice(HOSTS)
    roll = rng.random()
    if roll < 0.8:
        size = rng.choice((0, 100, 4096, 65536))
        path = f"/ok/{ident}?size={size}"
    elif roll < 0.9:
        size = 0
        path = f"/slow/{ident}?ms={rng.randrange(20, 150)}"
    else:
        size = rng.randrange(8192, 65536)
        path = f"/drip/{ident}?size={size}"
    timeout = TIMEOUTS[0] if rng.random() < 0.8 else rng.choice(TIMEOUTS[1:])
    return Spec(ident, f"http://{host}:{ports[host]}{path}", size, timeout, rng.random() < 0.03)


def allowed_errors(spec: Spec, canceled: set[str]) -> set[str]:
    allowed = set()
    if spec.cancel_first or spec.ident in canceled:
        allowed.add("CanceledError")
    if spec.timeout:
        allowed.add("CallTimeout")
    return allowed


def test_one_client_shared_by_threads_and_its_dispatcher(servers: dict[str, int]) -> None:
    gc.collect()
    fds_before = open_fds()
    started = time.monotonic()
    deadline = started + DEADLINE
    dispatcher = fastnet.Dispatcher(max_requests=64, max_requests_per_host=24)
    client = make_client(connect_timeout=10, read_timeout=20, dispatcher=dispatcher)
    clients = {t: client if not t else client.with_options(call_timeout=t) for t in TIMEOUTS}
    canceled: set[str] = set()  # idents some thread canceled (the call may have finished first)
    slots: list[tuple[str, Any] | None] = [None] * THREADS
    outcomes: list[list[tuple[Spec, str, Any]]] = [[] for _ in range(THREADS)]
    stop = threading.Event()

    def work(tid: int) -> None:
        rng = random.Random(tid)
        mine = outcomes[tid]
        for n in range(PER_THREAD):
            spec = plan(rng, f"t{tid}-{n}", servers)
            call = clients[spec.timeout].new_call(fastnet.Request("GET", spec.url))
            slots[tid] = (spec.ident, call)
            if spec.cancel_first:
                call.cancel()
            try:
                response = call.execute()
                body = response.read()
                mine.append((spec, "response", (response.status_code, body)))
            except fastnet.FastnetError as exc:
                mine.append((spec, type(exc).__name__, exc))
            except Exception as exc:  # noqa: BLE001 - anything else is a bug the asserts report
                where = "".join(traceback.format_exception(exc)[-6:])
                mine.append((spec, "unexpected " + type(exc).__name__, f"{exc!r} at {where}"))
            slots[tid] = None

    def cancel_at_random() -> None:
        rng = random.Random(-1)
        while not stop.wait(rng.uniform(0.0005, 0.004)):
            entry = slots[rng.randrange(THREADS)]
            if entry is not None:
                ident, call = entry
                canceled.add(ident)
                call.cancel()

    workers = [
        threading.Thread(target=work, args=(tid,), name=f"stress-{tid}", daemon=True)
        for tid in range(THREADS)
    ]
    canceler = threading.Thread(target=cancel_at_random, name="stress-canceler", daemon=True)
    for thread in [*workers, canceler]:
        thread.start()
    try:
        kinds = enqueue_and_check(servers, clients, canceled, workers, outcomes, deadline)
    finally:
        stop.set()  # whatever failed, the canceler ends (the workers end with their last call)
    canceler.join(10)
    assert not canceler.is_alive()

    # -- the pool is back in balance; the descriptors are back --------------------------------------
    pool = client.connection_pool
    assert pool.connection_count() == pool.idle_connection_count()
    assert dispatcher.running_calls_count() == 0 and dispatcher.queued_calls_count() == 0
    dispatcher.shutdown()
    for c in clients.values():
        c.close()
    assert pool.connection_count() == 0
    gc.collect()
    assert open_fds() == fds_before
    elapsed = time.monotonic() - started
    print(  # shown with -s: how big and how long
        f"\n{THREADS}x{PER_THREAD} executed + {ENQUEUED} enqueued in {elapsed:.1f} s; {dict(kinds)}"
    )


def enqueue_and_check(
    servers: dict[str, int],
    clients: dict[float, fastnet.Client],
    canceled: set[str],
    workers: list[threading.Thread],
    outcomes: list[list[tuple[Spec, str, Any]]],
    deadline: float,
) -> Counter[str]:
    """The dispatcher's side (10,000 calls enqueued at once, callbacks checked against futures) while
    the workers run; then every outcome of both sides checked."""
    callbacks: dict[str, list[tuple[str, Any]]] = {}
    callbacks_lock = threading.Lock()
    all_called = threading.Event()

    class Callback:
        def _record(self, call: Any, kind: str, payload: Any) -> None:
            ident = call.request.url.path.split("/")[2]
            with callbacks_lock:
                callbacks.setdefault(ident, []).append((kind, payload))
                if len(callbacks) == ENQUEUED:
                    all_called.set()

        def on_response(self, call: Any, response: fastnet.Response) -> None:
            self._record(call, "response", response)

        def on_failure(self, call: Any, error: BaseException) -> None:
            self._record(call, "failure", error)

    rng = random.Random(12345)
    enqueued: list[tuple[Spec, Any, concurrent.futures.Future[fastnet.Response]]] = []
    callback = Callback()
    for n in range(ENQUEUED):
        spec = plan(rng, f"q{n}", servers)
        call = clients[spec.timeout].new_call(fastnet.Request("GET", spec.url))
        if spec.cancel_first:
            canceled.add(spec.ident)
            call.cancel()
        enqueued.append((spec, call, call.enqueue(callback)))
        if rng.random() < 0.05:  # cancel an earlier one, queued or running: through its call or future
            other_spec, other_call, other_future = enqueued[rng.randrange(max(0, n - 300), n + 1)]
            canceled.add(other_spec.ident)
            if rng.random() < 0.5:
                other_call.cancel()
            else:
                other_future.cancel()

    # -- no deadlock: everything ends before the deadline ----------------------------------------
    futures = [future for _, _, future in enqueued]
    _, not_done = concurrent.futures.wait(futures, timeout=max(0.0, deadline - time.monotonic()))
    assert not not_done, f"{len(not_done)} enqueued calls never finished"
    assert all_called.wait(max(0.0, deadline - time.monotonic())), f"{len(callbacks)} callbacks of {ENQUEUED}"
    for thread in workers:
        thread.join(max(0.0, deadline - time.monotonic()))
    hung = [t.name for t in workers if t.is_alive()]
    assert not hung, f"threads still running at the deadline: {hung[:5]}..."

    # -- every execute() call accounted for exactly once ----------------------------------------
    kinds: Counter[str] = Counter()
    seen: set[str] = set()
    problems: list[str] = []
    for mine in outcomes:
        assert len(mine) == PER_THREAD
        for spec, kind, payload in mine:
            assert spec.ident not in seen
            seen.add(spec.ident)
            kinds[kind] += 1
            if kind == "response":
                status, body = payload
                if status != 200 or body != body_for(spec.ident, spec.size):
                    problems.append(f"{spec.ident}: {status}, {body[:40]!r} for {spec.url}")
            elif kind not in allowed_errors(spec, canceled):
                how = "canceled" if spec.ident in canceled else "not canceled"
                problems.append(f"{spec.ident} ({how}): {kind} {payload!r} for {spec}")
    assert len(seen) == THREADS * PER_THREAD

    # -- every enqueued call: one callback, agreeing with its future -----------------------------
    for spec, _call, future in enqueued:
        got = callbacks.get(spec.ident, [])
        assert len(got) == 1, f"{spec.ident}: {len(got)} callbacks"
        (kind, payload) = got[0]
        if future.cancelled():
            assert spec.ident in canceled
            kinds["future canceled"] += 1
            if kind != "failure" or not isinstance(payload, fastnet.CanceledError):
                problems.append(f"{spec.ident}: future canceled, callback {kind} {payload!r}")
            continue
        error = future.exception(0)
        if error is None:
            response = future.result(0)
            kinds["enqueued response"] += 1
            if kind != "response" or payload is not response:
                problems.append(f"{spec.ident}: future has a response, callback {kind} {payload!r}")
            elif response.status_code != 200 or response.content != body_for(spec.ident, spec.size):
                problems.append(f"{spec.ident}: {response.status_code}, {response.content[:40]!r}")
        else:
            kinds["enqueued " + type(error).__name__] += 1
            if kind != "failure" or payload is not error:
                problems.append(f"{spec.ident}: future failed with {error!r}, callback {kind} {payload!r}")
            elif type(error).__name__ not in allowed_errors(spec, canceled):
                problems.append(f"{spec.ident}: {error!r} for {spec}")
    assert not problems, f"{len(problems)} wrong outcomes ({dict(kinds)}), first: {problems[:10]}"
    return kinds
