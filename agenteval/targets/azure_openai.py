"""azure_openai: ask a deployment on Azure OpenAI (chat completions), messages templated from the case.

The body and the answer are the openai target's (`{content, messages, tool_calls, usage, model,
latency_ms}`); the deployment's URL, `api-version` and authorisation (an `api-key`, or an Entra
ID token) are agenteval.endpoints.azure_openai's. With tools that have an implementation, the
target runs the tool loop (agenteval.agents.loop) over `step`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from agenteval.agents.loop import ToolLoopFields
from agenteval.endpoints.azure_openai import DEFAULT_API_VERSION, DEFAULT_ENDPOINT, DEFAULT_KEY_ENV
from agenteval.endpoints.settings import ModelEndpoint
from agenteval.endpoints.templates import TemplatedMessage
from agenteval.targets.base import Answer, loop_answer, reply_answer, template_variables, tool_definitions

if TYPE_CHECKING:
    from agenteval.agents.protocol import EmbedReply, StepReply
    from agenteval.endpoints.chat import ChatReply
    from agenteval.targets.base import TargetRun

DEFAULT_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "{{ input if input is string else input | tojson }}"}
]


class AzureOpenAITarget(ModelEndpoint, ToolLoopFields):
    """Chat completions of an Azure OpenAI deployment per case."""

    type: Literal["azure_openai"]
    deployment: str = Field(min_length=1, description="The deployment's name (requests go to /openai/deployments/{deployment}/...).")
    resource: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9-]*$",
        description="The Azure OpenAI resource's name: the endpoint is then https://{resource}.openai.azure.com.",
    )
    base_url: str | None = Field(
        None, description="The endpoint, e.g. https://my-resource.openai.azure.com. Default: `resource:`'s, else ${AZURE_OPENAI_ENDPOINT}.",
    )
    api_version: str = Field(DEFAULT_API_VERSION, pattern=r"^\d{4}-\d{2}-\d{2}(-preview)?$", description="The `api-version` query parameter.")
    api_key_env: str | None = Field(
        DEFAULT_KEY_ENV, description="The NAME of the environment variable holding the key, sent as the `api-key` header.",
    )
    ad_token_env: str | None = Field(
        None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="The NAME of an environment variable holding an Entra ID token (e.g. AZURE_OPENAI_AD_TOKEN), sent as a Bearer "
        "token instead of the key.",
    )
    entra_id: bool = Field(
        False, description="Authorise with an Entra ID token from azure-identity's DefaultAzureCredential (the `azure` extra) instead of the key.",
    )
    embedding_deployment: str | None = Field(None, description="The deployment of an embedding model, for `embed`.")
    messages: list[TemplatedMessage] = Field(
        default_factory=lambda: [dict(m) for m in DEFAULT_MESSAGES],  # type: ignore[misc]
        description="Chat messages; every string is a jinja2 template over `input`, `case` (id, tags, metadata) and `metadata`. "
        "Default: one user message with the input.",
    )
    tool_choice: str | dict[str, Any] | None = Field(None, description="Passed through as is.")
    response_format: dict[str, Any] | None = Field(None, description="Passed through as is (e.g. a json_schema).")
    parse_json: bool = Field(False, description="Parse `content` as JSON (a reply that is not JSON is a case error).")

    @model_validator(mode="after")
    def _one_credential(self) -> AzureOpenAITarget:
        from agenteval.extras import install_hint, installed

        if self.resource and self.base_url:
            raise ValueError("give `resource:` or `base_url:`, not both (the resource names the endpoint)")
        if self.entra_id and self.ad_token_env:
            raise ValueError("give `entra_id: true` or `ad_token_env:`, not both (each is a way to get the token)")
        if self.entra_id and not installed("azure.identity"):
            raise ValueError(f"entra_id: true needs azure-identity, which is not installed: {install_hint('azure')}")
        return self

    def answer(self, case: Any, run: TargetRun) -> Answer:
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.templates import TemplateError, render_strings

        if run.endpoints is None:
            return Answer(error="the azure_openai target needs the run's endpoints")
        try:
            messages = render_strings(self.messages, template_variables(case), "messages")
        except (ValueError, TemplateError) as exc:
            return Answer(error=str(exc))
        if self.tools is not None or getattr(case, "tools", None):
            from agenteval.agents.loop import tool_loop

            looped = tool_loop(self, case, run, messages)
            if looped is not None:
                return loop_answer("azure_openai", Answer(**looped), self.parse_json)
        try:
            reply = self._send(run, messages, tool_definitions(self.tools), self.response_format)
        except EndpointError as exc:
            return Answer(error=f"azure_openai target: {exc}")
        return reply_answer("azure_openai", reply, messages, self.parse_json)

    def step(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, run: TargetRun, response_format: dict[str, Any] | None = None,
    ) -> StepReply:
        """One model call over a conversation in the canonical shape (chat completions' own): the tool loop's
        step. `response_format` (a judge's json_schema; default: the target's own) is sent as it is."""
        from agenteval.agents.loop import read_tool_calls
        from agenteval.agents.protocol import StepReply
        from agenteval.endpoints.client import EndpointError

        if run.endpoints is None:
            return StepReply(error="the azure_openai target needs the run's endpoints")
        try:
            reply = self._send(run, messages, tools or None, response_format or self.response_format)
        except EndpointError as exc:
            return StepReply(error=f"azure_openai target: {exc}")
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        raw_calls = reply.message.get("tool_calls")
        if isinstance(raw_calls, list) and raw_calls:
            message["tool_calls"] = [dict(call) if isinstance(call, dict) else call for call in raw_calls]
        return StepReply(message, reply.content, read_tool_calls(message.get("tool_calls")), reply.usage, reply.model)

    def embed(self, texts: list[str], run: TargetRun) -> EmbedReply:
        """Embeddings of `texts` from `embedding_deployment`."""
        from agenteval.agents.protocol import EmbedReply
        from agenteval.endpoints.azure_openai import deployment_url, embed
        from agenteval.endpoints.client import EndpointError

        if run.endpoints is None:
            return EmbedReply(error="the azure_openai target needs the run's endpoints")
        if not self.embedding_deployment:
            return EmbedReply(error="azure_openai target: no `embedding_deployment` to embed with")
        try:
            settings, auth = self._transport(run, self.embedding_deployment)
            url = deployment_url(run.endpoints.url(settings), self.embedding_deployment, "embeddings")
            vectors, usage = embed(run.endpoints, settings, url, self.api_version, auth, texts)
        except EndpointError as exc:
            return EmbedReply(error=f"azure_openai target: {exc}")
        return EmbedReply(vectors=vectors, usage=usage, model=self.embedding_deployment)

    def credential_problem(self, environ: Mapping[str, str], models: Mapping[str, Any]) -> str | None:
        """What to set when this target could not authorise a request, or None (agenteval.agents.protocol)."""
        if self.entra_id:
            return None  # DefaultAzureCredential's chain is only known by asking it
        name = self.ad_token_env or self.api_key_env
        if name and not (environ.get(name) or "").strip():
            return f"environment variable {name} is not set ({'ad_token_env' if self.ad_token_env else 'api_key_env'})"
        if not self.resource and not self.base_url and not (environ.get("AZURE_OPENAI_ENDPOINT") or "").strip():
            return "no Azure OpenAI endpoint: set `resource:` or `base_url:` on the target, or AZURE_OPENAI_ENDPOINT"
        return None

    def _transport(self, run: TargetRun, deployment: str) -> tuple[ModelEndpoint, Any]:
        """(the settings as sent: endpoint, model and auth header; the Entra ID signer or None)."""
        from agenteval.endpoints.azure_openai import EntraToken

        assert run.endpoints is not None
        base = self.base_url or (f"https://{self.resource}.openai.azure.com" if self.resource else DEFAULT_ENDPOINT)
        given = {name.lower() for name in self.headers}
        headers: dict[str, str] = {}
        auth = None
        if self.entra_id:
            auth = run.endpoints.shared(("azure-entra-id",), EntraToken)
        elif self.ad_token_env and "authorization" not in given:
            headers["Authorization"] = "Bearer ${" + self.ad_token_env + "}"
        elif self.api_key_env and "api-key" not in given:
            headers["api-key"] = "${" + self.api_key_env + "}"  # read when sent, so a replay needs no key; redacted as every `${NAME}`
        settings = self.model_copy(update={"api_key_env": None, "base_url": base, "model": deployment, "headers": {**headers, **self.headers}})
        return settings, auth

    def _send(
        self, run: TargetRun, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, response_format: dict[str, Any] | None,
    ) -> ChatReply:
        from agenteval.endpoints.azure_openai import complete, deployment_url
        from agenteval.endpoints.chat import chat_body

        assert run.endpoints is not None
        settings, auth = self._transport(run, self.deployment)
        url = deployment_url(run.endpoints.url(settings), self.deployment, "chat/completions")
        body = chat_body(settings, messages, tools=tools, tool_choice=self.tool_choice, response_format=response_format)
        cache = self.cache if self.cache is not None else self.temperature == 0
        return complete(run.endpoints, settings, url, self.api_version, auth, body, cache=cache, variant=run.repetition)
