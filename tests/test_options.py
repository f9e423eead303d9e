"""The client option table (``fastnet/_internal/call/options.py``): every option declared there reaches
``Client``/``AsyncClient`` (signature, ``with_options``, attributes, ``config``) and the docs, and the
code and docs generated from it (``scripts/options_doc.py``) are up to date. The verbs are written once:
both clients' verbs, ``fastnet.get`` and friends and ``RequestFactory.build`` take the same keywords."""

from __future__ import annotations

import importlib.util
import inspect
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import fastnet
from fastnet._internal.call import options as table
from fastnet._internal.call.async_verbs import AsyncVerbs
from fastnet._internal.call.factory import RequestFactory
from fastnet._internal.call.generated_options import CheckedOptions, ClientOptions
from fastnet._internal.call.options import OPTIONS, Option
from fastnet._internal.call.verbs import Verbs
from fastnet.testing import MockResponse, MockServer

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = [fastnet.Client, fastnet.AsyncClient]
VERBS = ("request", "get", "head", "options", "delete", "post", "put", "patch")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("options_doc", ROOT / "scripts" / "options_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the table reaches every surface -------------------------------------------------------------------


def test_options_table_names_are_unique_and_documented() -> None:
    names = [o.name for o in OPTIONS]
    assert len(names) == len(set(names))
    assert all(o.doc and len(o.doc) <= 98 and o.doc.endswith(".") for o in OPTIONS)


@pytest.mark.parametrize("cls", CLIENTS)
def test_options_signature_is_the_table(cls: type[fastnet.Client]) -> None:
    for method in (cls, cls.with_options):
        parameters = list(inspect.signature(method).parameters.values())
        if method is cls.with_options:
            assert parameters[0].name == "self"
            parameters = parameters[1:]
        assert [p.name for p in parameters] == [o.name for o in OPTIONS]
        for p, o in zip(parameters, OPTIONS, strict=True):
            assert p.kind is inspect.Parameter.KEYWORD_ONLY
            assert p.annotation == o.type and p.default == o.default, o.name
    assert all(o.name in (cls.__init__.__doc__ or "") for o in OPTIONS)


@pytest.mark.parametrize("cls", CLIENTS)
def test_options_are_read_only_attributes_and_config(cls: type[fastnet.Client]) -> None:
    client = cls(read_timeout=3, auth=("user", "password"), trust_env=False)
    try:
        assert ClientOptions._fields == CheckedOptions._fields == tuple(o.name for o in OPTIONS)
        assert client.config == ClientOptions(**{o.name: getattr(client.config, o.name) for o in OPTIONS})
        for o in OPTIONS:
            if not o.attribute:  # a property saying what is in use (no dispatcher for AsyncClient)
                assert isinstance(getattr(cls, o.name, property()), property), o.name
                continue
            assert getattr(client, o.name) == getattr(client.config, o.name), o.name
            with pytest.raises(AttributeError, match=f"use client.with_options\\({o.name}="):
                setattr(client, o.name, o.default)
        assert client.read_timeout == 3 and client.auth == ("user", "password")
        assert "password" not in repr(client.config) and "read_timeout=3" in repr(client.config)
    finally:
        client._close()


@pytest.mark.parametrize("cls", CLIENTS)
def test_options_misspelt_name_suggests_the_nearest(cls: type[fastnet.Client]) -> None:
    with pytest.raises(
        TypeError, match=r"got unexpected option\(s\): 'max_body_sise' \(did you mean 'max_body_size'"
    ):
        cls(max_body_sise=1)  # type: ignore[call-arg]
    client = cls(trust_env=False)
    try:
        with pytest.raises(TypeError, match=r"with_options\(\) got .*'netwrk_interceptors' \(did you mean"):
            client.with_options(netwrk_interceptors=[])  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"'zzz'$"):
            client.with_options(zzz=1)  # type: ignore[call-arg]  # nothing close: no suggestion
    finally:
        client._close()


