"""Follow-up requests for responses (redirects, 401/407, 408/503): see issue 4. Placeholder: none."""

from __future__ import annotations

from typing import Any

__all__ = ["follow_up_request"]


def follow_up_request(client: Any, call: Any, chain: Any, response: Any) -> Any:
    return None
