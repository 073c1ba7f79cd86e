"""The output policy (docs/policies.md) a server adapter parses with.

The server's policy comes from the environment variable
``CHAT_AUTOPARSER_POLICY`` (a preset name, or a JSON object as ``policy=``
takes); a request overrides it with ``chat_template_kwargs``'s
``chat_autoparser_policy`` (docs/serving.md). Unset both: the parser's
default (``lossless``).

Invariant: a bad value is never replaced by the default; it is a
``ValueError`` naming where it came from (the variable or the request
field), raised when the adapter builds a parser with it.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional, Union

from . import ChatTemplate, Error

ENV = "CHAT_AUTOPARSER_POLICY"
REQUEST_KEY = "chat_autoparser_policy"

Policy = Union[str, dict, None]


def server_policy() -> Policy:
    """The policy ``CHAT_AUTOPARSER_POLICY`` names (None when unset or empty)."""
    raw = os.environ.get(ENV, "").strip()
    if not raw.startswith("{"):
        return raw or None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"{ENV}: not a preset name nor a JSON object ({e}): {raw!r}") from None


def policy_for(template_kwargs: Optional[dict]) -> tuple[Policy, str]:
    """The request's policy, else the server's, and where it came from."""
    requested = (template_kwargs or {}).get(REQUEST_KEY)
    if requested is not None:
        return requested, f"chat_template_kwargs.{REQUEST_KEY}"
    return server_policy(), ENV


def checked(template: ChatTemplate, policy: Policy, source: str) -> Policy:
    """``policy``, once the parser accepts it; else an error naming ``source``."""
    if policy is None:
        return None
    try:
        template.parser(policy=policy)
    except (Error, TypeError, ValueError) as e:
        raise ValueError(f"{source}: {e}") from None
    return policy


def cache_key(policy: Any) -> str:
    """The policy as a stable string, for the adapters' parser caches."""
    return json.dumps(policy, sort_keys=True)
