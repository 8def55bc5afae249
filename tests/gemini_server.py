"""A fake Gemini API on 127.0.0.1 that holds every request to the google-genai SDK's own types.

`GeminiServer` is tests/llm_server.py's server (faults, recorded requests) speaking
`POST /v1beta/models/{model}:generateContent` and `:batchEmbedContents` (the Developer API), the
same under `/v1/projects/P/locations/L/publishers/google/models/` (Vertex AI), and an OAuth token
endpoint at `/token` (for google-auth's default credentials in tests). Each request body is
validated against google.genai.types (Content, Tool, ToolConfig, GenerationConfig, ...: pydantic
models with camelCase aliases that forbid unknown keys), so an unknown or misplaced key, a wrong
type or a value outside an enum is refused with Google's 400 INVALID_ARGUMENT (and listed in
`server.invalid`). Replies are built from GenerateContentResponse / EmbedContentResponse,
so the real google-genai client reads them (tests/test_gemini_target.py shows it).

A test scripts the model with `GeminiServer(gemini=lambda body, model: [parts...])`: a list of
parts in the API's shape (`{"text": ...}`, `{"functionCall": {...}}`) or a whole reply (a dict,
sent as it is). Google's error bodies for faults: `google_error(429)`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.genai import types
from llm_server import LLMServer, words
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

STATUS = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
          500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_MODEL_PATH = re.compile(r"^/(?:v1beta|v1)/(?:projects/([^/]+)/locations/([^/]+)/publishers/google/)?models/([^/:]+):(\w+)$")


def google_error(code: int, message: str = "scripted failure") -> str:
    """A Google API error body: `{"error": {"code", "message", "status"}}`."""
    return json.dumps({"error": {"code": code, "message": message, "status": STATUS.get(code, "UNKNOWN")}})


class _Wire(BaseModel):
    """A request body's own keys: camelCase or snake_case, as Google's proto3 JSON parsing reads them."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class GenerateContentRequest(_Wire):
    """The REST body of models.generateContent, in the SDK's types (what its converters produce)."""

    contents: list[types.Content]
    system_instruction: types.Content | None = None
    tools: list[types.Tool] | None = None
    tool_config: types.ToolConfig | None = None
    generation_config: types.GenerationConfig | None = None
    safety_settings: list[types.SafetySetting] | None = None
    cached_content: str | None = None
    labels: dict[str, str] | None = None


class EmbedRequest(_Wire):
    model: str
    content: types.Content
    task_type: str | None = None
    title: str | None = None
    output_dimensionality: int | None = None


class BatchEmbedRequest(_Wire):
    requests: list[EmbedRequest]


def validated(model: type[BaseModel], body: Any) -> str | None:
    """Why `body` is not a valid `model`, or None. Like Google's own JSON parsing (proto3 JSON), a
    field may be named in camelCase or snake_case (the SDK itself sends `parameters_json_schema`);
    an unknown key, a wrong type or a value out of an enum is refused."""
    try:
        model.model_validate_json(json.dumps(body))
    except ValidationError as exc:
        return " ".join(str(exc).split())
    return None


def echo_parts(body: dict[str, Any], model: str) -> list[dict[str, Any]]:
    """Default reply: `echo: <last user text>`."""
    last = next((content for content in reversed(body.get("contents", [])) if content.get("role") == "user"), {})
    return [{"text": "echo: " + "".join(part.get("text", "") for part in last.get("parts", []))}]


def sent_text(body: dict[str, Any]) -> list[str]:
    """Every text the request sends (system instruction, parts, function responses): what input tokens count."""
    texts = [part.get("text", "") for part in (body.get("systemInstruction") or {}).get("parts", [])]
    for content in body.get("contents", []):
        for part in content.get("parts", []):
            texts.append(part.get("text", ""))
            if "functionResponse" in part:
                texts.append(json.dumps(part["functionResponse"].get("response")))
    return texts


class GeminiServer(LLMServer):
    """`with GeminiServer() as server:`; `server.url` is the base_url of a gemini target."""

    def __init__(self, gemini: Callable[[dict[str, Any], str], list[dict[str, Any]] | dict[str, Any]] = echo_parts, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gemini = gemini
        self.invalid: list[str] = []
        self.token = "ya29.fake-access-token-5150"
        self.tokens_issued = 0
        self._gemini_lock = threading.Lock()
        self._current = threading.local()  # the request this handler thread is answering

    def _record(self, request: Any) -> None:
        self._current.request = request
        super()._record(request)

    def answer(self, path: str, body: Any) -> tuple[int, Any]:
        if path == "/token":  # google-auth refreshing credentials (form-encoded, not JSON)
            with self._gemini_lock:
                self.tokens_issued += 1
            return 200, {"access_token": self.token, "expires_in": 3600, "token_type": "Bearer"}
        match = _MODEL_PATH.match(path)
        if match is None:
            return 404, json.loads(google_error(404, f"no such method: {path}"))
        model, method = match.group(3), match.group(4)
        request = self._current.request
        headers = {name.lower(): value for name, value in request.headers.items()}
        vertex = match.group(1) is not None
        if (vertex and headers.get("authorization") != f"Bearer {self.token}") or (not vertex and not headers.get("x-goog-api-key")):
            return 403, json.loads(google_error(403, "the caller does not have permission"))
        if method == "generateContent":
            problem = validated(GenerateContentRequest, body)
            if problem is None:
                return 200, self.generate_reply(body, model)
        elif method == "batchEmbedContents":
            problem = validated(BatchEmbedRequest, body)
            if problem is None:
                texts = ["".join(part.get("text", "") for part in item["content"]["parts"]) for item in body["requests"]]
                reply = types.EmbedContentResponse(embeddings=[types.ContentEmbedding(values=self.embed(text)) for text in texts])
                return 200, reply.model_dump(mode="json", by_alias=True, exclude_none=True)
        else:
            problem = f"method {method!r} is not served here"
        with self._gemini_lock:
            self.invalid.append(problem)
        return 400, json.loads(google_error(400, problem))

    def generate_reply(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        """A GenerateContentResponse from the script's parts: finishReason STOP, usage in words."""
        parts = self.gemini(body, model)
        if isinstance(parts, dict):
            return parts
        prompt = sum(map(words, sent_text(body)))
        output = sum(words(part.get("text", "")) for part in parts)
        response = types.GenerateContentResponse(
            candidates=[types.Candidate(
                content=types.Content(role="model", parts=[types.Part.model_validate_json(json.dumps(part)) for part in parts]),
                finish_reason=types.FinishReason.STOP, index=0,
            )],
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=prompt, candidates_token_count=output, total_token_count=prompt + output,
            ),
            model_version=model, response_id="resp-test",
        )
        return response.model_dump(mode="json", by_alias=True, exclude_none=True)


def service_account_file(folder: Path, token_uri: str) -> Path:
    """A service account key file as Google issues them (a fresh RSA key), whose token_uri is the fake's."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    path = folder / "service-account.json"
    path.write_text(json.dumps({
        "type": "service_account", "project_id": "acme-evals", "private_key_id": "key-1", "private_key": pem,
        "client_email": "evals@acme-evals.iam.gserviceaccount.com", "client_id": "1", "token_uri": token_uri,
    }))
    return path
