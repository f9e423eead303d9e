"""Route selection throughput: routes per second, compiled (_route_selector_c) vs pure (_route_selector_py).

Scenario (issue 3): a proxy selector answers two HTTP proxies whose names resolve to 8 addresses each
(IPv4 and IPv6 mixed, so Happy Eyeballs reorders), and a quarter of the routes are in the
RouteDatabase, so they are postponed and come back in the final selection. One iteration builds the
Address, the RouteSelector, and drains every selection (16 routes). A second line measures Address
hashing and equality (the pool's lookup key). Prints medians; never fails.

    python benchmarks/bench_routes.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastnet._internal import _route_selector_py  # noqa: E402
from fastnet.proxy import Proxy  # noqa: E402

try:
    from fastnet._internal.connection import route_selector as _route_selector_c
except ImportError:
    _route_selector_c = None

PROXIES = [Proxy.http("proxy-a.bench", 3128), Proxy.http("proxy-b.bench", 3128)]
ANSWERS = {
    "proxy-a.bench": [f"10.1.0.{i}" for i in range(1, 5)] + [f"fd00:a::{i}" for i in range(1, 5)],
    "proxy-b.bench": [f"10.2.0.{i}" for i in range(1, 5)] + [f"fd00:b::{i}" for i in range(1, 5)],
}


class Dns:
    def lookup(self, host: str) -> list[str]:
        return ANSWERS[host]


class Selector:
    def select(self, url: Any) -> list[Proxy]:
        return PROXIES

    def connect_failed(self, url: Any, address: Any, error: BaseException) -> None:
        pass


def setup(rs: types.ModuleType) -> tuple[Any, Any, Any]:
    dns, chooser = Dns(), Selector()
    db = rs.RouteDatabase()
    address = rs.Address("https", "origin.bench", 443, proxy_selector=chooser, dns=dns)
    routes = [r for selection in rs.RouteSelector(address, db, dns=dns) for r in selection]
    for route in routes[::4]:
        db.failed(route)
    return dns, chooser, db


def routes_per_second(rs: types.ModuleType, n: int) -> float:
    dns, chooser, db = setup(rs)
    Address, RouteSelector = rs.Address, rs.RouteSelector
    count = 0
    start = time.perf_counter()
    for _ in range(n):
        address = Address("https", "origin.bench", 443, proxy_selector=chooser, dns=dns)
        for selection in RouteSelector(address, db, dns=dns):
            count += len(selection)
    elapsed = time.perf_counter() - start
    assert count == 16 * n
    return count / elapsed


def address_lookups_per_second(rs: types.ModuleType, n: int) -> float:
    dns = Dns()
    pool = {rs.Address("https", f"h{i}.bench", 443, dns=dns): i for i in range(64)}
    probes = [rs.Address("https", f"h{i % 64}.bench", 443, dns=dns) for i in range(256)]
    start = time.perf_counter()
    for _ in range(n):
        for probe in probes:
            pool[probe]
    return n * len(probes) / (time.perf_counter() - start)


def median_of(fn: Any, rs: types.ModuleType, n: int, repeats: int) -> float:
    return statistics.median(fn(rs, n) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few hundred iterations, for CI smoke runs")
    args = parser.parse_args()
    n, repeats = (300, 3) if args.quick else (5000, 7)
    impls = [("pure", _route_selector_py)]
    if _route_selector_c is not None:
        impls.append(("compiled", _route_selector_c))
    else:
        print("compiled _route_selector_c not built; showing the pure build only")
    rows = []
    for label, fn in (
        ("routes/s (2 proxies x 8 addrs, 4 postponed)", routes_per_second),
        ("Address dict lookups/s (pool key)", address_lookups_per_second),
    ):
        results = {
            name: median_of(fn, rs, n if fn is routes_per_second else n // 10 or 1, repeats)
            for name, rs in impls
        }
        rows.append((label, results))
    print(f"{'benchmark':48} {'pure':>14} {'compiled':>14} {'ratio':>7}")
    for label, results in rows:
        pure = results["pure"]
        compiled = results.get("compiled")
        ratio = f"{compiled / pure:6.2f}x" if compiled else "    n/a"
        compiled_text = f"{compiled:14,.0f}" if compiled else f"{'n/a':>14}"
        print(f"{label:48} {pure:14,.0f} {compiled_text} {ratio}")


if __name__ == "__main__":
    main()
