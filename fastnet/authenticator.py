"""``Authenticator``: answers 401 and 407 challenges with a new request, or gives up with None."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from fastnet._internal.core import Request, Response

__all__ = ["Authenticator", "parse_challenges"]


@runtime_checkable
class Authenticator(Protocol):
    """``authenticate(route, response) -> Request | None``."""

    def authenticate(self, route: Any, response: Response) -> Request | None: ...


def parse_challenges(values: list[str]) -> list[Any]:
    return []
