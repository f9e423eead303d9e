"""The locustfile of the distributed test: ``FastnetUser`` against nginx, each request tagged with the run's
token (``FASTNET_LOCUST_TOKEN``) so that nginx's access log tells this run's requests apart."""

from __future__ import annotations

import os

from locust import constant, task

from fastnet.contrib.locust import FastnetUser

TOKEN = os.environ.get("FASTNET_LOCUST_TOKEN", "none")


class Visitor(FastnetUser):
    wait_time = constant(0.005)

    @task
    def small(self) -> None:
        self.client.get(f"/2b?run={TOKEN}", name="/2b")
