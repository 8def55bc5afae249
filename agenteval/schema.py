"""JSON Schemas generated from the models; `schemas/` holds their committed copies."""

from __future__ import annotations

from typing import Any

SCHEMA_NAMES = ("suite", "result", "judge")
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema(name: str) -> dict[str, Any]:
    from pydantic import TypeAdapter

    if name == "suite":
        from agenteval.suite.models import Suite

        generated = _with_includes(Suite.model_json_schema())
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


_INCLUDE = {
    "type": "object",
    "properties": {"include": {"type": "string", "description": "A YAML or JSON file inside the suite's folder, relative to this file."}},
    "required": ["include"],
    "additionalProperties": False,
    "description": "Stands for the evaluators (in an `evaluators:` list) or the criteria (as `criteria:`) the file holds.",
}


def _with_includes(generated: dict[str, Any]) -> dict[str, Any]:
    """`include: FILE` where the loader expands it (agenteval.suite.includes): evaluators lists and `criteria:`."""
    generated.setdefault("$defs", {})["Include"] = _INCLUDE
    ref = {"$ref": "#/$defs/Include"}
    for owner in [generated, *generated["$defs"].values()]:
        properties = owner.get("properties", {})
        evaluators = properties.get("evaluators")
        if isinstance(evaluators, dict) and evaluators.get("type") == "array" and "items" in evaluators:
            evaluators["items"] = {"anyOf": [evaluators["items"], ref]}
        criteria = properties.get("criteria")
        if isinstance(criteria, dict) and criteria.get("type") == "array":
            properties["criteria"] = {"anyOf": [criteria, ref], **{k: criteria[k] for k in ("description", "title") if k in criteria}}
    return generated
