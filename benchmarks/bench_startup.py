"""Start-up benchmark: what ``import`` and making a client cost, fastnet against the peers.

Measures, each in a fresh child process (one library per child, so nothing is imported twice):

* ``import`` - ``import <library>`` (ms);
* ``first client`` - the first client object made after the import (ms): ``fastnet.Client()``,
  ``requests.Session()``, ``httpx.Client()``, ``urllib3.PoolManager()``, ``pycurl.Curl()``,
  ``pyreqwest``'s ``SyncClientBuilder().build()``;
* ``later client`` - each one after that, made and closed 200 times (µs).

Bytecode is compiled once, into a private cache (``PYTHONPYCACHEPREFIX`` in a temporary directory), before
the first round, so every library is imported from ``.pyc`` files as ``pip install`` leaves it (an
editable checkout run with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile fastnet's sources on
every import and nothing else). Rounds interleave the libraries; figures are medians over rounds.

Usage::

    PYTHONPATH=. python benchmarks/bench_startup.py [--rounds 15] [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

import common

# library -> (import statement, expression making a client, statement closing it as ``c``)
LIBRARIES: dict[str, tuple[str, str, str]] = {
    "fastnet": ("import fastnet", "fastnet.Client()", "c.close()"),
    "requests": ("import requests", "requests.Session()", "c.close()"),
    "httpx": ("import httpx", "httpx.Client()", "c.close()"),
    "urllib3": ("import urllib3", "urllib3.PoolManager()", "c.clear()"),
    "pycurl": ("import pycurl", "pycurl.Curl()", "c.close()"),
    "pyreqwest": (
        "from pyreqwest.client import SyncClientBuilder",
        "SyncClientBuilder().build()",
        "c.close()",
    ),
}

_CHILD = """
import json, time
t0 = time.perf_counter()
{imp}
t1 = time.perf_counter()
c = {make}
t2 = time.perf_counter()
{close}
n = 200
t3 = time.perf_counter()
for _ in range(n):
    c = {make}
    {close}
t4 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first": t2 - t1, "later": (t4 - t3) / n}}))
"""


def _run(name: str, env: dict[str, str]) -> dict[str, float] | str:
    imp, make, close = LIBRARIES[name]
    code = _CHILD.format(imp=imp, make=make, close=close)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["failed"])[-1]
    line = done.stdout.strip().splitlines()[-1]
    result: dict[str, float] = json.loads(line)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--libraries", default=",".join(LIBRARIES))
    p.add_argument("--record", action="store_true", help="add the table to benchmarks/RESULTS.md")
    args = p.parse_args()
    names = [n for n in args.libraries.split(",") if n]
    if any(n not in LIBRARIES for n in names):
        p.error(f"unknown libraries {names}")

    with tempfile.TemporaryDirectory(prefix="fastnet-bench-startup-") as cache:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(common.REPO_ROOT), env.get("PYTHONPATH")]))
        errors: dict[str, str] = {}
        for name in names:  # the warm-up run writes the bytecode cache
            outcome = _run(name, env)
            if isinstance(outcome, str):
                errors[name] = outcome
        samples: dict[str, list[dict[str, float]]] = {n: [] for n in names if n not in errors}
        order = list(samples)
        for r in range(args.rounds):
            for name in order[r % len(order) :] + order[: r % len(order)]:
                outcome = _run(name, env)
                if isinstance(outcome, str):
                    errors[name] = outcome
                else:
                    samples[name].append(outcome)

    def median(name: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[name])

    ref = "requests" if samples.get("requests") else None
    rows: list[list[Any]] = []
    for name in names:
        if name in errors or not samples.get(name):
            rows.append([name, f"error: {errors.get(name, 'no sample')}", "", ""])
            continue
        imp = median(name, "import") * 1e3
        cell = f"{imp:.1f}"
        if ref is not None:
            cell += f" ({imp / (median(ref, 'import') * 1e3):.2f}×)"
        rows.append([name, cell, f"{median(name, 'first') * 1e3:.2f}", f"{median(name, 'later') * 1e6:.1f}"])
    table = common.markdown_table(
        ["library", "import (ms; ratio to requests)", "first client (ms)", "later client (µs)"], rows
    )
    notes = (
        f"Command: `{common.command_line()}`\n\n{common.machine_notes()}\n\n"
        f"Medians over {args.rounds} interleaved rounds, a fresh process per sample, bytecode cached."
    )
    print(table + "\n\n" + notes)
    if args.record:
        common.record_results("Start-up: import and client construction", table + "\n\n" + notes)


if __name__ == "__main__":
    main()
