"""The OpenAI-compatible formats: chat completions and embeddings, over `Endpoints.send`.

Any server that speaks them works the same (OpenAI, vLLM, Ollama, llama.cpp server, a LiteLLM
proxy). Replies are checked for the few keys used; anything else is kept as the server sent it.
Their requests are model calls for tracing with the provider `openai` (`PROVIDER`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agenteval.endpoints.client import EndpointError, Endpoints, Reply, excerpt, redact
from agenteval.endpoints.settings import Connection, ModelEndpoint
from agenteval.endpoints.spans import ModelCall, model_span
from agenteval.process import decode_json
from agenteval.usage import price_of, usage_record

_SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "seed", "stop")
PROVIDER = "openai"  # gen_ai.provider.name of these requests (agenteval.endpoints.spans)


@dataclass(slots=True)
class ChatReply:
    content: str | None
    message: dict[str, Any]
    tool_calls: list[dict[str, Any]]
    model: str | None
    usage: dict[str, Any]
    source: Reply | None = None  # the HTTP reply, for `Endpoints.keep` once the caller found it usable

    @property
    def latency_ms(self) -> float:
        return self.usage["latency_ms"]


def chat_body(settings: ModelEndpoint, messages: list[Any], **extra: Any) -> dict[str, Any]:
    """The request body: model, messages, the sampling options that are set, extras, extra_body last."""
    body: dict[str, Any] = {"model": settings.model, "messages": messages}
    for key in _SAMPLING_KEYS:
        value = getattr(settings, key)
        if value is not None:
            body[key] = value
    body.update({key: value for key, value in extra.items() if value is not None})
    body.update(settings.extra_body)
    return body


def check_chat(data: Any) -> None:
    """EndpointError unless `data` is a chat completion with a message: an empty `choices`, or an
    `error` object sent with a 200, is not an answer (and is never cached)."""
    if isinstance(data, dict) and data.get("error") and not data.get("choices"):
        raise EndpointError(f"the server answered with an error: {excerpt(str(data['error']))!r}")
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        message = None
    if not isinstance(message, dict):
        raise EndpointError(f"the reply has no choices[0].message: {excerpt(str(data))!r}")


def complete(
    endpoints: Endpoints, settings: ModelEndpoint, body: dict[str, Any], *, cache: bool, variant: int = 0,
    usable: Callable[[ChatReply], bool] | None = None,
) -> ChatReply:
    """POST {base_url}/chat/completions. Raises EndpointError.

    With `usable`, a fresh reply is kept in the cache only when `usable(reply)` says so (a judge's
    grade that can be read), and a cached one it refuses is asked for again."""
    url = endpoints.url(settings, "/chat/completions")
    call = ModelCall(PROVIDER, body.get("model") if isinstance(body.get("model"), str) else settings.model)
    reply = endpoints.send(settings, "POST", url, body, cache=cache, variant=variant, check=check_chat, keep=usable is None, model_call=call)
    chat = _chat_reply(endpoints, settings, reply)
    if usable is None:
        return chat
    if reply.cached and not usable(chat):  # stored by an older version that kept unusable replies
        reply = endpoints.send(
            settings, "POST", url, body, cache=cache, variant=variant, check=check_chat, keep=False, fresh=True, model_call=call,
        )
        chat = _chat_reply(endpoints, settings, reply)
    if usable(chat):
        endpoints.keep(reply)
    return chat


def _chat_reply(endpoints: Endpoints, settings: ModelEndpoint, reply: Reply) -> ChatReply:
    data = reply.data
    message = data["choices"][0]["message"]  # check_chat made sure of it
    content = message.get("content")
    model = data.get("model") if isinstance(data.get("model"), str) else settings.model
    record = usage_record(reply.latency_ms, data.get("usage"), cached=reply.cached)
    cost = price_of(record, [settings.model, model], endpoints.prices)
    if cost is not None:
        record["cost_usd"] = cost
    return ChatReply(
        content if isinstance(content, str) else None, message, tool_calls(message.get("tool_calls")), model, record, reply
    )


def tool_calls(raw: Any) -> list[dict[str, Any]]:
    """`[{id, name, arguments}]`, arguments parsed from their JSON string (kept as text when not JSON)."""
    calls = []
    for call in raw if isinstance(raw, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = decode_json(arguments.encode())
            except (ValueError, RecursionError):
                pass  # not JSON: the text is what the model produced, and what evaluators should see
        calls.append({"id": call.get("id"), "name": function.get("name"), "arguments": arguments})
    return calls


@dataclass
class _Request:
    texts: list[str]
    vectors: list[list[float]] | None = None
    error: str | None = None
    done: bool = False


@dataclass
class EmbeddingBatcher:
    """Embeds texts for many worker threads in few requests.

    While one batch is in flight, texts from other threads queue up and go together in the next
    one, so batches grow with the parallelism and a lone worker never waits for company.
    Each text is cached on its own, so a re-run sends nothing.
    """

    endpoints: Endpoints
    settings: Connection
    batch_size: int = 64
    cache: bool = True
    _queue: list[_Request] = field(default_factory=list)
    _sending: bool = False
    _ready: threading.Condition = field(default_factory=threading.Condition)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text; raises EndpointError."""
        request = _Request(list(texts))
        with self._ready:
            self._queue.append(request)
            while not request.done:
                if self._sending:
                    self._ready.wait()
                    continue
                batch, size = [], 0
                while self._queue and (not batch or size + len(self._queue[0].texts) <= self.batch_size):
                    size += len(self._queue[0].texts)
                    batch.append(self._queue.pop(0))
                self._sending = True
                self._ready.release()
                try:
                    self._send(batch)
                finally:
                    self._ready.acquire()
                    self._sending = False
                    self._ready.notify_all()
        if request.error is not None:
            raise EndpointError(request.error)
        assert request.vectors is not None
        return request.vectors

    def _send(self, batch: list[_Request]) -> None:
        unique = list(dict.fromkeys(text for request in batch for text in request.texts))
        try:
            found = self._vectors(unique)
        except EndpointError as exc:
            for request in batch:
                request.error, request.done = str(exc), True
            return
        for request in batch:
            request.vectors, request.done = [found[text] for text in request.texts], True

    def _vectors(self, texts: list[str]) -> dict[str, list[float]]:
        url = self.endpoints.url(self.settings, "/embeddings")
        found: dict[str, list[float]] = {}
        missing = []
        for text in texts:
            hit = self.endpoints.cached(url, self._body([text])) if self.cache else None
            if hit is not None and _vector_problem(hit["data"]) is None:
                found[text] = hit["data"]
            else:
                missing.append(text)
        call = ModelCall(PROVIDER, getattr(self.settings, "model", None), "embeddings")
        if found:  # texts replayed from the cache: one span marks them (agenteval.cache_hit), no request is sent
            secrets = self.endpoints.secrets(self.settings)
            replayed = model_span(call, url, self._body(list(found)), lambda text: redact(text, secrets))
            if replayed is not None:
                replayed.reply({"model": self.settings.model}, cached=True)
        for start in range(0, len(missing), self.batch_size):  # `batch_size` texts per request at most
            chunk = missing[start:start + self.batch_size]
            reply = self.endpoints.send(self.settings, "POST", url, self._body(chunk), model_call=call)
            vectors = _embedding_list(reply.data, len(chunk))
            for text, vector in zip(chunk, vectors):
                found[text] = vector
                if self.cache:
                    self.endpoints.remember(url, self._body([text]), {"status": reply.status, "data": vector, "latency_ms": reply.latency_ms})
        return found

    def _body(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.settings.model, "input": texts}


