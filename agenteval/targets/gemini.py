"""gemini: ask a Gemini model over Google's own API (`generateContent`), messages templated from the case.

The answer has the openai target's shape, `{content, messages, tool_calls, usage, model,
latency_ms}`, with `messages` in the canonical (OpenAI chat) form, so one suite's evaluators score
any model target and `targets:` compares like with like. With an API key (`api_key_env`, default
GEMINI_API_KEY) it speaks the Gemini Developer API; with `vertex: {project, location}` it speaks
Vertex AI with Google's default credentials (the `gemini` extra). The wire format lives in
agenteval.endpoints.gemini_api. Tools with an implementation run the tool loop over `step`, and
`embed` gives embeddings (batchEmbedContents) to whatever asks the target by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from agenteval.agents.loop import ToolLoopFields
from agenteval.config import StrictModel
from agenteval.endpoints.gemini_api import DEFAULT_BASE_URL, DEFAULT_KEY_ENV
from agenteval.endpoints.settings import EndpointRef, ModelEndpoint
from agenteval.endpoints.templates import TemplatedMessage
from agenteval.targets.base import Answer, loop_answer, reply_answer, template_variables, tool_definitions

if TYPE_CHECKING:
    from agenteval.agents.protocol import EmbedReply, StepReply
    from agenteval.endpoints.chat import ChatReply
    from agenteval.endpoints.gemini_api import Vertex
    from agenteval.targets.base import TargetRun

_DEFAULTS = {"base_url": DEFAULT_BASE_URL, "api_key_env": DEFAULT_KEY_ENV}

DEFAULT_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "{{ input if input is string else input | tojson }}"}
]


class VertexAI(StrictModel):
    """Vertex AI instead of an API key: the project and location requests go to."""

    project: str = Field(min_length=1, description="The Google Cloud project id (`${NAME}` is read from the environment).")
    location: str = Field(
        "global", min_length=1, description="`global` or a region such as us-central1 (`${NAME}` is read from the environment)."
    )

    @field_validator("project", "location")
    @classmethod
    def _one_segment(cls, value: str, info: Any) -> str:
        if "${" not in value:  # one read from the environment is checked when it is read
            problem = vertex_problem(info.field_name, value)
            if problem:
                raise ValueError(problem)
        return value


def vertex_problem(key: str, value: str) -> str | None:
    """Why `value` cannot be a project id or a location (a location names the host requests go to)."""
    if key == "location" and not re.fullmatch(r"[a-z0-9-]+", value):
        return f"{value!r} is not a location (`global` or a region such as us-central1)"
    if "/" in value or any(char.isspace() for char in value):
        return f"{value!r} is not a project id or a location (no slashes or spaces)"
    return None


class GeminiTarget(ModelEndpoint, EndpointRef, ToolLoopFields):
    """generateContent per case. Keys not set here come from `endpoint: NAME` under `models:`."""

    type: Literal["gemini"]
    base_url: str | None = Field(
        DEFAULT_BASE_URL,
        description="The API root; requests go to {base_url}/v1beta/models/{model}:generateContent (with `vertex:`, "
        "to {base_url}/v1/projects/P/locations/L/publishers/google/models/{model}:generateContent; default: the "
        "location's Vertex AI host).",
    )
    api_key_env: str | None = Field(
        DEFAULT_KEY_ENV,
        description="The NAME of the environment variable holding the API key (sent as `x-goog-api-key`); not used with `vertex:`.",
    )
    vertex: VertexAI | None = Field(
        None,
        description="Use Vertex AI with Google's default credentials (GOOGLE_APPLICATION_CREDENTIALS, `gcloud auth "
        "application-default login`, or the machine's service account) instead of an API key: `{project, location}`. "
        "Needs the `gemini` extra.",
    )
    messages: list[TemplatedMessage] = Field(
        default_factory=lambda: [dict(m) for m in DEFAULT_MESSAGES],  # type: ignore[misc]
        description=(
            "Chat messages in the OpenAI shape (system messages become `systemInstruction`); every string is a jinja2 "
            "template over `input`, `case` (id, tags, metadata) and `metadata`. Default: one user message with the input."
        ),
    )
    tool_choice: str | dict[str, Any] | None = Field(
        None, description="auto, required (any), none, the OpenAI function shape (ANY with that one name), or Gemini's `{mode, allowedFunctionNames}`."
    )
    response_format: dict[str, Any] | None = Field(
        None,
        description="Structured output: `{type: json_object}` (JSON mode) or `{type: json_schema, json_schema: {schema: ...}}` "
        "(sent as responseMimeType and responseJsonSchema), or Gemini's own `{responseMimeType, responseSchema}`.",
    )
    parse_json: bool = Field(False, description="Parse `content` as JSON (a reply that is not JSON is a case error).")

    @field_validator("vertex")
    @classmethod
    def _needs_google_auth(cls, vertex: VertexAI | None) -> VertexAI | None:
        from agenteval.extras import missing_warning

        if vertex is not None and (missing := missing_warning("google.auth", "Vertex AI")):
            raise ValueError(str(missing))
        return vertex

    def answer(self, case: Any, run: TargetRun) -> Answer:
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.gemini_api import generate_body
        from agenteval.endpoints.templates import TemplateError, render_strings

        if run.endpoints is None:
            return Answer(error="the gemini target needs the run's endpoints")
        try:
            settings, vertex = self.request_settings(run.endpoints.models)
            messages = render_strings(self.messages, template_variables(case), "messages")
            body = generate_body(
                settings, messages, tools=tool_definitions(self.tools), tool_choice=self.tool_choice, response_format=self.response_format,
            )
        except (ValueError, TemplateError) as exc:
            return Answer(error=str(exc))
        if self.tools is not None or getattr(case, "tools", None):
            from agenteval.agents.loop import tool_loop

            looped = tool_loop(self, case, run, messages)
            if looped is not None:
                return loop_answer("gemini", Answer(**looped), self.parse_json)
        try:
            reply = self._send(run, settings, vertex, body)
        except EndpointError as exc:
            return Answer(error=f"gemini target: {exc}")
        for number, call in enumerate(reply.tool_calls, 1):  # a single reply's calls get ids too, as a loop's do
            call["id"] = call["id"] or f"call_{number}"
            reply.message["tool_calls"][number - 1]["id"] = call["id"]
        return reply_answer("gemini", reply, messages, self.parse_json)

    def step(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, run: TargetRun, response_format: dict[str, Any] | None = None,
    ) -> StepReply:
        """One model step of a tool loop or conversation (agenteval.agents.protocol): canonical
        messages in, the canonical assistant message out (a call without an id from the API gets
        one from the loop). `response_format` (a judge's json_schema; default: the target's own)
        becomes generationConfig's responseMimeType and responseJsonSchema."""
        from agenteval.agents.protocol import StepReply, ToolCall
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.gemini_api import generate_body

        if run.endpoints is None:
            return StepReply(error="the gemini target needs the run's endpoints")
        try:
            settings, vertex = self.request_settings(run.endpoints.models)
            body = generate_body(
                settings, messages, tools=tools or None, tool_choice=self.tool_choice, response_format=response_format or self.response_format,
            )
        except ValueError as exc:
            return StepReply(error=str(exc))
        try:
            reply = self._send(run, settings, vertex, body)
        except EndpointError as exc:
            return StepReply(error=f"gemini target: {exc}")
        calls = [ToolCall(id=call["id"], name=call["name"], arguments=call["arguments"]) for call in reply.tool_calls]
        return StepReply(message=reply.message, content=reply.content, tool_calls=calls, usage=reply.usage, model=reply.model)

    def embed(self, texts: list[str], run: TargetRun) -> EmbedReply:
        """Embeddings of `texts` by this target's model (batchEmbedContents), in their order."""
        from agenteval.agents.protocol import EmbedReply
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.gemini_api import embed
        from agenteval.usage import usage_record

        if run.endpoints is None:
            return EmbedReply(error="the gemini target needs the run's endpoints")
        if not texts:
            return EmbedReply(model=self.model)
        try:
            settings, vertex = self.request_settings(run.endpoints.models)
            cache = settings.cache if settings.cache is not None else True  # embeddings are deterministic
            vectors, reply = embed(run.endpoints, settings, texts, cache=cache, vertex=vertex)
        except (ValueError, EndpointError) as exc:
            return EmbedReply(error=f"gemini target: {exc}")
        return EmbedReply(vectors=vectors, usage=usage_record(reply.latency_ms, cached=reply.cached), model=settings.model)

    def credential_problem(self, environ: Mapping[str, str], models: Mapping[str, Any]) -> str | None:
        """What to set when the API key's variable is unset or empty, or None (on Vertex AI, whose
        default credentials are only known by asking; agenteval.agents.protocol)."""
        if self.vertex is not None:
            return None
        try:
            settings, _ = self.request_settings(dict(models))
        except ValueError:
            return None  # each case says what is wrong
        name = settings.api_key_env
        if not name or any(header.lower() == "x-goog-api-key" for header in settings.headers) or (environ.get(name) or "").strip():
            return None
        return (f"environment variable {name} is not set: set it to a Gemini API key (api_key_env), "
                "or give `vertex: {project, location}` to use Google Cloud credentials")

    def request_settings(self, models: dict[str, ModelEndpoint]) -> tuple[ModelEndpoint, Vertex | None]:
        """The endpoint settings of a request (`endpoint: NAME`'s with this target's keys over them,
        and the API's base_url and key variable under both), and where on Vertex AI it goes, if
        there. Raises ValueError."""
        from agenteval.endpoints.gemini_api import Vertex, vertex_base_url
        from agenteval.endpoints.settings import MissingEnvironment, merged_settings, substitute_env

        vertex = None
        if self.vertex is not None:
            try:
                vertex = Vertex(substitute_env(self.vertex.project), substitute_env(self.vertex.location))
            except MissingEnvironment as exc:
                raise ValueError(f"vertex: {exc}") from None
            for key, value in (("project", vertex.project), ("location", vertex.location)):
                if problem := vertex_problem(key, value):
                    raise ValueError(f"vertex.{key}: {problem}")
        defaults = dict(_DEFAULTS)
        if vertex is not None:
            defaults = {"base_url": vertex_base_url(vertex.location), "api_key_env": None}
        if self.endpoint is None:
            settings = ModelEndpoint.model_validate({key: getattr(self, key) for key in ModelEndpoint.model_fields})
            if vertex is not None and "base_url" not in self.model_fields_set:
                settings.base_url = defaults["base_url"]
            if vertex is not None:
                settings.api_key_env = None
            return settings, vertex
        named = models.get(self.endpoint)
        if named is not None:  # the target's own keys, then the named endpoint's, then this API's defaults
            models = {**models, self.endpoint: ModelEndpoint.model_validate({**defaults, **named.model_dump(exclude_unset=True)})}
        settings = merged_settings(self, models)  # an unknown name is its error
        if vertex is not None:
            settings.api_key_env = None
        return settings, vertex

    @staticmethod
    def _send(run: TargetRun, settings: ModelEndpoint, vertex: Vertex | None, body: dict[str, Any]) -> ChatReply:
        from agenteval.endpoints.gemini_api import generate

        assert run.endpoints is not None
        cache = settings.cache if settings.cache is not None else settings.temperature == 0
        return generate(run.endpoints, settings, body, cache=cache, variant=run.repetition, vertex=vertex)
