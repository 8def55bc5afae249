"""Google credentials for Vertex AI: google-auth's default chain (GOOGLE_APPLICATION_CREDENTIALS,
`gcloud auth application-default login`, the metadata server of a Google Cloud machine), one set per
run, refreshed when its token expires. google-auth (the `gemini` extra) is imported only here, and
only when a Vertex AI request is sent; its HTTP goes through httpx, so no other client is needed.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from agenteval.endpoints.client import EndpointError, excerpt

if TYPE_CHECKING:
    from agenteval.endpoints.client import Endpoints

SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
HOW_TO_SET = (
    "set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, or run `gcloud auth application-default login`"
)


class _Credentials:
    """The run's default credentials, found once and refreshed under a lock (workers share them)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.credentials: Any = None


def access_token(endpoints: Endpoints, timeout: float) -> str:
    """A valid OAuth access token from the default credentials. Raises EndpointError naming what to set."""
    from agenteval.extras import MissingDependency, require

    try:
        require("google.auth", "Vertex AI")
    except MissingDependency as exc:
        raise EndpointError(str(exc)) from None
    import google.auth
    import google.auth.exceptions

    held = endpoints.shared(("google-auth",), _Credentials)
    with held.lock:
        try:
            if held.credentials is None:
                held.credentials, _ = google.auth.default(scopes=SCOPES)
            if not held.credentials.valid:
                held.credentials.refresh(_HttpxRequest(timeout))
        except google.auth.exceptions.DefaultCredentialsError:
            raise EndpointError(f"no Google credentials found for Vertex AI: {HOW_TO_SET}") from None
        except google.auth.exceptions.GoogleAuthError as exc:
            held.credentials = None  # found again next time (a key file replaced mid-run)
            raise EndpointError(f"the Google credentials could not be refreshed: {type(exc).__name__}: {excerpt(str(exc), 200)}") from None
        token = held.credentials.token
    if not isinstance(token, str) or not token:
        raise EndpointError(f"the Google credentials gave no access token: {HOW_TO_SET}")
    return token


MAX_TOKEN_REPLY_BYTES = 1 << 20
"""The most a token endpoint's reply may be (a token reply is a few kB)."""


class _HttpxRequest:
    """google-auth's transport interface (`google.auth.transport.Request`) over httpx: each request
    whole within the endpoint's `timeout` (not only each read: a reply trickled a byte at a time
    ends there) and at most MAX_TOKEN_REPLY_BYTES."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    def __call__(self, url: str, method: str = "GET", body: Any = None, headers: Any = None, timeout: Any = None, **_: Any) -> Any:
        import time

        import httpx
        from google.auth import exceptions, transport

        budget = min(float(timeout or self.timeout), self.timeout)
        deadline = time.monotonic() + budget
        try:
            with httpx.stream(method, url, content=body, headers=headers, timeout=budget) as response:
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > MAX_TOKEN_REPLY_BYTES:
                        raise exceptions.TransportError(f"the reply of {url} is larger than {MAX_TOKEN_REPLY_BYTES >> 20} MiB")
                    if time.monotonic() > deadline:
                        raise exceptions.TransportError(f"{url} did not answer whole within {budget:g} s")
                    chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise exceptions.TransportError(f"{type(exc).__name__}: {exc}") from None
        content = b"".join(chunks)

        class Response(transport.Response):
            status = response.status_code
            headers = dict(response.headers)
            data = content

        return Response()
