"""The suite file and its cases, as typed models. `agenteval schema suite` is generated from these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from agenteval.agents.tools import CaseTool
from agenteval.config import StrictModel
from agenteval.evaluators.base import EvaluatorSpec
from agenteval.evaluators.transform import Transform, check_expression
from agenteval.limits import Limits
from agenteval.suite.conversation import ScriptedTurn, SimulatedUser, one_kind, turn_label
from agenteval.endpoints.templates import Prompt
from agenteval.targets import TargetSpec
from agenteval.targets.model_entries import ModelEntry
from agenteval.targets.recorded import RecordedTarget
from agenteval.usage import Price


def _int_id_as_text(value: Any) -> Any:
    return str(value) if type(value) is int else value


class Case(BaseModel):
    """One test case. `output` is a recorded candidate answer; case `evaluators` add to (or, same name, replace) the suite's."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, BeforeValidator(_int_id_as_text)] = Field(min_length=1)
    input: Any = None
    expected: Any = Field(
        None,
        description="The reference answer (any JSON). Optional: only evaluators that compare with a reference read it, "
        "and a case without one is a miss for them.",
    )
    output: Any = Field(None, description="A recorded candidate answer.")
    evaluators: list[EvaluatorSpec] | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="The case passes iff its weighted score is at least this, instead of iff every evaluator passes "
        "(an evaluator's `error` still makes the case an error).",
    )
    tools: dict[str, CaseTool] | None = Field(
        None, description="This case's own implementation of tools of the target, by tool name (e.g. `get_order: {mock: [...]}`); "
        "in a cases file, `command`, `python` and `http` need `trust_cases: true`.",
    )
    turns: list[ScriptedTurn] | None = Field(
        None, min_length=1,
        description="A scripted conversation: the user's messages in order (text, or `{user: TEXT, evaluators: [...]}` "
        "with evaluators of that turn's reply); the target answers each with the history so far.",
    )
    user: SimulatedUser | None = Field(
        None, description="A simulated user: a model under `models:` plays the user from `persona` and `goal` until a "
        "`stop` rule or `max_turns`.",
    )

    @model_validator(mode="after")
    def _one_conversation(self) -> Case:
        """A conversation is scripted or simulated; a turn's own evaluators are named for their turn."""
        one_kind(self.turns, self.user)
        for number, turn in enumerate(self.turns or (), 1):
            for evaluator in turn.evaluators or ():
                if not evaluator.label.startswith(turn_label(number, "")):
                    evaluator.name = turn_label(number, evaluator.label)
        return self

    @property
    def is_conversation(self) -> bool:
        return self.turns is not None or self.user is not None

    @property
    def has_output(self) -> bool:
        return "output" in self.model_fields_set

    @classmethod
    def builder(cls, context: dict[str, Any] | None = None) -> Callable[[dict[str, Any]], Case]:
        """A function building the case of a record that passed `model_validate` before, byte for
        byte, without validating it again. (pydantic's model_construct is slower than validating: it
        inspects the default factories on every call.) A field whose validator changes the value
        needs a line here, as `id` has."""
        fields = cls.model_fields
        template = {name: None if field.default_factory is not None else field.default for name, field in fields.items()}  # field order
        factories = tuple((name, field.default_factory) for name, field in fields.items() if field.default_factory is not None)
        new = cls.__new__
        set_dict, set_fields_set, set_extra, set_private = (
            _slot(cls, name) for name in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
        )

        def build(record: dict[str, Any]) -> Case:
            if record.get("evaluators") or record.get("turns") or record.get("user"):
                return cls.model_validate(record, context=context)  # evaluator and conversation configs are objects only validation builds
            values = template.copy()
            for name, factory in factories:
                values[name] = factory()  # type: ignore[call-arg]
            values.update(record)  # (a validated record has no other keys: the order stays the fields')
            if type(values["id"]) is int:
                values["id"] = str(values["id"])
            case = new(cls)
            set_dict(case, values)
            set_fields_set(case, set(record))
            set_extra(case, None)
            set_private(case, None)
            return case

        return build

    @classmethod
    def plain_builder(cls, context: dict[str, Any] | None = None) -> Callable[[Any], Case | None]:
        """Validation's fast path: the case of a record `plain_id` accepts, built without pydantic;
        None for any other record, which `model_validate` judges."""
        build = cls.builder(context)

        def plain(record: Any) -> Case | None:
            if plain_id(record) is None:
                return None
            if "tags" in record:
                record = {**record, "tags": list(record["tags"])}  # (validation gives the case its own list)
            if "metadata" in record:
                record = {**record, "metadata": dict(record["metadata"])}
            return build(record)

        return plain