def test_options_timeout_spreads_over_the_timeouts_not_given_by_name() -> None:
    with fastnet.Client(timeout=fastnet.Timeout(4, read=7), read_timeout=1) as client:
        assert (client.connect_timeout, client.read_timeout, client.write_timeout) == (4, 1, 4)
        sibling = client.with_options(timeout=2, write_timeout=9)
        assert (sibling.connect_timeout, sibling.read_timeout, sibling.write_timeout) == (2, 2, 9)
        assert client.with_options(follow_redirects=False).read_timeout == 1  # timeout= not given again


def test_options_docs_have_a_row_per_option() -> None:
    doc = (ROOT / "docs" / "OPTIONS.md").read_text()
    for o in OPTIONS:
        assert f"| `{o.name}` |" in doc, o.name


def test_options_generated_code_and_docs_are_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/options_doc.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_options_doc_check_fails_on_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _script()
    (tmp_path / "fastnet").symlink_to(ROOT / "fastnet")  # read, never written: it is up to date
    (tmp_path / "docs").mkdir()
    for name in ("pyproject.toml", script.DOC):
        shutil.copyfile(ROOT / name, tmp_path / name)
    script.ROOT = tmp_path  # type: ignore[attr-defined]
    assert script.main(["--check"]) == 0
    doc = tmp_path / script.DOC
    doc.write_text(doc.read_text().replace("| `read_timeout` |", "| `read_timeout` | (edited)"))
    assert script.main(["--check"]) == 1
    assert "out of date: docs/OPTIONS.md;" in capsys.readouterr().err
    assert script.main([]) == 0 and script.main(["--check"]) == 0  # rewritten
    assert doc.read_text() == (ROOT / script.DOC).read_text()


# -- a new option: one declaration in the table ----------------------------------------------------------

NEW = Option(
    "retry_budget", "int | None", None, table.follow_up_count, "A new option, declared for this test only."
)


