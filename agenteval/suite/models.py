"""The suite file and its cases, as typed models. `agenteval schema suite` is generated from these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from agenteval.config import StrictModel
from agenteval.evaluators.base import EvaluatorSpec
from agenteval.evaluators.transform import Transform, check_expression
from agenteval.limits import Limits
from agenteval.endpoints.settings import ModelEndpoint
from agenteval.targets import RecordedTarget, TargetSpec
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

    @property
    def has_output(self) -> bool:
        return "output" in self.model_fields_set

    @classmethod
    def builder(cls, context: dict[str, Any] | None = None) -> Callable[[dict[str, Any]], Case]:
        """A function building the case of a record that passed `model_validate` before, byte for
        byte, without validating it again. (pydantic's model_construct is slower than validating: it
        inspects the default factories on every call.) A field whose validator changes the value
        needs a line here, as `id` has."""
        defaults = tuple((name, field.default_factory, field.default) for name, field in cls.model_fields.items())
        new, set_attribute = cls.__new__, object.__setattr__

        def build(record: dict[str, Any]) -> Case:
            if record.get("evaluators"):
                return cls.model_validate(record, context=context)  # evaluator configs are objects only validation builds
            values = {
                name: record[name] if name in record else factory() if factory is not None else default  # type: ignore[call-arg]
                for name, factory, default in defaults
            }
            values["id"] = _int_id_as_text(values["id"])
            case = new(cls)
            set_attribute(case, "__dict__", values)
            set_attribute(case, "__pydantic_fields_set__", set(record))
            set_attribute(case, "__pydantic_extra__", None)
            set_attribute(case, "__pydantic_private__", None)
            return case

        return build


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


class Suite(StrictModel):
    """An eval suite: where answers come from, how they are scored, and the cases."""

    model_config = ConfigDict(
        title="agenteval suite",
        json_schema_extra={"patternProperties": {"^x-": {"description": "Ignored: a place for YAML anchors (`x-base: &base ...`)."}}},
    )

    name: str = Field(min_length=1)
    description: str | None = None
    target: TargetSpec = Field(default_factory=RecordedTarget)
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
    models: dict[str, ModelEndpoint] = Field(
        default_factory=dict, description="Named endpoints, defined once and used by `endpoint: NAME` in targets and model judges."
    )
    prices: dict[str, Price] = Field(
        default_factory=dict, description="USD per million tokens by model name: cost is then recorded per case and summed."
    )
    limits: Limits = Field(
        default_factory=Limits,
        description="Bounds on the work one answer may cause (time per case and per pattern, text and list sizes); "
        "a case past one is an error naming it.",
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
    def _old_trust_name(self) -> Suite:
        if self.trust_case_commands is not None:
            if "trust_cases" in self.model_fields_set and self.trust_cases != self.trust_case_commands:
                raise ValueError("`trust_case_commands` is the old name of `trust_cases`: give only `trust_cases`")
            self.trust_cases = self.trust_case_commands
        return self
    # `endpoint: NAME` must be under `models:`: the loader checks every use at its own line
    # (agenteval.suite.references), together with the suite's other problems.
