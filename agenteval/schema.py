"""JSON Schemas generated from the models; `schemas/` holds their committed copies."""

from __future__ import annotations

from typing import Any

SCHEMA_NAMES = ("suite", "result", "judge")
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema(name: str) -> dict[str, Any]:
    from pydantic import TypeAdapter

    if name == "suite":
        from agenteval.suite.models import Suite

        generated = Suite.model_json_schema()
    elif name == "result":
        from agenteval.results import CaseResult

        generated = TypeAdapter(CaseResult).json_schema()
        generated["title"] = "agenteval result line"
    elif name == "judge":
        from agenteval.evaluators.code_judge import JudgeOutput

        generated = JudgeOutput.model_json_schema()
        generated["title"] = "agenteval code_judge output"
    else:
        raise ValueError(f"unknown schema {name!r} (known: {', '.join(SCHEMA_NAMES)})")
    return {"$schema": DIALECT, **generated}
