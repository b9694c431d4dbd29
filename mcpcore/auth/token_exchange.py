"""``TokenExchange``: a token for a downstream audience, on the caller's behalf (RFC 8693).

The caller's own token is the ``subject_token``; this server authenticates to the endpoint as
its client (HTTP Basic, RFC 6749 §2.3.1) and, when configured, names itself with an
``actor_token`` so the issued token says who acts for whom (``act``). The answer is a
:class:`~mcpcore.auth.delegation.DownstreamToken`; :class:`~mcpcore.auth.delegation.Delegation`
caches it. The caller's token goes to the authorization server only, never downstream.

Every failure is a :class:`~mcpcore.auth.delegation.DelegationFailed` (a tool error with a
recovery hint): the endpoint refused (its ``error`` code is named, its free text is not), or
it could not answer (timeout, connection, a 5xx, a body that is not a token response).
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import anyio
import httpx

from .. import _json
from ..context import AuthInfo
from ..errors import ConfigurationError
from .delegation import Audience, DelegationFailed, DownstreamToken
from .oauth import check_url

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["ACCESS_TOKEN_TYPE", "GRANT_TYPE", "JWT_TOKEN_TYPE", "TokenExchange"]

log = logging.getLogger("mcpcore.auth")

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"
MAX_ANSWER_BYTES = 64 * 1024
ActorToken = str | Callable[[], "str | Awaitable[str]"]


class TokenExchange:
    """The client of an RFC 8693 token endpoint (a :class:`~mcpcore.auth.delegation.CredentialSource`).

    Args:
        url: the token endpoint (``MCP_TOKEN_EXCHANGE_URL``; https, or http on loopback).
        client_id, client_secret: this server's client credentials at that endpoint.
        actor_token: a token naming this server as the actor (a string, or a function returning
            one, sync or async, called for each exchange); none by default.
        actor_token_type: its RFC 8693 type (default: an access token).
        timeout: seconds for one exchange.
        http_client / transport: an httpx client to use (not closed here) or a transport for the
            one created (tests).

    Raises:
        ConfigurationError: no URL, or an unacceptable one.
    """

    def __init__(self, url: str | None, *, client_id: str | None = None, client_secret: str | None = None,
                 actor_token: ActorToken | None = None, actor_token_type: str = ACCESS_TOKEN_TYPE,
                 timeout: float = 10.0, http_client: httpx.AsyncClient | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if not url:
            raise ConfigurationError("MCP_TOKEN_EXCHANGE_URL is required for token exchange")
        self.url = check_url("MCP_TOKEN_EXCHANGE_URL", url)
        self._auth = httpx.BasicAuth(quote(client_id, safe=""), quote(client_secret or "", safe="")) \
            if client_id else None
        self.client_id = client_id
        self._actor = actor_token
        self.actor_token_type = actor_token_type
        self.timeout = timeout
        self._client = http_client
        self._owns_client = http_client is None
        self._transport = transport
        self.calls = 0
        """Exchanges asked of the endpoint so far (for tests and metrics)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> TokenExchange:
        """The exchange ``MCP_TOKEN_EXCHANGE_*`` describe."""
        secret = settings.token_exchange_client_secret
        actor = settings.token_exchange_actor_token
        return cls(settings.token_exchange_url, client_id=settings.token_exchange_client_id,
                   client_secret=secret.get_secret_value() if secret is not None else None,
                   actor_token=actor.get_secret_value() if actor is not None else None)

    def __repr__(self) -> str:
        return f"TokenExchange(url={self.url!r}, client_id={self.client_id!r})"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), follow_redirects=False,
                                             transport=self._transport, headers={"accept": "application/json"})
        return self._client

    async def start(self) -> None:
        """Open the HTTP client."""
        self._http()

    async def close(self) -> None:
        """Close the HTTP client this exchange created."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def _actor_token(self) -> str | None:
        actor = self._actor
        if actor is None or isinstance(actor, str):
            return actor
        value = actor()
        return await value if inspect.isawaitable(value) else value

    async def obtain(self, caller: AuthInfo, target: Audience) -> DownstreamToken:
        """Exchange ``caller``'s token for one ``target`` accepts.

        Raises:
            DelegationFailed: the endpoint refused or could not answer.
        """
        if caller.token is None:
            raise DelegationFailed.no_token(target.name)
        form: dict[str, str] = {"grant_type": GRANT_TYPE, "subject_token": caller.token,
                                "subject_token_type": ACCESS_TOKEN_TYPE, "requested_token_type": ACCESS_TOKEN_TYPE}
        if target.audience:
            form["audience"] = target.audience
        if target.resource:
            form["resource"] = target.resource
        if target.scopes:
            form["scope"] = " ".join(target.scopes)
        actor = await self._actor_token()
        if actor:
            form["actor_token"] = actor
            form["actor_token_type"] = self.actor_token_type
        self.calls += 1
        try:
            with anyio.fail_after(self.timeout):
                resp = await self._http().post(self.url, data=form, auth=self._auth or httpx.USE_CLIENT_DEFAULT)
            body = resp.content
        except (httpx.HTTPError, TimeoutError, OSError) as exc:
            log.warning("token exchange failed", extra={"fields": {"url": self.url, "error": type(exc).__name__}})
            raise DelegationFailed.unavailable(target.name) from None
        return self._answer(resp.status_code, body, target)

    def _answer(self, status: int, body: bytes, target: Audience) -> DownstreamToken:
        try:
            answer: Any = _json.loads(body) if len(body) <= MAX_ANSWER_BYTES else None
        except _json.JSONDecodeError:
            answer = None
        if status in (400, 401, 403) and isinstance(answer, dict) and isinstance(answer.get("error"), str):
            log.info("token exchange refused", extra={"fields": {"url": self.url, "error": answer["error"],
                                                                  "audience": target.name}})
            raise DelegationFailed.refused(target.name, answer["error"])
        if status != 200 or not isinstance(answer, dict) or not isinstance(answer.get("access_token"), str) \
                or not isinstance(answer.get("token_type"), str):
            log.warning("token exchange answered badly", extra={"fields": {"url": self.url, "status": status}})
            raise DelegationFailed.unavailable(target.name)
        expires_in = answer.get("expires_in")
        lifetime = expires_in if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) \
            and expires_in > 0 else None
        scope = answer.get("scope")
        return DownstreamToken(
            access_token=answer["access_token"], token_type=answer["token_type"],
            expires_at=time.time() + lifetime if lifetime is not None else None,
            scopes=tuple(scope.split()) if isinstance(scope, str) else tuple(target.scopes),
            issued_token_type=answer.get("issued_token_type") if isinstance(answer.get("issued_token_type"), str)
            else None)
