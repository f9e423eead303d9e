"""``fastnet.Timeout`` (``fastnet/timeout.py``): the four timeouts of a call as one immutable value, how a
phase left out keeps the client's (``merged``), ``as_timeout`` for every form ``timeout=`` takes, and the
``USE_CLIENT_DEFAULT`` singleton. Values only; the timeouts on real sockets are in
tests/integration/test_timeouts.py."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

import fastnet
from fastnet.timeout import USE_CLIENT_DEFAULT, Timeout, UseClientDefault, as_timeout


def test_timeout_one_number_sets_connect_read_and_write_not_call() -> None:
    t = Timeout(5)
    assert (t.connect, t.read, t.write) == (5, 5, 5)
    assert t.call is USE_CLIENT_DEFAULT
    assert repr(t) == "Timeout(connect=5, read=5, write=5)"
    assert fastnet.Timeout is Timeout


def test_timeout_keywords_override_the_number() -> None:
    t = Timeout(5, connect=2, call=60)
    assert (t.connect, t.read, t.write, t.call) == (2, 5, 5, 60)
    only_read = Timeout(read=30)
    assert only_read.read == 30 and only_read.connect is USE_CLIENT_DEFAULT
    assert repr(only_read) == "Timeout(read=30)"
    assert repr(Timeout()) == "Timeout()"


def test_timeout_none_is_no_timeout_for_that_phase() -> None:
    assert Timeout(None).merged(10.0, 10.0, 10.0, 7.0) == (0.0, 0.0, 0.0, 7.0)
    assert Timeout(None, call=None).merged(10.0, 10.0, 10.0, 7.0) == (0.0, 0.0, 0.0, 0.0)


def test_timeout_merged_keeps_the_phases_left_out() -> None:
    assert Timeout().merged(1.0, 2.0, 3.0, 4.0) == (1.0, 2.0, 3.0, 4.0)
    assert Timeout(read=30).merged(1.0, 2.0, 3.0, 4.0) == (1.0, 30.0, 3.0, 4.0)
    assert Timeout(5, call=2.5).merged(1.0, 2.0, 3.0, 0.0) == (5.0, 5.0, 5.0, 2.5)
    assert all(isinstance(v, float) for v in Timeout(1).merged(1.0, 2.0, 3.0, 4.0))


def test_timeout_is_immutable_hashable_and_comparable() -> None:
    t = Timeout(5, call=9)
    with pytest.raises(AttributeError):
        t.read = 1
    assert t == Timeout(connect=5, read=5, write=5, call=9) and hash(t) == hash(Timeout(5, call=9))
    assert t != Timeout(5) and t != 5
    assert len({Timeout(1), Timeout(1), Timeout(2)}) == 2


def test_timeout_pickles_and_copies() -> None:
    t = Timeout(3, read=None, call=20)
    for clone in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert clone == t and clone.read is None and clone.call == 20
    assert pickle.loads(pickle.dumps(Timeout(read=1))).connect is USE_CLIENT_DEFAULT


@pytest.mark.parametrize(
    "args, kwargs, error",
    [
        ((-1,), {}, ValueError),
        ((float("nan"),), {}, ValueError),
        ((), {"read": 1e12}, ValueError),
        (("5",), {}, TypeError),
        ((True,), {}, TypeError),
        ((), {"call": -0.5}, ValueError),
        ((Timeout(5),), {}, TypeError),
    ],
)
def test_timeout_bad_values_are_refused(args: tuple[Any, ...], kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        Timeout(*args, **kwargs)


def test_timeout_as_timeout_takes_every_form() -> None:
    t = Timeout(2)
    assert as_timeout(t) is t
    assert as_timeout(4) == Timeout(4)
    assert as_timeout(0.5) == Timeout(0.5)
    assert as_timeout((1, 9)) == Timeout(connect=1, read=9)
    no_timeouts = as_timeout(None)
    assert no_timeouts.merged(10.0, 10.0, 10.0, 5.0) == (0.0, 0.0, 0.0, 0.0)  # the call's too


@pytest.mark.parametrize("value, error", [((1, 2, 3), ValueError), ("3", TypeError), (False, TypeError)])
def test_timeout_as_timeout_refuses_other_values(value: Any, error: type) -> None:
    with pytest.raises(error, match="timeout"):
        as_timeout(value)
    with pytest.raises(error, match="read_timeout"):
        as_timeout(value, "read_timeout")


def test_timeout_use_client_default_is_a_falsy_singleton() -> None:
    assert UseClientDefault() is USE_CLIENT_DEFAULT
    assert not USE_CLIENT_DEFAULT
    assert repr(USE_CLIENT_DEFAULT) == "USE_CLIENT_DEFAULT"
    assert pickle.loads(pickle.dumps(USE_CLIENT_DEFAULT)) is USE_CLIENT_DEFAULT
    assert copy.copy(USE_CLIENT_DEFAULT) is USE_CLIENT_DEFAULT