def _with_new_option() -> dict[str, Any]:
    """The generated module for the table plus ``NEW``, as the script writes it."""
    script = _script()
    source = script.render_module((*OPTIONS, NEW), (ROOT / script.OPTIONS_PY).read_text())
    namespace: dict[str, Any] = {"__name__": "generated_for_test"}
    exec(compile(source, "generated_for_test.py", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("cls", CLIENTS)
def test_options_new_option_reaches_client_with_options_config_and_docs(cls: type[fastnet.Client]) -> None:
    generated = _with_new_option()
    # what the engine would be built from
    assert generated["CheckedOptions"]._fields[-1] == "retry_budget"
    given = generated["ClientOptions"](*[o.default for o in OPTIONS], 3)
    assert generated["check_options"](given).retry_budget == 3
    with pytest.raises(ValueError, match="retry_budget must be an int >= 0"):
        generated["check_options"](given._replace(retry_budget=-1))  # its check runs

    class NewClient(generated["OptionsBase"], cls):  # type: ignore[misc, valid-type, name-defined]
        pass

    init = inspect.signature(NewClient).parameters["retry_budget"]
    assert init.kind is inspect.Parameter.KEYWORD_ONLY and init.annotation == "int | None"
    assert "retry_budget" in inspect.signature(NewClient.with_options).parameters
    assert "A new option, declared for this test only." in (NewClient.__init__.__doc__ or "")
    client: Any = NewClient(retry_budget=3, trust_env=False)
    try:
        assert client.retry_budget == 3 and client.config.retry_budget == 3
        assert "retry_budget=3" in repr(client.config)
        sibling = client.with_options(retry_budget=4)
        assert sibling.retry_budget == 4 and client.retry_budget == 3
        assert sibling.connection_pool is client.connection_pool
        with pytest.raises(AttributeError, match="read-only"):
            client.retry_budget = 5
        with pytest.raises(TypeError, match="did you mean 'retry_budget'"):
            NewClient(retry_budgt=1)
    finally:
        client._close()
    # the docs get a row; the committed files do not have it yet, so --check would fail
    script = _script()
    assert "| `retry_budget` | `int \\| None` | `None` |" in script.render_reference(
        (*OPTIONS, NEW), (ROOT / script.OPTIONS_PY).read_text()
    )
    current = (ROOT / script.GENERATED).read_text()
    assert "retry_budget" not in current


# -- the verbs: written once ---------------------------------------------------------------------


def _parameters(function: Any) -> list[tuple[str, Any, Any, Any]]:
    return [
        (p.name, p.kind, p.default, p.annotation) for p in inspect.signature(function).parameters.values()
    ]


@pytest.mark.parametrize("verb", VERBS)
def test_verbs_same_for_both_clients(verb: str) -> None:
    blocking, asyncio = getattr(fastnet.Client, verb), getattr(fastnet.AsyncClient, verb)
    assert blocking is getattr(Verbs, verb) and asyncio is getattr(AsyncVerbs, verb)
    assert _parameters(blocking) == _parameters(asyncio)
    assert blocking.__doc__ == asyncio.__doc__
    assert inspect.iscoroutinefunction(asyncio) and not inspect.iscoroutinefunction(blocking)
    assert inspect.signature(blocking).return_annotation == "Response"


@pytest.mark.parametrize("verb", VERBS)
def test_verbs_module_functions_take_the_verbs_keywords(verb: str) -> None:
    """``fastnet.get(url, **options)`` and friends: their ``options`` (a TypedDict) are the verb's."""
    function = getattr(fastnet, verb)
    keywords = [
        p for p in inspect.signature(getattr(Verbs, verb)).parameters.values() if p.kind is p.KEYWORD_ONLY
    ]
    if verb == "request":  # written out, as the verb
        assert _parameters(function) == _parameters(Verbs.request)[1:]
        return
    (options,) = [p for p in inspect.signature(function).parameters.values() if p.kind is p.VAR_KEYWORD]
    name = {"get": "GetOptions", "head": "GetOptions", "options": "GetOptions", "delete": "BodyOptions"}.get(
        verb, "RequestOptions"
    )
    assert options.annotation == f"Unpack[{name}]"
    declared = {key: ref.__forward_arg__ for key, ref in getattr(table, name).__annotations__.items()}
    assert declared == {p.name: p.annotation for p in keywords}


def test_verbs_factory_build_takes_the_verbs_keywords() -> None:
    assert _parameters(RequestFactory.build)[1:] == _parameters(Verbs.request)[1:]
    assert _parameters(fastnet.Client.build_request)[1:] == _parameters(Verbs.request)[1:]
    assert _parameters(fastnet.Client.stream)[1:] == _parameters(Verbs.request)[1:]
    assert _parameters(fastnet.AsyncClient.stream)[1:] == _parameters(Verbs.request)[1:]


def test_verbs_bound_per_client_unless_overridden(server: MockServer) -> None:
    seen = []

    class Logging(fastnet.Client):
        def get(self, url: Any, **options: Any) -> fastnet.Response:
            seen.append(url)
            return super().get(url, **options)

    server.enqueue(MockResponse(200, body=b"a"), MockResponse(201, body=b"b"))
    with fastnet.Client(trust_env=False) as plain, Logging(trust_env=False) as logging:
        assert type(plain.get).__name__ == "partial" and type(plain.post).__name__ == "partial"
        assert plain.get(server.url("/")).content == b"a"
        assert logging.get(server.url("/x"), params={"q": "1"}).status_code == 201
        assert type(logging.post).__name__ == "partial"  # the verbs it does not override are bound
    assert seen == [server.url("/x")]
    assert [server.take_request().target for _ in range(2)] == ["/", "/x?q=1"]


def test_verbs_async_bound_per_client_unless_overridden(run: Any, server: MockServer) -> None:
    seen = []

    class Logging(fastnet.AsyncClient):
        async def get(self, url: Any, **options: Any) -> fastnet.Response:
            seen.append(url)
            return await super().get(url, **options)

    async def main() -> None:
        async with fastnet.AsyncClient(trust_env=False) as plain, Logging(trust_env=False) as logging:
            assert type(plain.get).__name__ == "partial" and inspect.iscoroutinefunction(plain.get)
            assert (await plain.get(server.url("/"))).content == b"a"
            assert (await logging.get(server.url("/x"), params={"q": "1"})).status_code == 201
            assert (await logging.delete(server.url("/y"))).status_code == 202

    server.enqueue(MockResponse(200, body=b"a"), MockResponse(201, body=b"b"), MockResponse(202))
    run(main)
    assert seen == [server.url("/x")]
    paths = [server.take_request().target for _ in range(3)]
    assert paths == ["/", "/x?q=1", "/y"]
