"""`agenteval report --agreement`: how far each judge agrees with the people who reviewed it, as text or JSON."""

from __future__ import annotations

from typing import Any

import orjson

from agenteval.agreement import MIN_CASES, Agreement


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def agreement_text(found: list[Agreement], reviews: int) -> str:
    """One block per evaluator or criterion: the sentence, then the figures and the confusion table."""
    if not found:
        return (f"no reviewed verdicts or scores to compare ({reviews} review{'s' if reviews != 1 else ''}); "
                "review cases in `agenteval view` or fold scores in with `agenteval feedback add`\n")
    lines = [f"Agreement with people ({reviews} review{'s' if reviews != 1 else ''}; kappa needs {MIN_CASES}+ reviewed cases)"]
    for agreement in found:
        lines.append("")
        lines.append(agreement.sentence())
        figures = [f"raw agreement {_number(agreement.agreement)}"]
        if agreement.base_rate is not None:
            figures.append(f"people passed {agreement.base_rate:.0%}")
        if not agreement.small_sample:
            if agreement.graded:
                figures.append(f"weighted kappa {_number(agreement.weighted_kappa)}")
            if agreement.alpha is not None:
                figures.append(f"Krippendorff's alpha ({agreement.raters} raters) {_number(agreement.alpha)}")
        if agreement.graded:
            figures.append(f"mean absolute difference {_number(agreement.mean_absolute_difference)}")
        if agreement.self_consistency is not None:
            figures.append(f"self-consistency over repeats (Fleiss' kappa) {_number(agreement.self_consistency)}")
        if agreement.split:
            figures.append(f"{agreement.split} case{'s' if agreement.split != 1 else ''} with reviewers split evenly left out")
        lines.append("  " + "; ".join(figures))
        labels = [_label(label) for label in agreement.labels]
        width = max([len("judge \\ people"), *map(len, labels)])
        lines.append("  " + "judge \\ people".ljust(width) + "".join(f"  {label:>6}" for label in labels))
        for label, row in zip(labels, agreement.table):
            lines.append("  " + label.ljust(width) + "".join(f"  {count:>6}" for count in row))
    return "\n".join(lines) + "\n"


def agreement_json(found: list[Agreement], reviews: int) -> str:
    body: dict[str, Any] = {"reviews": reviews, "min_cases": MIN_CASES, "agreement": [agreement.as_dict() for agreement in found]}
    return orjson.dumps(body, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode() + "\n"


def _label(label: Any) -> str:
    return f"{label:g}" if isinstance(label, float) else str(label)
