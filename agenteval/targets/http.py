"""http: send the case input to a service as JSON (or as query parameters) and read the answer back.

A service that answers with an error status after the retries makes that case an error with the
status and an excerpt of the body; the run goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PrivateAttr, field_validator

from agenteval.endpoints.settings import Transport, checked_url
from agenteval.paths import MISSING, compile_path, resolve
from agenteval.targets.base import Answer
from agenteval.usage import usage_record

if TYPE_CHECKING:
    from agenteval.targets.base import TargetRun


class HttpTarget(Transport):
    """One request per case to `url`; the answer is the response JSON at `response_path`."""

    type: Literal["http"]
    url: str = Field(min_length=1, description="Where to send each case (`${NAME}` is read from the environment).")
    method: Literal["POST", "GET"] = Field("POST", description="POST sends the input as a JSON body; GET as query parameters.")
    response_path: str = Field("", description="Where the answer is in the response JSON (e.g. `data.answer`); empty: all of it.")

    _keys: Any = PrivateAttr(None)

    @field_validator("url")
    @classmethod
    def _a_url(cls, value: str) -> str:
        return checked_url(value, "url") or value

    def model_post_init(self, context: Any) -> None:
        self._keys = compile_path(self.response_path) if self.response_path else ()

    def answer(self, case: Any, run: TargetRun) -> Answer:
        from agenteval.endpoints.client import EndpointError, excerpt

        if run.endpoints is None:
            return Answer(error="the http target needs the run's endpoints")
        if self._keys is None:
            return Answer(error=f"http target: malformed response_path {self.response_path!r}")
        body, params = (case.input, None) if self.method == "POST" else (None, _query(case.input))
        keys = self._keys

        def check(data: Any) -> None:  # a reply without the answer is an error, and is not cached
            if keys and resolve(data, keys) is MISSING:
                raise EndpointError(f"the response has no `{self.response_path}`: {excerpt(str(data))!r}")

        settings = self
        if run.context is not None and run.context.traceparent:  # W3C trace context (agenteval.traces.propagation)
            settings = self.model_copy(update={"headers": {**self.headers, "traceparent": run.context.traceparent}})
        try:
            url = run.endpoints.resolve(self.url)
            reply = run.endpoints.send(
                settings, self.method, url, body, params=params, cache=bool(self.cache), variant=run.repetition,
                json_reply=not self.response_path, check=check,
            )
        except EndpointError as exc:
            return Answer(error=f"http target: {exc}")
        usage = usage_record(reply.latency_ms, cached=reply.cached)
        found = resolve(reply.data, keys) if keys else reply.data
        return Answer(found, duration_ms=reply.latency_ms, usage=usage)


def _query(case_input: Any) -> dict[str, str]:
    """GET parameters: scalars as text, anything nested as JSON."""
    import orjson

    if not isinstance(case_input, dict):
        return {} if case_input is None else {"input": case_input if isinstance(case_input, str) else orjson.dumps(case_input).decode()}
    return {
        str(key): value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        for key, value in case_input.items()
    }
