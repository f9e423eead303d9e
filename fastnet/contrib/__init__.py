"""fastnet as the engine of other frameworks, each an optional extra.

* ``fastnet.contrib.requests``: ``FastnetAdapter``, a requests transport adapter (``fastnet-http[requests]``);
* ``fastnet.contrib.httpx``: ``FastnetTransport`` and ``AsyncFastnetTransport``, httpx transports
  (``fastnet-http[httpx]``);
* ``fastnet.contrib.locust``: ``FastnetUser``, a Locust user like ``FastHttpUser`` (``fastnet-http[locust]``);
* ``fastnet.contrib.scrapy``: ``FastnetDownloadHandler``, a Scrapy download handler on the asyncio reactor
  (``fastnet-http[scrapy]``).

Each module imports its framework at the top and nothing of the others, so importing one needs only its
own extra. In every integration the framework keeps the policy it already has (redirects, cookies,
authentication, retries, decompression): fastnet does one exchange per request, with its own connection
pool, routes, proxies and TLS underneath.
"""
