"""Property-based tests: no data makes a built-in evaluator raise, and no edit of a suite makes loading crash.

Random JSON candidate and expected answers, random paths (well-formed or not) and random case
inputs go through every in-process evaluator type of the registry; the score must stay a number
in [0, 1] and the verdict one of the four. Random mutations of the example suites (structural
and byte-level) must either load or be refused with `file[:line]: message` problems.
"""

from __future__ import annotations

import copy
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agenteval.evaluators import REGISTRY, EvalContext
from agenteval.evaluators.base import EvaluatorResult
from agenteval.suite.loader import LoadedSuite, SuiteInvalid, load_suite
from conftest import EXAMPLES

# Modest counts keep the file near 15 s: every registered type gets its own examples.
EVALUATOR_SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
MUTATION_SETTINGS = settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# Types left out, each for a reason: they start processes or call a network service, which a
# property test cannot do thousands of times (their failure handling is tested in tests/faults/
# and in their own test files with real processes and servers).
EXCLUDED = {
    "code_judge": "starts a process per case",
    "llm_judge": "calls a model over HTTP",
    "semantic_similarity": "calls an embeddings endpoint over HTTP",
    "python": "imports and runs user code",
    "faithfulness": "calls a model over HTTP",
    "answer_relevance": "calls a model over HTTP",
    "context_precision": "calls a model over HTTP",
    "context_recall": "calls a model over HTTP",
    "context_relevance": "calls a model over HTTP",
}

# A minimal valid config per type, as variants that read the candidate (and the expected
# answer) at `path`. A new evaluator type needs an entry here.
TEXT_VARIANTS = [
    lambda p: {"path": p},
    lambda p: {"path": p, "reference_path": p, "as_json": True, "normalize_whitespace": True},
    lambda p: {"path": p, "reference": ["x", "y z"], "case_sensitive": False},
]
CONFIGS: dict[str, list[Any]] = {
    "field_accuracy": [
        lambda p: {"fields": [{"path": p}, {"path": "a", "required": False}]},
        lambda p: {"fields": [{"path": p, "match": "fuzzy", "algorithm": "jaro_winkler"}, {"path": p, "match": "date", "day_first": True}]},
        lambda p: {"fields": [{"path": p, "match": "numeric_tolerance", "tolerance": 0.1, "relative": True}], "aggregation": "all_or_nothing"},
    ],
    "field_confusion": [lambda p: {"fields": [p, "a"], "max_examples": 1}],
    "line_items": [
        lambda p: {"path": p},
        lambda p: {"path": p, "match_fields": ["description", "amount"], "fields": ["amount"], "matching": "optimal", "max_rows": 1},
    ],
    "iou_score": [
        lambda p: {"path": p},
        lambda p: {"path": p, "item_field": "box", "label_field": "label", "matching": "optimal", "format": "xywh"},
        lambda p: {"path": p, "format": "polygon", "matching": "index", "polygon_mode": "bbox"},
    ],
    "distance": [
        lambda p: {"path": p, "max_distance": 10},
        lambda p: {"path": p, "metric": "cosine", "matching": "optimal"},
        lambda p: {"path": p, "metric": "manhattan", "max_distance": 5, "item_field": "box", "label_field": "label"},
    ],
    "tool_calls": [
        lambda p: {"path": p},
        lambda p: {"path": p, "expected_path": p, "order": "exact", "forbidden": ["rm"], "max_calls": {"a": 1}, "min_calls": {"b": 1}},
        lambda p: {"expected_path": p, "order": "in_order", "allow_extra": False},
    ],
    "composite": [
        lambda p: {"evaluators": [{"type": "field_accuracy", "fields": [{"path": p}]}, {"type": "equals", "path": p}]},
        lambda p: {"aggregation": "any", "evaluators": [{"type": "regex", "path": p, "pattern": "a"}, {"type": "composite", "evaluators": [{"type": "length", "path": p, "max": 3}]}]},
    ],
    "equals": TEXT_VARIANTS,
    "contains": TEXT_VARIANTS + [lambda p: {"path": p, "reference": ["a", "b"], "mode": "any"}],
    "not_contains": TEXT_VARIANTS,
    "starts_with": TEXT_VARIANTS,
    "ends_with": TEXT_VARIANTS,
    "regex": [
        lambda p: {"path": p, "pattern": "a+b?"},
        lambda p: {"path": p, "pattern": "^x$", "must_match": False, "as_json": True, "flags": ["ignorecase", "multiline"]},
    ],
    "length": [lambda p: {"path": p, "min": 1, "max": 5}, lambda p: {"path": p, "unit": "words", "max": 3, "as_json": True}],
    "json_valid": [lambda p: {"path": p}, lambda p: {"path": p, "as_json": True}],
    "json_schema": [lambda p: {"path": p, "schema": {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}}],
    "text_similarity": [lambda p, a=a: {"path": p, "algorithm": a} for a in ("sorensen_dice", "levenshtein", "jaro_winkler", "token_set")]
    + [lambda p: {"path": p, "reference_path": p, "as_json": True}],
    "keyword_coverage": [
        lambda p: {"path": p, "keywords": ["a", ["b", "c"]], "whole_word": True},
        lambda p: {"path": p, "keywords_path": "expected." + p},
    ],
    "sentiment": [lambda p: {"path": p}, lambda p: {"path": p, "analyzer": "afinn", "expect": "positive", "output": "category"}],
    "conversation": [
        lambda p: {"max_turns": 3, "facts": {"order": "A-1", "zip": 12345}},
        lambda p: {"goal": False, "retention": True, "scope": "conversation"},
    ],
    "toxicity": [lambda p: {"path": p, "terms": ["bad", "very bad"]}, lambda p: {"path": p, "terms": ["x"], "default_list": True, "whole_word": False}],
    "latency": [lambda p: {"max_ms": 100}],
    "token_usage": [lambda p: {"max_tokens": 10, "max_input_tokens": 5, "max_output_tokens": 5}],
    "cost": [lambda p: {"max_usd": 0.01}],
    # retrieval refuses a malformed path when it loads, so its paths are fixed: the answers are the random part.
    "retrieval": [
        lambda p: {"path": "a", "metrics": [{"metric": "ndcg", "k": 3, "min": 0.5}, {"metric": "reciprocal_rank"}]},
        lambda p: {"path": "b", "relevant_path": "a", "metrics": [{"metric": "precision", "k": 2, "min": 0.5}, {"metric": "r_precision"}]},
    ],
    "javascript": [
        lambda p: {"path": p, "code": "typeof output === 'string' ? output.length > 0 : output !== null"},
        lambda p: {"path": p, "code": "const n = JSON.stringify(output) || ''; n.length / 100", "threshold": 0.1},
    ],
    "spans": [
        lambda p: {"checks": [{"kind": "tool", "count": 1}, {"error": False}, {"max_ms": 10, "percentile": 95}]},
        lambda p: {"checks": [{"name": "a", "where": {"x": 1}, "attribute": "duration_ms", "at_least": 1, "at_most": 5}, {"attribute": "x", "equals": "a"}]},
    ],
}

