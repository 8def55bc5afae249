"""Expected calls written in the Berkeley Function Calling Leaderboard's answer format, read as they are.

A BFCL ground truth is a list of calls, each `{"function": {"param": [accepted values]}}`. In a list
of accepted values `""` means the parameter may be left out; a dict is a nested object whose keys
again list their accepted values; a list of such dicts is an array of objects. Each call becomes an
`ExpectedCall` whose arguments are `any_of` / `object` / `array` checks.
"""

from __future__ import annotations

from typing import Any

BFCL_IGNORED_CHARACTERS = " ,./-_*^"  # what BFCL's standardize_string removes before comparing text


def bfcl_calls(answer: Any, where: str) -> list[dict[str, Any]] | str:
    """The expected calls (as `calls:` would write them), or why the answer is not in BFCL's format."""
    items = [answer] if isinstance(answer, dict) else answer
    if not isinstance(items, list):
        return f"the expected calls at {where} are not a list of BFCL calls ({{function: {{parameter: [accepted values]}}}})"
    calls = []
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not item:
            return f"the expected calls at {where} are invalid: {index}: a BFCL call is an object {{function: {{parameter: [accepted values]}}}}"
        for name, parameters in item.items():
            if not isinstance(parameters, dict):
                return f"the expected calls at {where} are invalid: {index}.{name}: the parameters are not an object"
            arguments = {}
            for parameter, accepted in parameters.items():
                if not isinstance(accepted, list) or not accepted:
                    return (
                        f"the expected calls at {where} are invalid: {index}.{name}.{parameter}: "
                        "the accepted values must be a non-empty list (BFCL format)"
                    )
                arguments[parameter] = _accepted(accepted)
            calls.append({"name": name, "arguments": arguments})
    return calls


def _accepted(values: list[Any]) -> dict[str, Any]:
    """One parameter's list of accepted values as a check."""
    optional = any(type(value) is str and value == "" for value in values)
    given = [value for value in values if not (type(value) is str and value == "")]
    if not given:
        return {"match": "any_of", "values": [""]}
    alternatives = [_alternative(value) for value in given]
    if len(alternatives) == 1:
        check = alternatives[0]
    elif all(alternative["match"] == "exact" for alternative in alternatives):
        check = {"match": "any_of", "values": given}  # plain values: compared by one set lookup
    else:
        check = {"match": "any_of", "values": alternatives}
    if optional:
        check = {**check, "required": False}
    return check


def _alternative(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {"match": "object", "properties": {
            key: _accepted(accepted) if isinstance(accepted, list) and accepted else {"match": "exact", "value": accepted}
            for key, accepted in value.items()
        }}
    if isinstance(value, list) and value and all(isinstance(element, dict) for element in value):
        return {"match": "array", "items": [_alternative(element) for element in value], "order": "in_order"}
    return {"match": "exact", "value": value}
