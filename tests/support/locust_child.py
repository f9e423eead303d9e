"""What the Locust tests run in a child process (Locust monkey-patches the process that imports it).

    python locust_child.py table ENGINE SPEC_JSON       the table with FastnetUser's or FastHttpUser's client
    python locust_child.py overlap ENGINE URL USERS [T]  USERS users in one local runner, one request each
    python locust_child.py api BASE_URL                  FastnetUser's API (catch_response, rest, cookies...)
    python locust_child.py gevent-idle URL               a keep-alive connection reused after 1.3 s idle
    python locust_child.py gevent-late URL               fastnet imported before gevent patched: timeouts hold

Each prints one JSON document on its last line of stdout. ENGINE is ``fastnet`` or ``stock``.
"""

from __future__ import annotations

import sys

if sys.argv[1] == "gevent-late":
    import fastnet  # noqa: F401 - before the monkey-patching, on purpose

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import ssl  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import gevent  # noqa: E402


def classify(error: BaseException | None) -> str | None:
    """A Locust failure as the table's error kind (neither client raises: the error is on the response)."""
    if error is None:
        return None
    from locust.contrib.fasthttp import LocustBadStatusCode

    import fastnet

    if isinstance(error, (fastnet.HTTPStatusError, LocustBadStatusCode)):
        return "status"
    if isinstance(error, fastnet.ConnectTimeout):
        return "connect_timeout"
    if isinstance(error, fastnet.ReadTimeout):
        return "read_timeout"
    if isinstance(error, (fastnet.TlsError, ssl.SSLError)):
        return "ssl"
    if isinstance(error, fastnet.ProxyError):
        return "proxy"
    if isinstance(error, (fastnet.ConnectError, ConnectionRefusedError)):
        return "refused"
    if isinstance(error, (TimeoutError, gevent.Timeout)):
        return "timeout"  # geventhttpclient: one class for connect and read timeouts
    return "failed"