KEYS = ["a", "b", "0", "line_items", "description", "amount", "box", "label", "regions", "messages",
        "tool_calls", "name", "arguments", "role", "content", "format", "coordinates", "x", "y", "spans", "kind", "attributes", "duration_ms"]
scalars = (
    st.none() | st.booleans() | st.integers() | st.integers(-5, 5)
    | st.floats(allow_nan=True, allow_infinity=True) | st.floats(-10, 10)
    | st.text(max_size=12) | st.sampled_from(["2024-01-15", "15.01.2024", "a", "b c", "", "NaN"])
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), children, max_size=5),
    max_leaves=25,
)
well_formed_paths = st.lists(
    st.sampled_from(KEYS).map(lambda k: "." + k) | st.integers(-2, 3).map(lambda i: f"[{i}]"), min_size=1, max_size=4
).map(lambda parts: "".join(parts).lstrip("."))
paths = well_formed_paths | st.text(alphabet="ab0.[]-*$' \\\"", max_size=10) | st.text(max_size=6)
# What agenteval.usage records: counts and amounts that may be absent, never other types.
usage = st.none() | st.fixed_dictionaries({}, optional={
    "latency_ms": st.floats(0, 1e6), "input_tokens": st.none() | st.integers(0, 10**9),
    "output_tokens": st.none() | st.integers(0, 10**9), "total_tokens": st.none() | st.integers(0, 10**9),
    "cost_usd": st.floats(0, 1e3), "cached": st.just(True),
})


@pytest.mark.parametrize("type_name", sorted(REGISTRY))
def test_random_data_never_makes_an_evaluator_raise(type_name):
    if type_name in EXCLUDED:
        pytest.skip(f"{type_name}: {EXCLUDED[type_name]}")
    if type_name not in CONFIGS:
        pytest.fail(
            f"evaluator type {type_name!r} has no config in tests/test_properties.py: add a minimal valid one to "
            f"CONFIGS (or, if it starts processes or calls a network, to EXCLUDED with the reason)"
        )
    cls = REGISTRY[type_name]

    @EVALUATOR_SETTINGS
    @given(
        variant=st.sampled_from(CONFIGS[type_name]), path=paths, expected=json_values, candidate=json_values,
        case_input=json_values, metadata=st.dictionaries(st.sampled_from(KEYS), json_values, max_size=3), spent=usage,
    )
    def check(variant, path, expected, candidate, case_input, metadata, spent):
        config = cls.model_validate({"type": type_name, **variant(path)})
        ctx = EvalContext(case_id="c", input=case_input, expected=expected, output=candidate, metadata=metadata,
                          base_dir=Path("."), usage=spent)
        try:
            result = config.evaluate(ctx)
        finally:
            config.close()
        assert_sound(result, config.label, type_name)

    check()


def assert_sound(result: EvaluatorResult, label: str, type_name: str) -> None:
    assert isinstance(result, EvaluatorResult)
    assert (result.name, result.type) == (label, type_name)
    assert isinstance(result.score, (int, float)) and not isinstance(result.score, bool)
    assert not math.isnan(result.score) and 0.0 <= result.score <= 1.0, result
    assert result.verdict in ("pass", "partial", "fail", "error"), result
    assert all(isinstance(item, str) for item in result.hits + result.misses), result
    if result.verdict == "error":
        assert result.error, "an error verdict says why"


