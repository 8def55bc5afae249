"""bedrock: ask a model on Amazon Bedrock over the Converse API, messages templated from the case.

The answer has the openai target's shape, `{content, messages, tool_calls, usage, model,
latency_ms}`, with `messages` in the canonical (OpenAI chat) form, so one suite's evaluators score
any model target alike. The wire format and SigV4 signing live in agenteval.endpoints.converse_api;
this module is the suite's view of them. With tools that have an implementation, the target runs
the tool loop (agenteval.agents.loop) over `step`, as the openai target does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from agenteval.agents.loop import ToolLoopFields
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


class BedrockTarget(ModelEndpoint, ToolLoopFields):
    """Converse per case, signed with the AWS credentials of botocore's standard chain."""

    type: Literal["bedrock"]
    model: str | None = Field(
        None,
        description="The model id (`anthropic.claude-3-5-haiku-20241022-v1:0`), a cross-region inference profile "
        "(`us.anthropic.claude-...`) or an ARN (of a profile or a provisioned model).",
    )
    region: str | None = Field(
        None, pattern=r"^[a-z]{2}(-[a-z]+)+-\d+$",
        description="The AWS region, e.g. us-east-1. Default: the region of an ARN model id, else AWS_REGION / AWS_DEFAULT_REGION.",
    )
    base_url: str | None = Field(
        None,
        description="The Bedrock Runtime endpoint (e.g. a VPC endpoint). Default: AWS_ENDPOINT_URL_BEDROCK_RUNTIME, else "
        "AWS_ENDPOINT_URL, else https://bedrock-runtime.{region}.amazonaws.com. The cache knows a reply by region and model, "
        "whichever endpoint it came from.",
    )
    api_key_env: str | None = Field(
        None,
        description="The NAME of the environment variable holding a Bedrock API key (e.g. AWS_BEARER_TOKEN_BEDROCK), sent as "
        "a Bearer token instead of signing with AWS credentials. Default: sign with SigV4.",
    )
    embedding_model: str | None = Field(
        None, description="An embedding model on Bedrock (amazon.titan-embed-text-v2:0, cohere.embed-english-v3) for `embed`.",
    )
    messages: list[TemplatedMessage] = Field(
        default_factory=lambda: [dict(m) for m in DEFAULT_MESSAGES],  # type: ignore[misc]
        description="Chat messages in the OpenAI shape (system messages become the request's `system` blocks); every string is a "
        "jinja2 template over `input`, `case` (id, tags, metadata) and `metadata`. Default: one user message with the input.",
    )
    tool_choice: str | dict[str, Any] | None = Field(
        None, description="auto, required (any), none (no tools offered), `{tool: {name: NAME}}` or the OpenAI function shape (converted).",
    )
    parse_json: bool = Field(False, description="Parse `content` as JSON (a reply that is not JSON is a case error).")

    @field_validator("seed")
    @classmethod
    def _no_seed(cls, seed: int | None) -> int | None:
        if seed is not None:
            raise ValueError("the Converse API has no `seed`")
        return seed

    @model_validator(mode="after")
    def _a_model_and_botocore(self) -> BedrockTarget:
        from agenteval.extras import install_hint, installed

        if not self.model:
            raise ValueError("no `model`: give the Bedrock model id, inference profile or ARN")
        if not installed("botocore"):  # refused at load, as an evaluator's missing extra is
            raise ValueError(f"the bedrock target needs botocore, which is not installed: {install_hint('botocore')}")
        return self

    def answer(self, case: Any, run: TargetRun) -> Answer:
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.converse_api import converse_body
        from agenteval.endpoints.templates import TemplateError, render_strings

        if run.endpoints is None:
            return Answer(error="the bedrock target needs the run's endpoints")
        try:
            messages = render_strings(self.messages, template_variables(case), "messages")
            converse_body(self, messages, tools=tool_definitions(self.tools), tool_choice=self.tool_choice)
        except (ValueError, TemplateError) as exc:
            return Answer(error=str(exc))
        if self.tools is not None or getattr(case, "tools", None):
            from agenteval.agents.loop import tool_loop

            looped = tool_loop(self, case, run, messages)
            if looped is not None:
                return loop_answer("bedrock", Answer(**looped), self.parse_json)
        try:
            reply = self._send(run, messages, tool_definitions(self.tools))
        except (EndpointError, ValueError) as exc:
            return Answer(error=f"bedrock target: {exc}")
        return reply_answer("bedrock", reply, messages, self.parse_json)

    def step(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, run: TargetRun) -> StepReply:
        """One model step of a tool loop or conversation (agenteval.agents.protocol): canonical messages in, the canonical assistant message out."""
        from agenteval.agents.protocol import StepReply, ToolCall
        from agenteval.endpoints.client import EndpointError

        if run.endpoints is None:
            return StepReply(error="the bedrock target needs the run's endpoints")
        try:
            reply = self._send(run, messages, tools or None)
        except (EndpointError, ValueError) as exc:
            return StepReply(error=f"bedrock target: {exc}")
        calls = [ToolCall(id=call["id"], name=call["name"], arguments=call["arguments"]) for call in reply.tool_calls]
        return StepReply(message=reply.message, content=reply.content, tool_calls=calls, usage=reply.usage, model=reply.model)

    def embed(self, texts: list[str], run: TargetRun) -> EmbedReply:
        """Embeddings of `texts` from `embedding_model` over InvokeModel (Titan or Cohere)."""
        from agenteval.agents.protocol import EmbedReply
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.converse_api import embed

        if run.endpoints is None:
            return EmbedReply(error="the bedrock target needs the run's endpoints")
        if not self.embedding_model:
            return EmbedReply(error="bedrock target: no `embedding_model` to embed with (e.g. amazon.titan-embed-text-v2:0)")
        settings = self.model_copy(update={"model": self.embedding_model})
        try:
            region, base, auth = self._where(run, settings.model or "")
            vectors, usage = embed(run.endpoints, settings, base, auth, texts, region)
        except EndpointError as exc:
            return EmbedReply(error=f"bedrock target: {exc}")
        return EmbedReply(vectors=vectors, usage=usage, model=self.embedding_model)

    def credential_problem(self, environ: Mapping[str, str], models: Mapping[str, Any]) -> str | None:
        """What to set when this target could not sign a request, or None (agenteval.agents.protocol)."""
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.converse_api import credentials, region_of

        try:
            region_of(self.model or "", self.region, environ)
            if self.api_key_env:
                return None if (environ.get(self.api_key_env) or "").strip() else f"environment variable {self.api_key_env} is not set (api_key_env)"
            credentials(environ)
        except EndpointError as exc:
            return str(exc)
        return None

    def _where(self, run: TargetRun, model_id: str) -> tuple[str, str, Any]:
        """(the region, the base URL requests go to, the request signer or None for an API key). Raises EndpointError."""
        from agenteval.endpoints.converse_api import SigV4, endpoint_override, region_of, runtime_url

        assert run.endpoints is not None
        environ = run.endpoints.environ
        region = region_of(model_id, self.region, environ)
        base = run.endpoints.url(self) if self.base_url else endpoint_override(environ) or runtime_url(region)
        if self.api_key_env:
            return region, base, None
        return region, base, run.endpoints.shared(("bedrock-sigv4", region), lambda: SigV4(region, environ))

    def _send(self, run: TargetRun, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> ChatReply:
        from agenteval.endpoints.converse_api import converse, converse_body, model_url, runtime_url

        assert run.endpoints is not None
        body = converse_body(self, messages, tools=tools, tool_choice=self.tool_choice)
        region, base, auth = self._where(run, self.model or "")
        cache = self.cache if self.cache is not None else self.temperature == 0
        model_id = self.model or ""
        return converse(
            run.endpoints, self, model_url(base, model_id, "converse"), auth, body, cache=cache, variant=run.repetition,
            cache_as=model_url(runtime_url(region), model_id, "converse"),
        )