def _vector_problem(vector: Any) -> str | None:
    """Why `vector` is not an embedding: not a non-empty list, a value that is not a finite number
    (NaN, Infinity, a boolean, null: one such value made any two texts look alike), or all zeros."""
    if not isinstance(vector, list) or not vector:
        return "an embedding is not a non-empty list of numbers"
    for value in vector:
        if type(value) not in (float, int) or not math.isfinite(value):
            return f"the embeddings reply holds a value that is not a finite number ({value!r})"
    if not any(vector):
        return "the embeddings reply holds a vector of zeros (it has no direction to compare)"
    return None


def _embedding_list(data: Any, count: int) -> list[list[float]]:
    """The reply's vectors in input order, each checked; EndpointError naming the first problem."""
    if isinstance(data, dict) and data.get("error") and not data.get("data"):
        raise EndpointError(f"the server answered with an error: {excerpt(str(data['error']))!r}")
    try:
        items = data["data"]
        indexes = [item.get("index", i) for i, item in enumerate(items)]
        vectors = [item["embedding"] for item in items]
    except (KeyError, TypeError, AttributeError):
        raise EndpointError(f"the embeddings reply has no data[].embedding: {excerpt(str(data))!r}") from None
    if len(vectors) != count:
        raise EndpointError(f"the embeddings reply has {len(vectors)} vectors for {count} texts")
    if not all(type(i) is int for i in indexes) or sorted(indexes) != [*range(count)]:
        raise EndpointError(f"the embeddings reply's indexes are not 0 to {count - 1}: {excerpt(str(indexes))!r}")
    ordered = [vector for _, vector in sorted(zip(indexes, vectors), key=lambda pair: pair[0])]
    for vector in ordered:
        problem = _vector_problem(vector)
        if problem:
            raise EndpointError(problem)
    lengths = {len(vector) for vector in ordered}
    if len(lengths) > 1:
        raise EndpointError(f"the embeddings reply's vectors differ in length ({', '.join(map(str, sorted(lengths)))})")
    return ordered
