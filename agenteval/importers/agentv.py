"""AgentV's eval YAML (`*.eval.yaml`) as an agenteval suite.

`tests` become cases (`input` and `expected_output` become input and expected), assertions become
built-in evaluators (`field-accuracy`, `tool-trajectory` as tool_calls, text rules, `rubrics` and
`llm-grader` as llm_judge criteria, `composite`, `code-grader` as a code_judge running the same
command with AgentV's payload fields). Targets are named in AgentV's `.agentv/targets.yaml`, which
the eval file does not hold: the suite scores recorded answers or `--predictions`, and the target
names are listed. Files written in AgentV's newer promptfoo-shaped format (`prompts`, `providers`,
tests with `vars`) go through the promptfoo importer, with AgentV's assertion types added.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

from agenteval.importers import ImportFailed, Imported, Names, Parsed, Skipped, Source, slug, strip_file_prefix
from agenteval.importers.promptfoo import OPENAI_URL, GRADER_MODEL, PromptfooImporter, finish_references
from agenteval.suite.yaml_nodes import KeyPath

TOP_WHY = {
    "version": "a suite version has no agenteval key (keep it in the file name or git)",
    "author": "no agenteval key",
    "license": "no agenteval key",
    "requires": "no agenteval key",
    "workspace": "workspaces (a folder, repos and hooks set up per test) are not built in agenteval; a command target can prepare one",
    "input_files": "input files are not read into the input; name them in the input",
    "$schema": "no agenteval key",
    "target": "targets are defined in .agentv/targets.yaml, which is not read: answers come from --predictions or recorded outputs",
}
EXECUTION_WHY = {
    "target": TOP_WHY["target"],
    "targets": "targets are defined in .agentv/targets.yaml, which is not read: answers come from --predictions or recorded outputs; "
               "name them under the suite's `targets:` to compare them",
    "workers": "give --workers N to `agenteval run`",
    "trials": "a suite holds no repeat count: `agenteval run --repeat N` runs each case N times and reports pass@k, pass^k and the flaky cases",
    "cache": "agenteval caches model replies by default (--no-cache turns it off)",
    "total_budget_usd": "a run-wide budget maps to a `cost` evaluator's `total_usd`; not carried (give one if you need it)",
    "totalBudgetUsd": "a run-wide budget maps to a `cost` evaluator's `total_usd`; not carried (give one if you need it)",
    "fail_on_error": "agenteval always records an errored case and goes on (exit 3)",
    "failOnError": "agenteval always records an errored case and goes on (exit 3)",
    "threshold": "a `threshold` is a number from 0 to 1 (a case's pass mark)",
    "skip_defaults": "no default graders in agenteval",
}


def _unit_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


class AgentVImporter:
    def __init__(self, config: Parsed, source: Source, out_dir: Path | None) -> None:
        self.config = config
        self.source = source
        self.out_dir = out_dir
        self.result = Imported(config_name=config.name)
        self.uses_grader = False
        self.runs_code = False

    def skip(self, parsed: Parsed, path: KeyPath, why: str, note: bool = False) -> None:
        from agenteval.importers.promptfoo import _key

        self.result.skipped.append(Skipped(parsed.name, parsed.line(path), _key(path), why, note))

    def run(self) -> Imported:
        data = self.config.data
        handled = {"name", "description", "tests", "eval_cases", "execution", "assertions", "evaluators", "input", "tags"}
        for key in data:
            if key not in handled:
                self.skip(self.config, (key,), TOP_WHY.get(key, "not an AgentV key agenteval knows"))
        execution = data.get("execution") if isinstance(data.get("execution"), dict) else {}
        suite_assertions: list[tuple[KeyPath, Any]] = []
        for key in ("assertions", "evaluators"):
            suite_assertions += [((key, i), a) for i, a in enumerate(data.get(key) or [])]
        suite_threshold = None
        for key, value in execution.items():
            if key in ("assertions", "evaluators"):
                suite_assertions += [(("execution", key, i), a) for i, a in enumerate(value or [])]
            elif key == "threshold" and _unit_number(value):
                suite_threshold = value  # AgentV's per-test pass boundary, for every test: agenteval's `defaults.threshold`
            else:
                self.skip(self.config, ("execution", key), EXECUTION_WHY.get(key, f"execution key `{key}` has no agenteval form"))
        suite_names = Names()
        evaluators = self.assertions(suite_assertions, self.config, (), suite_names)

        tests_key = "tests" if "tests" in data else "eval_cases"
        raw_tests = data.get(tests_key)
        tests: list[tuple[Parsed, KeyPath, Any]] = []
        if isinstance(raw_tests, str):
            why = self.source.missing(raw_tests)
            if why is not None:
                raise ImportFailed(f"{self.config.name}:{self.config.line((tests_key,))}: tests file {why}")
            if raw_tests.endswith(".jsonl"):
                shown = Parsed(strip_file_prefix(raw_tests), None, {})  # (named as messages name the file: `tests.jsonl`)
                for line, value in self.source.jsonl(raw_tests):
                    shown.lines[(line,)] = line
                    tests.append((shown, (line,), value))
            else:
                parsed = self.source.parsed(raw_tests)
                items = parsed.data if isinstance(parsed.data, list) else (parsed.data or {}).get("tests", [])
                tests += [(parsed, (i,) if isinstance(parsed.data, list) else ("tests", i), t) for i, t in enumerate(items)]
        elif isinstance(raw_tests, list):
            tests += [(self.config, (tests_key, i), t) for i, t in enumerate(raw_tests)]
        suite_input = data.get("input")
        tags = [str(t) for t in data.get("tags") or []] if isinstance(data.get("tags"), list) else []
        cases = []
        for index, (parsed, path, test) in enumerate(tests):
            if not isinstance(test, dict):
                self.skip(parsed, path, "a test that is not a mapping is not converted")
                continue
            cases.append(self.case(index, parsed, path, test, suite_input, tags, suite_names, bool(evaluators)))
        self.result.cases = cases

        suite: dict[str, Any] = {"name": slug(str(data.get("name") or Path(self.config.name).stem.split(".")[0]), "agentv-suite")}
        if isinstance(data.get("description"), str):
            suite["description"] = data["description"]
        suite["target"] = {"type": "recorded"}
        if self.uses_grader:
            suite["models"] = {"grader": {"base_url": OPENAI_URL, "model": GRADER_MODEL, "api_key_env": "OPENAI_API_KEY", "temperature": 0}}
        if self.runs_code:
            suite["trust_cases"] = True
        if suite_threshold is not None:
            suite["defaults"] = {"threshold": suite_threshold}
        suite["evaluators"] = evaluators
        suite["cases"] = "cases.jsonl"
        self.result.suites["suite.yaml"] = suite
        return self.result

    # -- tests ----------------------------------------------------------------------------------
    def case(self, index: int, parsed: Parsed, path: KeyPath, test: dict[str, Any], suite_input: Any, tags: list[str],
             suite_names: Names, has_suite_evaluators: bool) -> dict[str, Any]:
        case: dict[str, Any] = {"id": str(test.get("id") or f"{index + 1:03d}")}
        value = test.get("input")
        if suite_input is not None:
            value = _messages(suite_input) + _messages(value) if value is not None else suite_input
        case["input"] = value
        if "expected_output" in test:
            case["expected"] = _answer_of(test["expected_output"])
        if tags:
            case["tags"] = tags
        metadata: dict[str, Any] = dict(test["metadata"]) if isinstance(test.get("metadata"), dict) else {}
        for key in ("criteria", "conversation_id", "note", "suite"):
            if isinstance(test.get(key), str):
                metadata[key] = test[key]
        if metadata:
            case["metadata"] = metadata
        if _has_file_items(test.get("input")) or _has_file_items(test.get("expected_output")):
            self.skip(parsed, path + ("input",), "content items of `type: file` are kept as references; the file is not read into the input", note=True)
        for key in test:
            if key in ("id", "input", "expected_output", "metadata", "criteria", "conversation_id", "note", "suite", "assertions", "evaluators", "execution"):
                continue
            self.skip(parsed, path + (key,), {"workspace": TOP_WHY["workspace"], "input_files": TOP_WHY["input_files"]}.get(key, f"test key `{key}` has no agenteval form"))
        items: list[tuple[KeyPath, Any]] = []
        for key in ("assertions", "evaluators"):
            items += [((key, i), a) for i, a in enumerate(test.get(key) or [])]
        execution = test.get("execution") if isinstance(test.get("execution"), dict) else {}
        for key, val in execution.items():
            if key in ("assertions", "evaluators"):
                items += [(("execution", key, i), a) for i, a in enumerate(val or [])]
            elif key == "threshold" and _unit_number(val):
                case["threshold"] = val
            else:
                self.skip(parsed, path + ("execution", key), EXECUTION_WHY.get(key, f"execution key `{key}` has no agenteval form"))
        evaluators = self.assertions([(path + p, a) for p, a in items], parsed, (), Names(suite_names.used))
        if not evaluators and not has_suite_evaluators:
            criteria = test.get("criteria")
            if isinstance(criteria, str) and criteria.strip():
                self.uses_grader = True
                evaluators = [{"name": "criteria", "type": "llm_judge", "endpoint": "grader",
                               "criteria": [{"name": "criteria", "description": criteria.strip(), "scale": "unit"}]}]
                self.skip(parsed, path + ("criteria",), "a test without assertions is graded on its `criteria` by an llm_judge, as AgentV's default grader does", note=True)
        if evaluators:
            case["evaluators"] = evaluators
        return case

    # -- assertions -----------------------------------------------------------------------------
    def assertions(self, items: list[tuple[KeyPath, Any]], parsed: Parsed, _base: KeyPath, names: Names) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        rubric_texts: list[tuple[KeyPath, str]] = []
        for path, item in items:
            if isinstance(item, str):
                rubric_texts.append((path, item))
                continue
            converted = self.assertion(item, parsed, path, names)
            if converted is not None:
                out.append(converted)
        if rubric_texts:
            self.uses_grader = True
            criteria = [{"name": f"rubric_{i + 1}", "description": text.strip(), "scale": "pass_fail"} for i, (_, text) in enumerate(rubric_texts)]
            out.append({"name": names.take("rubrics"), "type": "llm_judge", "endpoint": "grader", "criteria": criteria})
        return out

    def assertion(self, item: Any, parsed: Parsed, path: KeyPath, names: Names) -> dict[str, Any] | None:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            self.skip(parsed, path, "an assertion without a `type` is not converted")
            return None
        kind = item["type"].replace("_", "-")
        common = {"name", "type", "weight", "required", "min_score", "negate"}
        evaluator = self.mapped(kind, item, parsed, path, names, common)
        if evaluator is None:
            return None
        self.result.converted.add(f"assert:{kind}")
        out: dict[str, Any] = {"name": names.take(str(item.get("name") or item.get("metric") or kind)), **evaluator}
        if item.get("negate") is True and evaluator["type"] != "not_contains" and evaluator.get("must_match") is not False:
            out["negate"] = True  # no opposite built in (contains and regex have one): the check itself, turned around
        if isinstance(item.get("weight"), (int, float)) and not isinstance(item.get("weight"), bool):
            out["weight"] = item["weight"]
        if isinstance(item.get("min_score"), (int, float)):
            out["min_score"] = item["min_score"]
        if item.get("required") not in (None, True):
            self.skip(parsed, path + ("required",), "every agenteval evaluator must pass for its case to pass; `required` is not carried")
        if isinstance(item.get("metric"), str):
            out["criterion"] = {"name": item["metric"]}
        return out

    def mapped(self, kind: str, item: dict[str, Any], parsed: Parsed, path: KeyPath, names: Names, common: set[str]) -> dict[str, Any] | None:
        negate = item.get("negate") is True

        def extra(known: set[str]) -> None:
            for key in item:
                if key not in known | common | {"metric"}:
                    self.skip(parsed, path + (key,), f"`{key}` of `{item['type']}` has no agenteval form")

        if kind in ("contains", "icontains"):
            extra({"value"})
            out: dict[str, Any] = {"type": "not_contains" if negate else "contains", "reference": str(item.get("value", ""))}
            if kind == "icontains":
                out["case_sensitive"] = False
            return out
        if kind == "regex":
            extra({"value"})
            return {"type": "regex", "pattern": str(item.get("value", "")), **({"must_match": False} if negate else {})}
        if kind == "equals":
            extra({"value"})
            value = item.get("value")
            return {"type": "equals", "reference": value if isinstance(value, str) else str(value)}
        if kind == "is-json":
            extra(set())
            return {"type": "json_valid"}
        if kind == "field-accuracy":
            extra({"fields", "aggregation"})
            fields = []
            for i, field in enumerate(item.get("fields") or []):
                spec = {k: field[k] for k in ("path", "match", "required", "weight", "tolerance", "relative", "algorithm", "threshold",
                                                "case_sensitive", "day_first") if k in field}
                for key in field:
                    if key not in spec:
                        why = ("date formats are not configurable in agenteval: its `date` match reads ISO 8601 and common written "
                               "forms (15.01.2024, Jan 15, 2024, 15 January 2024), not others such as 15-JAN-2025" if key == "formats"
                               else f"field key `{key}` has no agenteval form")
                        self.skip(parsed, path + ("fields", i, key), why)
                fields.append(spec)
            out = {"type": "field_accuracy", "fields": fields}
            if item.get("aggregation") in ("weighted_average", "all_or_nothing"):
                out["aggregation"] = item["aggregation"]
            return out
        if kind == "tool-trajectory":
            extra({"mode", "minimums", "expected", "args_match", "argsMatch"})
            return self.trajectory(item, parsed, path)
        if kind == "rubrics":
            extra({"criteria"})
            return self.rubrics(item.get("criteria") or [], parsed, path + ("criteria",))
        if kind in ("llm-grader", "llm-judge"):  # llm_judge: AgentV's older name
            extra({"prompt", "rubrics"})
            criteria = []
            prompt = item.get("prompt")
            outside = self.source.outside(prompt) if isinstance(prompt, str) and _names_a_file(prompt) else None
            if outside is not None:
                self.skip(parsed, path + ("prompt",), f"grader prompt {outside}")
                if not item.get("rubrics"):
                    return None
            elif isinstance(prompt, str):
                text = self.source.text(prompt) if self.source.exists(prompt) else prompt
                criteria.append({"name": slug(str(item.get("name") or "grader")).replace("-", "_"), "description": text.strip(), "scale": "unit"})
                self.skip(parsed, path + ("prompt",), "the grader prompt becomes the llm_judge criterion's description; "
                          "the judge's own prompt frames it (AgentV's template variables are not filled)", note=True)
            elif prompt is not None:
                self.skip(parsed, path + ("prompt",), "a prompt made by a script is not carried")
            if item.get("rubrics"):
                rubric = self.rubrics(item["rubrics"], parsed, path + ("rubrics",))
                criteria += rubric["criteria"] if rubric else []
            if not criteria:
                self.skip(parsed, path, "an llm-grader without a prompt or rubrics is not converted")
                return None
            self.uses_grader = True
            return {"type": "llm_judge", "endpoint": "grader", "criteria": criteria}
        if kind in ("code-grader", "code-judge", "script"):  # code_judge: AgentV's older name
            known = {"command", "script", "cwd", "config", "target"}
            command = item.get("command", item.get("script"))
            if command is None:
                self.skip(parsed, path, "a code-grader without a `command` is not converted")
                return None
            if "script" in item and "command" not in item:
                self.skip(parsed, path + ("script",), "`script` is AgentV's older name of `command`: carried as the code_judge's `command`",
                          note=True)
            if isinstance(command, str):
                command = shlex.split(command)
            if "target" in item:
                self.skip(parsed, path + ("target",), "a grader calling the target through AgentV's proxy is not built in agenteval")
            if item.get("cwd") not in (None, "."):
                self.skip(parsed, path + ("cwd",), "the judge runs in the suite's folder; paths in its command are rebased there", note=True)
            config = dict(item.get("config") or {}) if isinstance(item.get("config"), dict) else {}
            config.update({k: v for k, v in item.items() if k not in known | common | {"metric"}})
            self.runs_code = True
            out = {"type": "code_judge", "command": [self.rebased(str(part), item.get("cwd")) for part in command], "payload": "agentv"}
            if config:
                out["config"] = config
            return out
        if kind == "composite":
            extra({"assertions", "evaluators", "aggregator"})
            children_items = [(path + (key, i), child) for key in ("assertions", "evaluators") for i, child in enumerate(item.get(key) or [])]
            children = self.assertions(children_items, parsed, (), Names())
            if not children:
                self.skip(parsed, path, "none of the composite's assertions could be carried")
                return None
            out = {"type": "composite", "evaluators": children, "aggregation": "weighted_average"}
            aggregator = item.get("aggregator") if isinstance(item.get("aggregator"), dict) else {}
            kind_of = aggregator.get("type")
            if kind_of == "weighted_average":
                for child in children:
                    weight = (aggregator.get("weights") or {}).get(child["name"])
                    if isinstance(weight, (int, float)):
                        child["weight"] = weight
            elif kind_of == "threshold":
                out["min_score"] = aggregator.get("threshold")
            elif kind_of is not None:
                self.skip(parsed, path + ("aggregator",), f"a `{kind_of}` aggregator is not built in agenteval; the children are averaged")
            return out
        if kind == "iou-score":
            same = ("path", "format", "threshold", "item_field", "label_field", "matching", "polygon_mode")
            extra(set(same))
            return {"type": "iou_score", **{key: item[key] for key in same if key in item}}
        if kind == "latency":
            extra({"threshold"})
            return {"type": "latency", "max_ms": item.get("threshold")}
        if kind == "cost":
            extra({"budget"})
            return {"type": "cost", "max_usd": item.get("budget")}
        if kind == "token-usage":
            extra({"max_total", "max_input", "max_output"})
            out = {"type": "token_usage"}
            for theirs, ours in (("max_total", "max_tokens"), ("max_input", "max_input_tokens"), ("max_output", "max_output_tokens")):
                if theirs in item:
                    out[ours] = item[theirs]
            return out
        self.skip(parsed, path, f"`{kind}` has no agenteval equivalent")
        return None

    def rubrics(self, criteria: list[Any], parsed: Parsed, path: KeyPath) -> dict[str, Any] | None:
        out = []
        for i, criterion in enumerate(criteria):
            if isinstance(criterion, str):
                out.append({"name": f"c{i + 1}", "description": criterion, "scale": "pass_fail"})
                continue
            if not isinstance(criterion, dict):
                continue
            description = str(criterion.get("outcome") or "").strip()
            spec: dict[str, Any] = {"name": slug(str(criterion.get("id") or f"c{i + 1}")).replace("-", "_"), "scale": "pass_fail"}
            if criterion.get("score_ranges"):
                ranges = "; ".join(_score_ranges(criterion["score_ranges"]))
                description = f"{description} Score it: {ranges}".strip()
                spec["scale"] = {"range": [0, 10]}
            if not description:
                continue
            spec["description"] = description
            if isinstance(criterion.get("weight"), (int, float)):
                spec["weight"] = criterion["weight"]
            for key in ("required", "min_score"):
                if key in criterion:
                    self.skip(parsed, path + (i, key), f"a per-criterion `{key}` is not built in agenteval: the judge's score is the weighted mean of the criteria")
            out.append(spec)
        if not out:
            self.skip(parsed, path, "no rubric criterion with text")
            return None
        self.uses_grader = True
        return {"type": "llm_judge", "endpoint": "grader", "criteria": out}

    def trajectory(self, item: dict[str, Any], parsed: Parsed, path: KeyPath) -> dict[str, Any] | None:
        mode = item.get("mode", "any_order")
        out: dict[str, Any] = {"type": "tool_calls", "order": {"in_order": "in_order", "exact": "exact"}.get(mode, "any")}
        if isinstance(item.get("minimums"), dict):
            out["min_calls"] = dict(item["minimums"])
        default_match = item.get("args_match", item.get("argsMatch", "exact"))
        calls = []
        for i, expected in enumerate(item.get("expected") or []):
            if not isinstance(expected, dict) or not isinstance(expected.get("tool"), str):
                continue
            call: dict[str, Any] = {"name": expected["tool"]}
            args = expected.get("args")
            match = expected.get("args_match", expected.get("argsMatch", default_match))
            if isinstance(args, dict) and match != "ignore":
                if isinstance(match, list):
                    args = {k: v for k, v in args.items() if k in match}
                call["arguments"] = args
                if match == "exact":
                    call["extra_arguments"] = False
                elif match == "subset":
                    self.skip(parsed, path + ("expected", i, "args_match"), "`subset` argument matching is not built in agenteval; extra arguments are allowed", note=True)
            for key in ("max_duration_ms", "maxDurationMs"):
                if key in expected:
                    self.skip(parsed, path + ("expected", i, key), "a per-call time limit is not built in agenteval (`latency` limits the whole answer)")
            if mode == "subset":
                call["required"] = False
            calls.append(call)
        if mode == "subset":
            out["allow_extra"] = False
            self.skip(parsed, path + ("mode",), "`subset`: each listed tool may be called once (AgentV lets the allowed set be reused)", note=True)
        if calls or "min_calls" in out:
            out["calls"] = calls
        else:
            self.skip(parsed, path, "a tool-trajectory without `expected` or `minimums` is not converted")
            return None
        return out

    def rebased(self, part: str, cwd: Any) -> str:
        """A command argument naming a file relative to the eval file (or its `cwd`), as seen from the output folder."""
        base = self.source.folder / (cwd if isinstance(cwd, str) else ".")
        if self.out_dir is None or part.startswith("-") or not (base / part).is_file():
            return part
        return os.path.relpath(base / part, self.out_dir).replace(os.sep, "/")


def import_agentv(config: Parsed, source: Source, out_dir: Path | None = None) -> Imported:
    """The suite an AgentV eval file becomes, and what could not be carried over."""
    data = config.data
    if not isinstance(data, dict):
        raise ImportFailed(f"{config.name}: expected a mapping of keys at the top")
    if "prompts" in data or "providers" in data or any(isinstance(t, dict) and "vars" in t for t in data.get("tests") or [] if isinstance(data.get("tests"), list)):
        return _promptfoo_shaped(config, source, out_dir)
    return AgentVImporter(config, source, out_dir).run()


def _promptfoo_shaped(config: Parsed, source: Source, out_dir: Path | None) -> Imported:
    """AgentV's newer format is promptfoo's: import it so, with AgentV's own assertion types
    (strings as rubrics, field-accuracy, script graders, trajectories) mapped by this module."""
    data = dict(config.data)
    agentv = AgentVImporter(config, source, out_dir)
    data.pop("name", None)
    lines = dict(config.lines)
    for key in ("version", "tags"):
        if key in data:
            agentv.skip(config, (key,), "kept nowhere: agenteval suites have no `{}` key".format(key))
            data.pop(key)
    if "assert" in data and "defaultTest" not in data:  # suite-level assertions: every test's, as defaultTest's
        data["defaultTest"] = {"assert": data.pop("assert")}
        lines.update({("defaultTest",) + path: line for path, line in config.lines.items() if path[:1] == ("assert",)})
        lines[("defaultTest",)] = config.lines.get(("assert",), 1)
    shaped = PromptfooImporter(Parsed(config.name, data, lines), source, out_dir, dialect="agentv")
    shaped.result.skipped.extend(agentv.result.skipped)
    agentv.result = shaped.result

    def extra(item: Any, parsed: Parsed, path: KeyPath, names: Names) -> dict[str, Any] | None:
        if isinstance(item, str):
            agentv.uses_grader = True
            return {"name": names.take("rubric"), "type": "llm_judge", "endpoint": "grader",
                    "criteria": [{"name": "rubric", "description": item.strip(), "scale": "pass_fail"}]}
        kind = item.get("type", "").replace("_", "-") if isinstance(item, dict) else ""
        if kind in ("field-accuracy", "script", "code-grader", "code-judge", "tool-trajectory", "rubrics", "composite", "llm-grader",
                    "llm-judge", "iou-score"):
            converted = agentv.assertion(item, parsed, path, names)
            return converted or {}
        return None

    shaped.extra_assertion = extra
    # providers named in AgentV's format are target names from .agentv/targets.yaml, not promptfoo ids
    providers = data.pop("providers", None)
    if providers is not None:
        names = providers if isinstance(providers, list) else [providers]
        shaped.skip(config, ("providers",), f"targets {', '.join(map(str, names))} are defined in .agentv/targets.yaml, which is not read: "
                    "answers come from --predictions or recorded outputs")
    imported = shaped.run()
    for suite in imported.suites.values():
        suite["name"] = slug(str(config.data.get("name") or suite["name"]))
        if agentv.uses_grader:
            suite.setdefault("models", {})["grader"] = {"base_url": OPENAI_URL, "model": GRADER_MODEL, "api_key_env": "OPENAI_API_KEY", "temperature": 0}
        if agentv.runs_code:
            suite["trust_cases"] = True
    for case in imported.cases:  # AgentV's vars hold input and expected_output
        values = case.get("input")
        if isinstance(values, dict) and "input" in values:
            if "expected_output" in values:
                case["expected"] = _answer_of(values["expected_output"])
            case["input"] = values["input"]
    finish_references(imported)
    return imported


def _score_ranges(ranges: Any) -> list[str]:
    """`[{score_range: [a, b], outcome}]` or the shorthand map `{score: outcome}`, as text for the rubric."""
    if isinstance(ranges, dict):
        return [f"{score}: {outcome}" for score, outcome in ranges.items()]
    out = []
    for item in ranges if isinstance(ranges, list) else []:
        if isinstance(item, dict) and isinstance(item.get("score_range"), list) and len(item["score_range"]) == 2:
            out.append(f"{item['score_range'][0]}-{item['score_range'][1]}: {item.get('outcome', '')}")
    return out


def _names_a_file(text: str) -> bool:
    """A grader `prompt` that is a file reference (`file://...`, or one line ending in a file
    extension), not the prompt's own text."""
    return text.startswith("file://") or ("\n" not in text and bool(re.fullmatch(r"\S+\.(md|txt|prompt|j2|jinja|yaml|yml|json)", text.strip())))


def _messages(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    return [{"role": "user", "content": value}]


def _answer_of(expected: Any) -> Any:
    """AgentV compares with the last assistant message's content: that is the expected answer."""
    if isinstance(expected, list) and expected and all(isinstance(m, dict) and "role" in m for m in expected):
        return expected[-1].get("content")
    return expected


def _has_file_items(value: Any) -> bool:
    if isinstance(value, dict):
        return value.get("type") == "file" or any(_has_file_items(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_file_items(v) for v in value)
    return False
