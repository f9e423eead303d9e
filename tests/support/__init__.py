"""The tests' helpers, imported as ``tests.support.x`` (``from tests.support.fakes import FakeDns``).

Nothing here is a test module: servers for the faults real servers cannot make (``dnsfaults``,
``holding``, ``stress_server``), the loopback testbed of real third-party servers (``testbed``), strict
event loops (``aioloop``, ``async_support``), the blocking facade over ``AsyncClient``
(``async_facade``), the clients and twins tests use (``clients``, ``twins``), policy fakes (``fakes``),
corpora and tables (``http1_corpus``, ``wire``, ``contrib_cases``, ``loadkit``), and the child processes
the contrib tests start (``locust_child``, ``scrapy_child``, ``locustfile_fastnet``).
"""