_PLAIN_KEYS = frozenset(("id", "input", "expected", "output", "tags", "metadata"))


def plain_id(record: Any) -> str | None:
    """The id of a valid case, for a record that only has `id`, `input`, `expected`, `output`, `tags`
    and `metadata`, of types validation accepts as they are (checked here as it checks them), or None:
    any other record, valid or not, is for `Case.model_validate` to judge. Checks without building."""
    if type(record) is not dict or not _PLAIN_KEYS.issuperset(record):
        return None
    case_id = record.get("id")
    if type(case_id) is str:
        if not case_id or not (case_id.isascii() or _utf8(case_id)):  # (validation refuses a lone surrogate)
            return None
    elif type(case_id) is int and -_SHORT_INT < case_id < _SHORT_INT:
        case_id = str(case_id)
    else:
        return None
    if "tags" in record:
        tags = record["tags"]
        if type(tags) is not list or not all(type(tag) is str for tag in tags):
            return None
    if "metadata" in record:
        metadata = record["metadata"]
        if type(metadata) is not dict or not all(type(key) is str for key in metadata):
            return None
    return case_id


def _slot(cls: type, name: str) -> Callable[[Any, Any], None]:
    """The setter of an instance attribute pydantic keeps in a slot (faster than object.__setattr__)."""
    owner = next(klass for klass in cls.__mro__ if name in vars(klass))
    return vars(owner)[name].__set__  # type: ignore[no-any-return]


_SHORT_INT = 10**18  # an integer id below this in size is written as text without a question (Python caps int digits)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class CaseDefaults(StrictModel):
    """What every case gets unless it says otherwise (promptfoo's `defaultTest`): merged when the
    case is read, so results, reports and --resume see each case as it ran."""

    input: dict[str, Any] = Field(
        default_factory=dict, description="Keys added to every case's `input` (a mapping or none); the case's own keys win."
    )
    tags: list[str] = Field(default_factory=list, description="Tags every case has, before its own.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Metadata keys every case has; the case's own keys win.")
    threshold: float | None = Field(
        None, ge=0, le=1, allow_inf_nan=False, description="The `threshold` of every case that gives none."
    )

    @property
    def empty(self) -> bool:
        return not (self.input or self.tags or self.metadata or self.threshold is not None)

    def apply(self, case: Case) -> Case:
        """The case with these defaults merged in (in place; applying twice changes nothing)."""
        values = case.__dict__
        if self.input and (case.input is None or isinstance(case.input, dict)):
            values["input"] = {**self.input, **(case.input or {})}
        if self.tags:
            values["tags"] = [*self.tags, *(tag for tag in case.tags if tag not in self.tags)]
        if self.metadata:
            values["metadata"] = {**self.metadata, **case.metadata}
        if self.threshold is not None and case.threshold is None:
            values["threshold"] = self.threshold
        return case


CELL_NAME = r"^[^/\x00-\x1f]+$"  # a prompt's name: a cell's label joins target and prompt names with "/"
TARGET_NAME = r"^[^\x00-\x1f]+$"  # may hold "/" (`openai/gpt-4.1`): the label's last "/" starts the prompt


class CasePass(StrictModel):
    """`case_pass:` the suite-wide rule a case passes by (AgentV grades this way)."""

    min_score: float = Field(
        ge=0, le=1, allow_inf_nan=False,
        description="A case passes iff its weighted score is at least this (an evaluator's `error` is still an error).",
    )


