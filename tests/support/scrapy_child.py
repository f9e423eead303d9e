"""What the Scrapy tests run in a child process (a Scrapy crawl owns its reactor and its process).

    python scrapy_child.py crawl ENGINE START_URL OUT_JSON            a real spider following links
    python scrapy_child.py redis ENGINE REDIS_URL SPIDER OUT_JSON     the same spider on a shared Redis queue
                                                                      (OUT_JSON.ready once it is open; it ends
                                                                      when idle once SPIDER:stop is set)
    python scrapy_child.py table ENGINE SPEC_JSON OUT_JSON            the shared table, one request per case

ENGINE is ``fastnet`` (``FastnetDownloadHandler``) or ``stock`` (Scrapy's default handler). Both run on
the asyncio reactor. Results go to OUT_JSON.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess

HANDLER = "fastnet.contrib.scrapy.FastnetDownloadHandler"


def settings_for(engine: str, **more: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "RETRY_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }
    if engine == "fastnet":
        settings["DOWNLOAD_HANDLERS"] = {"http": HANDLER, "https": HANDLER}
    settings.update(more)
    return settings


class SiteSpider(scrapy.Spider):
    """Follows every link of the site from its first page; one item per page."""

    name = "site"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start_url

    async def start(self) -> Any:
        yield scrapy.Request(self.start_url)

    def parse(self, response: Any) -> Any:
        yield {"url": response.url, "status": response.status, "length": len(response.body)}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href)


def crawl(engine: str, start_url: str, out: str) -> None:
    items: list[dict[str, Any]] = []
    process = CrawlerProcess(settings_for(engine))
    crawler = process.create_crawler(SiteSpider)

    def scraped(item: Any, **_: Any) -> None:  # a named function: signals hold weak references
        items.append(dict(item))

    crawler.signals.connect(scraped, signal=scrapy.signals.item_scraped)
    process.crawl(crawler, start_url=start_url)
    process.start()
    stats = {k: str(v) for k, v in (crawler.stats.get_stats() if crawler.stats else {}).items()}
    with open(out, "w") as f:
        json.dump({"items": items, "stats": stats}, f)


def redis_crawl(engine: str, redis_url: str, name: str, out: str) -> None:
    from scrapy.core.engine import ExecutionEngine
    from scrapy.exceptions import DontCloseSpider
    from scrapy_redis.spiders import RedisSpider

    # An idle engine looks for new requests on its heartbeat (5 s): 1 s lets a short test crawl be shared.
    ExecutionEngine._SLOT_HEARTBEAT_INTERVAL = 1.0

    class RedisSiteSpider(RedisSpider):  # type: ignore[misc]
        def parse(self, response: Any) -> Any:
            yield {"url": response.url, "status": response.status}
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href)

        def spider_idle(self) -> None:
            # scrapy-redis closes an idle spider MAX_IDLE_TIME_BEFORE_CLOSE seconds after it imported
            # scrapy_redis.spiders (a class attribute), not after it went idle: a process that started slowly
            # closed before the crawl began. Here an idle spider stays open until the test says the crawl is
            # over (every page served) by setting NAME:stop; idle means nothing in flight here.
            self.schedule_next_requests()
            if not self.server.exists(f"{self.name}:stop"):
                raise DontCloseSpider

    RedisSiteSpider.name = name
    items: list[dict[str, Any]] = []
    settings = settings_for(
        engine,
        SCHEDULER="scrapy_redis.scheduler.Scheduler",
        DUPEFILTER_CLASS="scrapy_redis.dupefilter.RFPDupeFilter",
        SCHEDULER_PERSIST=True,  # the queue and the dupefilter outlive the first process to close
        REDIS_URL=redis_url,
        CONCURRENT_REQUESTS=8,
        CONCURRENT_REQUESTS_PER_DOMAIN=8,
        REDIS_START_URLS_KEY="%(name)s:start_urls",
    )
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(RedisSiteSpider)

    def scraped(item: Any, **_: Any) -> None:
        items.append(dict(item))

    def opened(**_: Any) -> None:
        with open(out + ".ready", "w") as f:
            f.write("open\n")

    crawler.signals.connect(scraped, signal=scrapy.signals.item_scraped)
    crawler.signals.connect(opened, signal=scrapy.signals.spider_opened)
    process.crawl(crawler)
    process.start()
    stats = {k: str(v) for k, v in (crawler.stats.get_stats() if crawler.stats else {}).items()}
    with open(out, "w") as f:
        json.dump({"items": items, "stats": stats}, f)


class TableSpider(scrapy.Spider):
    """One request per case of the shared table; what came back (or the failure) per case."""

    name = "table"

    def __init__(self, spec: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec or {"cases": []}
        self.results: dict[str, dict[str, Any]] = {}

    async def start(self) -> Any:
        for case in self.spec["cases"]:
            meta: dict[str, Any] = {"case": case, "download_timeout": case["timeout"]}
            if case["proxy"]:
                meta["proxy"] = case["proxy"]
            for key in ("download_maxsize", "download_warnsize", "download_fail_on_dataloss", "bindaddress"):
                if key in case:
                    meta[key] = case[key]
            yield scrapy.Request(
                case["url"],
                method=case["method"],
                body=case["body"].encode("latin-1") if case["body"] is not None else None,
                headers=dict(case["headers"]) or None,
                meta=meta,
                callback=self.got,
                errback=self.failed,
                dont_filter=True,
            )

    def got(self, response: Any) -> None:
        case = response.meta["case"]
        headers = {name: response.headers.getlist(name) for name in case["header_names"]}
        self.results[case["id"]] = {
            "status": response.status,
            "body": response.body.decode("latin-1"),
            "headers": {k.lower(): b", ".join(v).decode("latin-1") for k, v in headers.items() if v},
            "flags": list(response.flags),
            "redirects": [int(s) for s in response.meta.get("redirect_reasons", [])],
            "ip_address": str(response.ip_address) if response.ip_address else None,
        }

    def failed(self, failure: Any) -> None:
        case = failure.request.meta["case"]
        error = failure.value
        self.results[case["id"]] = {"error": type(error).__name__, "message": str(error)[:300]}


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def table(engine: str, spec_path: str, out: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    warnings = _Warnings()
    logging.getLogger().addHandler(warnings)
    process = CrawlerProcess(settings_for(engine, HTTPERROR_ALLOW_ALL=True, **spec.get("settings", {})))
    crawler = process.create_crawler(TableSpider)
    process.crawl(crawler, spec=spec)
    process.start()
    spider: Any = crawler.spider
    for case in spec["cases"]:
        got = spider.results.get(case["id"])
        if got is not None:
            got["warnings"] = [m for m in warnings.messages if case["url"] in m]
    with open(out, "w") as f:
        json.dump(spider.results, f)


def main() -> None:
    mode = sys.argv[1]
    if mode == "crawl":
        crawl(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "redis":
        redis_crawl(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif mode == "table":
        table(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
