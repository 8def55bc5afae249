"""Real HTTP servers on 127.0.0.1 that play Amazon Bedrock Runtime and Azure OpenAI, checking every
request against the vendor's own published types and answering with replies built from them.

`BedrockServer`: `POST /model/{modelId}/converse` and `/invoke`. Each request's SigV4 signature is
recomputed with botocore over what arrived (the secret key is the test's), and its parameters
(the path's modelId with the JSON body) are validated with botocore's ParamValidator against
bedrock-runtime's service model; a reply is validated against the operation's output shape before
it is sent. A request that fails either check gets the ValidationException / a 403 that AWS sends.

`AzureServer`: `POST /openai/deployments/{deployment}/chat/completions|embeddings?api-version=`.
The body is validated with pydantic over the openai SDK's request TypedDicts (no key outside them),
the `api-key` header or Bearer token and the api-version are checked, and replies are the SDK's
`ChatCompletion` / `CreateEmbeddingResponse` models dumped to JSON.

Both record what they received, play scripted replies (a function of the request body) and queue
faults: `(status, error code)` replies the next requests get, in order.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from llm_server import QuietHandler

ACCESS_KEY = "AKIDEXAMPLETESTKEY01"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzTESTSECRET"
SESSION_TOKEN = "FwoGZXIvYXdzEBYaDTESTSESSIONTOKENdoNotLeak"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_SESSION_TOKEN": SESSION_TOKEN,
    "AWS_EC2_METADATA_DISABLED": "true",
}
AZURE_KEY = "azkey-0123456789abcdef-doNotLeak"
AZURE_TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOi.entra-token.doNotLeak"
AZURE_API_VERSIONS = {"2024-10-21", "2024-06-01", "2025-01-01-preview"}


@dataclass
class Received:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


def text_reply(text: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda body: {"text": text}


class _Base:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.faults: deque[tuple[int, str, dict[str, str], str | None]] = deque()
        self.problems: list[str] = []  # every request the checks refused, with why
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def fail(self, status: int, code: str = "", headers: dict[str, str] | None = None, message: str | None = None) -> None:
        """The next request gets this error (`message` in its body), or with status 200 `code` as the reply's JSON text."""
        self.faults.append((status, code, headers or {}, message))

    def count(self, part: str = "") -> int:
        return sum(part in received.path for received in self.received)

    def __enter__(self) -> Any:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def handle(self, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = urlsplit(self.path)
                headers = {name.lower(): value for name, value in self.headers.items()}
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with server._lock:
                    server.received.append(Received(parts.path, parse_qs(parts.query), headers, body))
                status, reply_headers, payload = server.handle(self.path, parse_qs(parts.query), {**headers, "_raw_path": parts.path}, raw)
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **reply_headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


# --- Amazon Bedrock Runtime --------------------------------------------------------------------

def _service_model() -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model("bedrock-runtime")


def validate_shape(params: dict[str, Any], shape: Any) -> str | None:
    """botocore's ParamValidator over `params` (a request's or a reply's), its report or None."""
    from botocore.validate import ParamValidator

    report = ParamValidator().validate(params, shape)
    return report.generate_report() if report.has_errors() else None


def converse_output(blocks: list[dict[str, Any]], stop_reason: str, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": blocks}},
        "stopReason": stop_reason,
        "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens, "totalTokens": input_tokens + output_tokens},
        "metrics": {"latencyMs": 12},
    }


def block_text(blocks: list[dict[str, Any]]) -> str:
    return " ".join(block["text"] for block in blocks if "text" in block)


class BedrockServer(_Base):
    """Bedrock Runtime on 127.0.0.1. `reply(body, model_id)` gives the reply's content blocks (a list)
    or one block; a block with `toolUse` makes the stop reason `tool_use`. Default: an echo."""

    def __init__(
        self, reply: Callable[..., Any] | None = None, bearer: str | None = None,
        credentials: tuple[str, str, str] = (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN),
    ) -> None:
        super().__init__()
        self.reply = reply or (lambda body, model_id: {"text": "echo: " + block_text(body["messages"][-1]["content"])})
        self.bearer = bearer
        self.credentials = credentials  # (access key, secret key, session token) the signatures are checked with
        self.model = _service_model()

    def handle(self, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        raw_path = headers.pop("_raw_path")
        parts = raw_path.split("/")
        if len(parts) != 4 or parts[1] != "model" or parts[3] not in ("converse", "invoke"):
            return self._error(404, "UnknownOperationException", f"no operation at {raw_path}")
        model_id, action = unquote(parts[2]), parts[3]
        problem = self._auth_problem(raw_path, query, headers, raw)
        if problem:
            self.problems.append(problem)
            return self._error(403, "AccessDeniedException" if self.bearer else "InvalidSignatureException", problem)
        if self.faults:
            status, code, extra, message = self.faults.popleft()
            if status == 200:  # a reply of the test's own making (`code` is its JSON text)
                return 200, extra, code.encode()
            return self._error(status, code, message or f"scripted {code}", extra)
        operation = self.model.operation_model("Converse" if action == "converse" else "InvokeModel")
        if action == "converse":
            body = json.loads(raw)
            problem = validate_shape({"modelId": model_id, **body}, operation.input_shape)
            if problem:
                self.problems.append(problem)
                return self._error(400, "ValidationException", problem)
            found = self.reply(body, model_id)
            blocks = found if isinstance(found, list) else [found]
            stop = "tool_use" if any("toolUse" in block for block in blocks) else "end_turn"
            text_in = sum(len(block_text(m["content"]).split()) for m in body["messages"]) + 5
            data = converse_output(blocks, stop, text_in, max(1, len(block_text(blocks).split())))
        else:
            params = {"modelId": model_id, "body": raw, "contentType": headers.get("content-type"), "accept": headers.get("accept")}
            problem = validate_shape({key: value for key, value in params.items() if value is not None}, operation.input_shape)
            if problem:
                self.problems.append(problem)
                return self._error(400, "ValidationException", problem)
            data = self._embedding(model_id, json.loads(raw))
            blob = json.dumps(data).encode()
            problem = validate_shape({"body": blob, "contentType": "application/json"}, operation.output_shape)
            assert problem is None, problem
            return 200, {"X-Amzn-Bedrock-Input-Token-Count": "3"}, blob
        problem = validate_shape(data, operation.output_shape)
        assert problem is None, problem  # a reply this fake sends is one the service could send
        return 200, {}, json.dumps(data).encode()

    def _embedding(self, model_id: str, body: dict[str, Any]) -> dict[str, Any]:
        from llm_server import letter_embedding

        if "cohere.embed" in model_id:
            assert set(body) <= {"texts", "input_type", "truncate", "embedding_types"} and body["input_type"], body
            return {"id": "emb-1", "texts": body["texts"], "embeddings": [letter_embedding(text) for text in body["texts"]],
                    "response_type": "embeddings_floats"}
        assert set(body) <= {"inputText", "dimensions", "normalize", "embeddingTypes"} and isinstance(body["inputText"], str), body
        return {"embedding": letter_embedding(body["inputText"]), "inputTextTokenCount": len(body["inputText"].split())}

    def _auth_problem(self, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes) -> str | None:
        """Why the request's credentials are refused: a Bearer key that is not the API key, or a SigV4
        signature that botocore, recomputing it with the secret key over what arrived, does not get."""
        import botocore.auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        authorization = headers.get("authorization", "")
        if self.bearer is not None:
            return None if authorization == f"Bearer {self.bearer}" else "the Bedrock API key is missing or wrong"
        prefix = "AWS4-HMAC-SHA256 Credential="
        if not authorization.startswith(prefix):
            return "no SigV4 Authorization header"
        try:
            scope_part, signed_part, signature_part = (part.strip() for part in authorization[len(prefix):].split(","))
            access_key, date, region, service, terminator = scope_part.split("/")
            signed = signed_part.removeprefix("SignedHeaders=").split(";")
            signature = signature_part.removeprefix("Signature=")
        except ValueError:
            return f"a malformed SigV4 Authorization header: {authorization[:40]}..."
        if access_key != self.credentials[0] or service != "bedrock" or terminator != "aws4_request":
            return f"the credential scope names {access_key}/{service}/{terminator}"
        if headers.get("x-amz-security-token") != self.credentials[2] or "x-amz-security-token" not in signed:
            return "the session token is missing or unsigned"
        if not {"host", "x-amz-date", "content-type"} <= set(signed):
            return f"the signed headers lack host, x-amz-date or content-type: {signed}"
        request = AWSRequest(method="POST", url=f"http://{headers['host']}{path}", data=raw,
                             headers={name: headers[name] for name in signed if name in headers})
        request.context["timestamp"] = headers["x-amz-date"]
        signer = botocore.auth.SigV4Auth(Credentials(*self.credentials), "bedrock", region)
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        return None if expected == signature else "the SigV4 signature does not match the request"

    def _error(self, status: int, code: str, message: str, extra: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        return status, {"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/", **(extra or {})}, json.dumps({"message": message}).encode()


# --- Azure OpenAI ------------------------------------------------------------------------------

def _typed_dict_keys(typed: Any) -> set[str]:
    keys: set[str] = set()
    for klass in getattr(typed, "__mro__", [typed]):
        keys |= set(getattr(klass, "__annotations__", {}))
    return keys | set(getattr(typed, "__required_keys__", set())) | set(getattr(typed, "__optional_keys__", set()))


class AzureServer(_Base):
    """Azure OpenAI on 127.0.0.1. `reply(body, deployment)` gives the assistant message (a dict with
    `content` and maybe `tool_calls`); default: an echo of the last user message."""

    def __init__(self, reply: Callable[..., Any] | None = None, key: str | None = AZURE_KEY, token: str | None = None) -> None:
        super().__init__()
        self.reply = reply or (lambda body, deployment: {"content": "echo: " + str(body["messages"][-1]["content"])})
        self.key, self.token = key, token

    def handle(self, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        from openai.types import CreateEmbeddingResponse, Embedding
        from openai.types.chat import ChatCompletion
        from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
        from openai.types.embedding_create_params import EmbeddingCreateParams
        from pydantic import TypeAdapter, ValidationError

        raw_path = headers.pop("_raw_path")
        found = re.fullmatch(r"/openai/deployments/([^/]+)/(chat/completions|embeddings)", raw_path)
        if found is None:
            return self._error(404, "404", f"Resource not found: {raw_path}")
        deployment, action = unquote(found.group(1)), found.group(2)
        version = query.get("api-version", [None])[0]
        if version not in AZURE_API_VERSIONS:
            return self._error(404, "404", f"Resource not found (api-version {version!r})")
        authorised = (self.key is not None and headers.get("api-key") == self.key) or (
            self.token is not None and headers.get("authorization") == f"Bearer {self.token}")
        if not authorised:
            self.problems.append("unauthorised")
            return self._error(401, "401", "Access denied due to invalid subscription key or wrong API endpoint.")
        if self.faults:
            status, code, extra, message = self.faults.popleft()
            if status == 200:
                return 200, extra, code.encode()
            return self._error(status, code, message or f"scripted {code}", extra)
        body = json.loads(raw)
        params = CompletionCreateParamsNonStreaming if action == "chat/completions" else EmbeddingCreateParams
        unknown = set(body) - _typed_dict_keys(params)
        try:
            TypeAdapter(params).validate_python(body)
            if unknown:
                raise ValueError(f"unknown keys {sorted(unknown)}")
        except (ValidationError, ValueError) as exc:
            self.problems.append(str(exc))
            return self._error(400, "invalid_request_error", str(exc)[:500])
        if action == "embeddings":
            from llm_server import letter_embedding

            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            reply = CreateEmbeddingResponse(
                data=[Embedding(embedding=letter_embedding(text), index=i, object="embedding") for i, text in enumerate(texts)],
                model="text-embedding-3-small", object="list", usage={"prompt_tokens": len(texts), "total_tokens": len(texts)},
            )
            return 200, {}, reply.model_dump_json(exclude_none=True).encode()
        message = self.reply(body, deployment)
        completion = ChatCompletion.model_validate({
            "id": "chatcmpl-azure", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                         "message": {"role": "assistant", **message}}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
        })
        return 200, {}, completion.model_dump_json(exclude_none=True).encode()

    def _error(self, status: int, code: str, message: str, extra: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        return status, extra or {}, json.dumps({"error": {"code": code, "message": message}}).encode()
