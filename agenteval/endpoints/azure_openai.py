"""Azure OpenAI: chat completions and embeddings of a deployment, over `Endpoints.send`.

The bodies and replies are OpenAI's (agenteval.endpoints.chat); what Azure adds is where they go,
`{endpoint}/openai/deployments/{deployment}/{chat/completions|embeddings}?api-version=...`, and
how a request is authorised: an `api-key` header, or an Entra ID token as a Bearer (read from a
variable, or from azure-identity's DefaultAzureCredential, refreshed before it expires). Retries
follow the openai SDK's rule, which Azure's replies are written for: `x-should-retry` when sent,
else 408, 409, 429 and 5xx.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from agenteval.endpoints.chat import ChatReply, _chat_reply, _embedding_list, check_chat
from agenteval.endpoints.client import RETRY_STATUSES, EndpointError, Endpoints
from agenteval.endpoints.settings import ModelEndpoint
from agenteval.endpoints.spans import ModelCall
from agenteval.usage import usage_record

PROVIDER = "azure.ai.openai"  # gen_ai.provider.name of this API's requests (agenteval.endpoints.spans)
SCOPE = "https://cognitiveservices.azure.com/.default"  # the Entra ID scope of Azure OpenAI
DEFAULT_API_VERSION = "2024-10-21"
DEFAULT_KEY_ENV = "AZURE_OPENAI_API_KEY"
DEFAULT_ENDPOINT = "${AZURE_OPENAI_ENDPOINT}"


def deployment_url(base: str, deployment: str, action: str) -> str:
    """`{endpoint}/openai/deployments/{deployment}/{action}` (an endpoint that already ends in `/openai` is not doubled)."""
    base = base.rstrip("/")
    if not base.endswith("/openai"):
        base += "/openai"
    return f"{base}/deployments/{quote(deployment, safe='')}/{action}"


def retryable(status: int, content: bytes, headers: Mapping[str, str]) -> bool:
    """The openai SDK's rule: the server's `x-should-retry` when it says, else 408, 409, 429 and 5xx."""
    told = (headers.get("x-should-retry") or "").lower()
    if told in ("true", "false"):
        return told == "true"
    return status in RETRY_STATUSES or status >= 500


class EntraToken:
    """A Bearer token from azure-identity's DefaultAzureCredential (environment, workload identity,
    managed identity, Azure CLI, ...), fetched on the first request sent and again before it expires."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._credential: Any = None
        self._token: Any = None

    def headers(self, method: str, url: str, content: bytes) -> dict[str, str]:
        with self._lock:
            if self._token is None or self._token.expires_on - 300 < time.time():
                self._token = self._fetch()
            return {"Authorization": f"Bearer {self._token.token}"}

    def secrets(self) -> list[str]:
        return [self._token.token] if self._token is not None else []

    def _fetch(self) -> Any:
        from agenteval.extras import MissingDependency, require

        try:
            identity = require("azure.identity", "an Entra ID token (entra_id: true)")
        except MissingDependency as exc:
            raise EndpointError(str(exc)) from None
        try:
            if self._credential is None:
                import logging

                logging.getLogger("azure.identity").setLevel(logging.ERROR)  # (each credential it tries logs a warning: the error says it once)
                self._credential = identity.DefaultAzureCredential()
            return self._credential.get_token(SCOPE)
        except Exception as exc:  # noqa: BLE001 - azure-identity raises its own kinds, and its messages name no secret
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise EndpointError(f"no Entra ID token from DefaultAzureCredential ({first}): sign in with `az login`, "
                                "or set AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET") from None


def complete(
    endpoints: Endpoints, settings: ModelEndpoint, url: str, api_version: str, auth: Any, body: dict[str, Any], *,
    cache: bool, variant: int = 0,
) -> ChatReply:
    """POST a chat completion to a deployment's `url`. Raises EndpointError."""
    reply = endpoints.send(
        settings, "POST", url, body, params={"api-version": api_version}, cache=cache, variant=variant, check=check_chat,
        auth=auth, retryable=retryable, model_call=ModelCall(PROVIDER, settings.model),
    )
    return _chat_reply(endpoints, settings, reply)


def embed(
    endpoints: Endpoints, settings: ModelEndpoint, url: str, api_version: str, auth: Any, texts: list[str],
) -> tuple[list[list[float]], dict[str, Any]]:
    """One vector per text from a deployment's embeddings, and the usage record (cached by request). Raises EndpointError."""
    reply = endpoints.send(
        settings, "POST", url, {"input": texts, "model": settings.model}, params={"api-version": api_version}, cache=True,
        auth=auth, retryable=retryable, model_call=ModelCall(PROVIDER, settings.model, "embeddings"),
    )
    vectors = _embedding_list(reply.data, len(texts))
    usage = reply.data.get("usage") if isinstance(reply.data, dict) else None
    return vectors, usage_record(reply.latency_ms, usage if isinstance(usage, dict) else None, cached=reply.cached)