class TracesSettings(StrictModel):
    """The suite's `traces:` block: spans the system under test exports while a case runs join its answer."""

    receive: bool = Field(
        False,
        description="Start an OTLP/HTTP receiver on 127.0.0.1 for the run: the spans an http or command target exports "
        "under the case's `traceparent` join its answer (tool_calls, steps, usage, spans), as a traces target reads them.",
    )
    port: int = Field(
        0, ge=0, le=65535,
        description="The receiver's port (0: any free one). A command target is told it in OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; "
        "a service behind an http target must be started with it (http://127.0.0.1:PORT/v1/traces).",
    )
    wait_seconds: float = Field(
        10.0, gt=0, le=600, allow_inf_nan=False,
        description="How long after its answer a case waits for the system's first span (its parent is the case's "
        "`traceparent`) to arrive; none by then is the case's error. Above the 5 s an OpenTelemetry SDK's batch "
        "processor waits by default before it exports.",
    )


class Suite(StrictModel):
    """An eval suite: where answers come from, how they are scored, and the cases."""

    model_config = ConfigDict(
        title="agenteval suite",
        json_schema_extra={"patternProperties": {"^x-": {"description": "Ignored: a place for YAML anchors (`x-base: &base ...`)."}}},
    )

    name: str = Field(min_length=1)
    description: str | None = None
    target: TargetSpec = Field(default_factory=RecordedTarget)
    targets: dict[Annotated[str, Field(pattern=TARGET_NAME)], TargetSpec] | None = Field(
        None,
        description="Several targets by name, instead of `target:`: every case runs against each (a cell per target "
        "and prompt); `--target NAME` chooses.",
    )
    prompts: dict[Annotated[str, Field(pattern=CELL_NAME)], Prompt] | None = Field(
        None,
        description="Message templates by name for model targets (openai, anthropic, bedrock, azure_openai, gemini): each replaces the target's "
        "`messages:` in its own cell (a string is one user message); `--prompt NAME` chooses.",
    )
    case_pass: CasePass | None = Field(
        None,
        description="The suite's pass rule for a case: `{min_score: 0.8}` passes a case at a weighted score of at least "
        "0.8 instead of when every evaluator passes (a case's own `threshold` wins).",
    )
    evaluators: list[EvaluatorSpec] = Field(default_factory=list, description="Run on every case, in order.")
    cases: str | list[Case] | list[str] = Field(
        description="A .jsonl, .json, .yaml, .csv or .tsv file relative to this file, a glob (`cases/*.jsonl`), a list "
        "of files and globs (read in order, ids unique across them), or an inline list."
    )
    transform: Transform | None = Field(
        None,
        description="Change the answer before the evaluators see it (each evaluator without its own `transform:`): "
        "a jinja2 expression over `output`, or `{python: module:function}`. Results keep the answer as it came.",
    )
    defaults: CaseDefaults = Field(
        default_factory=CaseDefaults,
        description="Merged into every case: `input` keys, `tags`, `metadata` and `threshold` (the case's own values win).",
    )
    env_file: str | list[str] | None = Field(
        None,
        description="A `.env` file (or several) relative to this file, read when the suite is loaded: each NAME=value "
        "sets a variable the environment lacks (the process's own and `--env-file` values win).",
    )
    trust_cases: bool = Field(
        False,
        description="Let case-level evaluators in the cases file run programs or code (code_judge, python, plugins "
        "that say so), talk to servers of their own (llm_judge, semantic_similarity without `endpoint:`), read files "
        "(`*_file` keys) and name environment variables (`api_key_env`, `${NAME}`). A cases file is data: allow "
        "this only for files you trust like your own code.",
    )
    trust_case_commands: bool | None = Field(
        None, description="The old name of `trust_cases` (still read).", json_schema_extra={"deprecated": True}
    )
    models: dict[str, ModelEntry] = Field(
        default_factory=dict,
        description="Named models, defined once and used by `endpoint: NAME` in targets, model judges and simulated users: "
        "OpenAI-compatible chat completions unless `type:` names another model target type (anthropic, ...).",
    )
    prices: dict[str, Price] = Field(
        default_factory=dict, description="USD per million tokens by model name: cost is then recorded per case and summed."
    )
    limits: Limits = Field(
        default_factory=Limits,
        description="Bounds on the work one answer may cause (time per case and per pattern, text and list sizes); "
        "a case past one is an error naming it.",
    )
    traces: TracesSettings | None = Field(
        None,
        description="`{receive: true}`: receive the spans the system under test exports during each case (OTLP/HTTP on "
        "127.0.0.1) and score them with its answer (docs/traces.md).",
    )
    store: str | None = Field(
        None,
        description="Where results go instead of a JSONL file: sqlite:///runs.db (relative to this file) or "
        "postgresql://USER@HOST/DB. `--store` overrides it, and so does `-o`.",
    )

    @model_validator(mode="after")
    def _suite_transform(self) -> Suite:
        """The suite's `transform:` becomes each suite evaluator's own unless it has one (case-level
        evaluators get it in LoadedSuite.evaluators_for)."""
        if self.transform is not None:
            if isinstance(self.transform, str):
                check_expression(self.transform)
            for evaluator in self.evaluators:
                if evaluator.transform is None:
                    evaluator.transform = self.transform
        return self

    @model_validator(mode="after")
    def _cells(self) -> Suite:
        """`targets:` replaces `target:`; `prompts:` need model targets and become message lists."""
        if self.targets is not None:
            if "target" in self.model_fields_set:
                raise ValueError("give `target:` (one target) or `targets:` (several by name), not both")
            if not self.targets:
                raise ValueError("`targets:` names no target")
        if self.prompts is not None:
            if not self.prompts:
                raise ValueError("`prompts:` names no prompt")
            for name, target in self.named_targets():
                if "messages" not in type(target).model_fields:
                    where = f"target {name!r}" if name is not None else "the target"
                    raise ValueError(f"`prompts:` are messages for model targets (openai, anthropic, gemini); {where} is a {target.type} target")
            prompts: dict[str, str | list[dict[str, Any]]] = {}
            for name, messages in self.prompts.items():
                messages = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
                prompts[name] = messages
            self.prompts = prompts
        if self.case_pass is not None and self.defaults.threshold is not None:
            raise ValueError("give `case_pass.min_score` or `defaults.threshold`, not both (they are one rule)")
        return self

    def named_targets(self) -> list[tuple[str | None, TargetSpec]]:
        """(name, target) of every target the suite defines: `targets:` by name, else the one `target:`."""
        if self.targets is not None:
            return list(self.targets.items())
        return [(None, self.target)]

    @property
    def pass_score(self) -> float | None:
        """The score a case must reach when the suite grades by score (`case_pass:`), else None."""
        return None if self.case_pass is None else self.case_pass.min_score

    @model_validator(mode="after")
    def _old_trust_name(self) -> Suite:
        if self.trust_case_commands is not None:
            if "trust_cases" in self.model_fields_set and self.trust_cases != self.trust_case_commands:
                raise ValueError("`trust_case_commands` is the old name of `trust_cases`: give only `trust_cases`")
            self.trust_cases = self.trust_case_commands
        return self

    @model_validator(mode="after")
    def _receiving_target(self) -> Suite:
        """`traces: {receive: true}` needs a target that is sent the case's traceparent."""
        if self.traces is not None and self.traces.receive:
            kinds = {target.type for target in (self.targets or {"": self.target}).values()}
            if not kinds & {"http", "command", "python"}:
                raise ValueError(
                    f"traces.receive: spans are received from a system an http, command or python target calls (it is sent the "
                    f"case's traceparent); this suite's target is {', '.join(sorted(kinds))}"
                )
        return self
    # `endpoint: NAME` must be under `models:`: the loader checks every use at its own line
    # (agenteval.suite.references), together with the suite's other problems.