def run_table(engine: str, spec: dict[str, Any]) -> list[dict[str, Any]]:
    from locust.env import Environment

    from fastnet.contrib.locust import FastnetSession, shared_client

    env = Environment()
    events: list[dict[str, Any]] = []
    env.events.request.add_listener(lambda **kw: events.append(kw))
    results = []
    for case in spec["cases"]:
        connect, read = case["timeout"]
        proxy = case["proxy"]
        verify_ca = case["verify"]
        if engine == "fastnet":
            client = shared_client(
                connection_timeout=connect,
                network_timeout=read,
                verify=spec["ca"] if verify_ca else True,
                proxy=proxy,
            )
            session: Any = FastnetSession(None, env.events.request, None, client)
        else:
            from locust.contrib.fasthttp import FastHttpSession

            host = port = None
            if proxy:
                hostport = proxy.rpartition("@")[2].partition("://")[2] or proxy.rpartition("@")[2]
                host, _, port_text = hostport.rpartition(":")
                port = int(port_text)
            session = FastHttpSession(
                None,
                env.events.request,
                None,
                insecure=False,
                ssl_context_factory=(lambda ca=spec["ca"]: ssl.create_default_context(cafile=ca))
                if verify_ca
                else ssl.create_default_context,
                connection_timeout=connect,
                network_timeout=read,
                proxy_host=host,
                proxy_port=port,
            )
        before = len(events)
        kwargs: dict[str, Any] = {"headers": dict(case["headers"]) or None}
        if case["body"] is not None:
            kwargs["data"] = case["body"].encode("latin-1")
        started = time.monotonic()
        try:
            r = session.request(case["method"], case["url"], stream=case["stream"], **kwargs)
        except Exception as exc:  # noqa: BLE001 - the client raised instead of reporting a failure
            results.append({"id": case["id"], "raised": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        out: dict[str, Any] = {
            "id": case["id"],
            "status": r.status_code,
            "elapsed": time.monotonic() - started,
        }
        if case["stream"]:
            piece = next(iter(r.iter_content(1024, decode_content=False)), None) if r.status_code else None
            out["first_chunk"] = piece.decode("latin-1") if piece else None
        else:
            content = r.content
            out["body"] = content.decode("latin-1") if content is not None else None
        headers = r.headers
        out["headers"] = {
            name.lower(): headers[name] for name in case["header_names"] if headers and name in headers
        }
        out["error"] = classify(getattr(r, "error", None))
        out["error_type"] = type(getattr(r, "error", None)).__name__
        fired = events[before:]
        out["events"] = len(fired)
        if fired:
            out["event_exception"] = classify(fired[0]["exception"])
            out["event_name"] = fired[0]["name"]
            out["event_length"] = fired[0]["response_length"]
            out["event_time_ms"] = fired[0]["response_time"]
        results.append(out)
    return results


def run_overlap(engine: str, url: str, users: int, timeout: float = 10.0) -> dict[str, Any]:
    """``users`` users start at once; each sends one request (which the server answers after a delay,
    or which cannot connect), with ``timeout`` as both the connect and the network timeout."""
    from locust import constant, task
    from locust.contrib.fasthttp import FastHttpUser
    from locust.env import Environment
    from locust.exception import StopUser

    from fastnet.contrib.locust import FastnetUser

    base = FastnetUser if engine == "fastnet" else FastHttpUser
    intervals: list[tuple[float, float]] = []
    done: list[int] = []

    class Once(base):  # type: ignore[valid-type, misc]
        host = url.rsplit("/", 1)[0]
        wait_time = constant(0)
        connection_timeout = timeout
        network_timeout = timeout

        @task
        def one(self) -> None:
            self.client.get("/" + url.rsplit("/", 1)[1])
            done.append(1)
            raise StopUser()

    env = Environment(user_classes=[Once])

    def record(start_time: float, response_time: float, exception: Any, **_: Any) -> None:
        intervals.append((start_time, start_time + response_time / 1000))
        if exception is not None:
            errors.append(repr(exception))

    errors: list[str] = []
    env.events.request.add_listener(record)
    runner = env.create_local_runner()
    started = time.monotonic()
    runner.start(users, spawn_rate=10_000)
    deadline = started + 30
    while len(done) + len(errors) < users and time.monotonic() < deadline:
        gevent.sleep(0.05)
    wall = time.monotonic() - started
    runner.quit()
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return {"requests": len(intervals), "done": len(done), "errors": errors[:5], "wall": wall, "peak": peak}


def run_api(base: str, elsewhere: str) -> dict[str, Any]:
    """FastnetUser's API as a locustfile uses it: catch_response, name=, rename_request, rest(), json=,
    cookies, allow_redirects, credentials in the host URL. ``base`` answers by path (see the test)."""
    from locust.env import Environment

    from fastnet.contrib.locust import FastnetUser

    events: list[dict[str, Any]] = []

    class Api(FastnetUser):
        host = base.replace("http://", "http://alice:s3cret@")

    env = Environment(user_classes=[Api])
    env.events.request.add_listener(lambda **kw: events.append(kw))
    user = Api(env)
    other = Api(env)
    out: dict[str, Any] = {}
    with user.client.get("/missing", catch_response=True) as r:
        out["missing_status"] = r.status_code
        r.success()
    with user.client.get("/ok", catch_response=True, name="grouped") as r:
        r.failure("not what I wanted")
    with user.client.rename_request("renamed"):
        user.client.get("/ok?x=1")
    with user.rest("GET", "/json") as rest:
        # rest() sets Locust's ``js`` on the response, which fastnet.contrib.locust's ResponseContextManager
        # does not declare (Locust's RestResponseContextManager does): a gap in the package's types
        out["js"] = rest.js  # type: ignore[attr-defined]
    user.client.post("/echo", json={"a": 1})
    try:  # NaN is no JSON: refused before anything is sent (no request event)
        user.client.post("/echo", json={"a": float("nan")})
    except ValueError as exc:
        out["nan_refused"] = str(exc)
    user.client.get("/set-cookie")
    user.client.get("/needs-cookie")
    other.client.get("/needs-cookie")  # another user: its own jar
    out["redirect_status"] = user.client.get("/redirect", allow_redirects=False).status_code
    out["followed_status"] = user.client.get("/redirect").status_code
    # the host URL's credentials go to its origin only, and a path never leaves it
    user.client.get(elsewhere + "/elsewhere")
    user.client.get("@" + elsewhere.split("://", 1)[1] + "/ok")
    out["events"] = [
        {"name": e["name"], "exception": None if e["exception"] is None else repr(e["exception"])}
        for e in events
    ]
    return out


def run_gevent_idle(url: str) -> dict[str, Any]:
    import fastnet

    client = fastnet.Client(trust_env=False, read_timeout=5)
    client.get(url)
    gevent.sleep(1.3)  # past the pool's one-second threshold: the health check runs
    started = time.monotonic()
    status = client.get(url).status_code
    return {
        "reuse_s": time.monotonic() - started,
        "status": status,
        "connections": client.connection_pool.connection_count(),
    }


def run_gevent_late(url: str) -> dict[str, Any]:
    import fastnet

    client = fastnet.Client(trust_env=False, read_timeout=0.3)
    started = time.monotonic()
    others = [gevent.spawn(gevent.sleep, 0.1) for _ in range(3)]
    try:
        client.get(url)
        error = None
    except fastnet.ReadTimeout as exc:
        error = type(exc).__name__
    gevent.joinall(others, timeout=5)
    return {"error": error, "elapsed": time.monotonic() - started, "others_done": all(g.dead for g in others)}


def main() -> None:
    mode = sys.argv[1]
    if mode == "table":
        with open(sys.argv[3]) as f:
            spec = json.load(f)
        result: Any = run_table(sys.argv[2], spec)
    elif mode == "overlap":
        result = run_overlap(
            sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]) if len(sys.argv) > 5 else 10.0
        )
    elif mode == "api":
        result = run_api(sys.argv[2], sys.argv[3])
    elif mode == "gevent-idle":
        result = run_gevent_idle(sys.argv[2])
    elif mode == "gevent-late":
        result = run_gevent_late(sys.argv[2])
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