def test_every_registered_type_is_covered_or_excluded_with_a_reason():
    missing = sorted(set(REGISTRY) - set(CONFIGS) - set(EXCLUDED))
    assert not missing, (
        f"add a minimal config for {missing} to CONFIGS in tests/test_properties.py "
        "(or to EXCLUDED, with the reason, if the type starts processes or calls a network)"
    )
    for type_name, variants in CONFIGS.items():
        if type_name in REGISTRY:
            for variant in variants:
                REGISTRY[type_name].model_validate({"type": type_name, **variant("a.b")})


# --- random mutations of the example suites ----------------------------------------------------------

EXAMPLE_SUITES = sorted(path.parent.name for path in EXAMPLES.glob("*/suite.yaml"))


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> Path:
    """A private copy of examples/, so mutants sit beside the files the suites refer to."""
    copy_dir = tmp_path_factory.mktemp("examples") / "examples"
    shutil.copytree(EXAMPLES, copy_dir)
    return copy_dir


@st.composite
def mutated_tree(draw, tree: Any) -> Any:
    """The tree with one node deleted, replaced, renamed, wrapped, duplicated or turned to text."""
    tree = copy.deepcopy(tree)
    parent, key, node = None, None, tree
    while isinstance(node, (dict, list)) and node and draw(st.booleans()):
        key = draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
        parent, node = node, node[key]
    if parent is None:
        return draw(json_values)
    operation = draw(st.sampled_from(["delete", "replace", "rename", "wrap", "duplicate", "text"]))
    if operation == "delete":
        del parent[key]
    elif operation == "replace":
        parent[key] = draw(json_values)
    elif operation == "rename" and isinstance(parent, dict):
        parent[draw(st.sampled_from(KEYS) | st.text(max_size=8))] = parent.pop(key)
    elif operation == "wrap":
        parent[key] = [node]
    elif operation == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(node))
    else:
        parent[key] = str(node)
    return tree


@st.composite
def mutated_text(draw, text: str) -> str:
    """The text cut short, or with a character inserted, deleted or a line replaced."""
    at = draw(st.integers(0, len(text)))
    operation = draw(st.sampled_from(["cut", "insert", "delete", "line"]))
    if operation == "cut":
        return text[:at]
    if operation == "insert":
        return text[:at] + draw(st.sampled_from(list(":-[]{}&*!|>'\"#\t\n ")) | st.characters(exclude_categories=["Cs"])) + text[at:]
    if operation == "delete":
        return text[:at] + text[at + 1 :]
    lines = text.splitlines(keepends=True)
    index = draw(st.integers(0, max(0, len(lines) - 1)))
    lines[index:index + 1] = [draw(st.text(max_size=30)) + "\n"]
    return "".join(lines)


def assert_loads_or_refuses_cleanly(path: Path) -> None:
    try:
        loaded = load_suite(path)
    except SuiteInvalid as invalid:
        errors = [problem for problem in invalid.problems if problem.severity == "error"]
        assert errors, "refused without an error"
        for problem in invalid.problems:
            rendered = problem.render()
            assert "\n" not in rendered, rendered
            assert rendered.startswith(str(problem.file)) and problem.message.strip(), rendered
        return
    assert isinstance(loaded, LoadedSuite)
    assert loaded.suite.name


@pytest.mark.parametrize("suite_name", EXAMPLE_SUITES)
def test_structural_mutations_of_an_example_suite_load_or_are_refused_cleanly(examples, suite_name):
    folder = examples / suite_name
    tree = yaml.safe_load((folder / "suite.yaml").read_text())
    mutant = folder / "mutant.yaml"

    @MUTATION_SETTINGS
    @given(mutated_tree(tree))
    @example({"\n": None})  # a key holding a line break is still reported on one line
    def check(changed):
        mutant.write_text(yaml.safe_dump(changed, allow_unicode=True, sort_keys=False))
        assert_loads_or_refuses_cleanly(mutant)

    check()


@pytest.mark.parametrize("example", EXAMPLE_SUITES)
def test_byte_level_mutations_of_an_example_suite_or_its_cases_load_or_are_refused_cleanly(examples, example):
    folder = examples / example
    suite_text = (folder / "suite.yaml").read_text()
    cases = next((p for p in sorted(folder.glob("cases.*"))), None)
    mutant = folder / "mutant.yaml"

    @MUTATION_SETTINGS
    @given(st.data())
    def check(data):
        if cases is not None and data.draw(st.booleans()):
            mutant_cases = folder / f"mutant-cases{cases.suffix}"
            mutant_cases.write_text(data.draw(mutated_text(cases.read_text())))
            mutant.write_text(suite_text.replace(f"cases: {cases.name}", f"cases: {mutant_cases.name}"))
        else:
            mutant.write_text(data.draw(mutated_text(suite_text)))
        assert_loads_or_refuses_cleanly(mutant)

    check()
