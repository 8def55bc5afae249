"""The docs stay true: README.md and every docs/*.md page are checked against the program.

What is checked here, on every page:
- README.md stays short (300 lines at most) and its first commands are the install and the test
  command CI runs (`.ci/run`);
- every `agenteval COMMAND` shown exists, and the README's command table lists exactly the commands
  `agenteval --help` lists;
- every flag in the synopsis of the commands (docs/running.md) is in that command's `--help`;
- every evaluator type has a `### ` section in docs/evaluators.md;
- every ```yaml block is a suite (validated against schemas/suite.schema.json), a list of
  evaluators, or a part of a suite (validated as a suite holding it);
- every relative link resolves to a file, and a `#anchor` to a heading of that file (GitHub's
  anchors: lower case, punctuation dropped, spaces as hyphens);
- the reference pages open with a table of contents that links each of their sections;
- every code block says what it is: commands are in ```console blocks, which
  tests/test_doc_examples.py runs and whose output it compares, or carry
  `<!-- doctest: skip: WHY -->`; a ```text block shows output only, never a command.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from pydantic import TypeAdapter

from agenteval.evaluators import REGISTRY, EvaluatorSpec

from conftest import ROOT, SCHEMAS, run_cli

README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
TEXT = {doc: doc.read_text() for doc in DOCS}
ALL_TEXT = "\n".join(TEXT.values())
# The reference pages moved out of the README; each opens with a table of contents.
REFERENCE_PAGES = ["suite-format", "evaluators", "live-models", "live-agents", "running", "reports", "stores", "plugins", "ray", "importing", "reliability", "tool-calls", "traces"]

_FENCE = re.compile(r"(?P<before>(?:<!--[^\n]*-->\n)?)^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```$", re.S | re.M)
_SKIP = re.compile(r"<!-- doctest: skip: \S.*? -->")
_LINK = re.compile(r"\[[^\]\n]*\]\((?P<target>[^)\s]+)\)")
LANGUAGES = {"console", "yaml", "json", "python", "toml", "text"}


def _id(doc: Path) -> str:
    return str(doc.relative_to(ROOT))


def _prose(text: str) -> str:
    """The text without code blocks and inline code, where links live."""
    text = _FENCE.sub("", text)
    return re.sub(r"``.*?``|`[^`\n]*`", "", text)


def _headings(text: str) -> list[tuple[int, str]]:
    return [(len(m[1]), m[2].strip()) for m in re.finditer(r"^(#{1,6}) (.+)$", _FENCE.sub("", text), re.M)]


def slug(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as hyphens."""
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link in a heading anchors by its text
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for _, title in _headings(text):
        base = slug(title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    found |= set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))
    return found


def test_the_anchor_of_a_heading_is_githubs():
    assert slug("Text rules: equals, contains, not_contains") == "text-rules-equals-contains-not_contains"
    assert slug("`protocol: jsonl` (one long-lived judge per worker)") == "protocol-jsonl-one-long-lived-judge-per-worker"
    assert slug("Response cache: cheap to re-run") == "response-cache-cheap-to-re-run"
    assert anchors("# A\n## Results\n```\n# not a heading\n```\n## Results\n") == {"a", "results", "results-1"}


def test_the_readme_is_short_and_gives_the_commands_ci_runs():
    lines = TEXT[README].splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; the reference belongs in docs/"
    blocks = [m["body"].strip() for m in _FENCE.finditer(TEXT[README])]
    assert blocks[0] == "pip install -e . && agenteval run examples/invoices/suite.yaml"
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci in blocks and ci == 'pip install -e ".[dev]" && python -m pytest'


def test_every_command_in_the_docs_exists():
    commands = set(re.findall(r"^(?:\$ )?agenteval (\w+)", ALL_TEXT, re.M))
    assert commands >= {"run", "validate", "schema", "report", "compare", "init", "history", "feedback"}
    for command in commands:
        assert run_cli(command, "--help").returncode == 0, command


def test_the_readme_command_table_lists_every_command():
    help_text = run_cli("--help").stdout
    listed = help_text[help_text.index("Commands:"):]
    commands = set(re.findall(r"^  (\w+) ", listed, re.M))
    in_table = set(re.findall(r"^\| `agenteval (\w+)", TEXT[README], re.M))
    assert commands and in_table == commands, (in_table ^ commands)


def test_every_flag_in_the_command_synopsis_is_in_that_commands_help():
    usage = ALL_TEXT[ALL_TEXT.index("agenteval run [SUITE.yaml|DIR] [-o"):]
    flags_of: dict[str, set[str]] = {}
    command = ""
    for line in usage[: usage.index("```")].splitlines():
        words = line.split()
        if words and words[0] == "agenteval":
            command = words[1]
        flags_of.setdefault(command, set()).update(re.findall(r"(--[a-z-]+)", line.split("#")[0]))
    assert len(flags_of["run"]) > 20
    for command, flags in flags_of.items():
        help_text = run_cli(*command.split(), "--help").stdout
        assert all(flag in help_text for flag in flags), (command, flags - {f for f in flags if f in help_text})


def test_every_evaluator_type_is_documented():
    text = (ROOT / "docs" / "evaluators.md").read_text()
    for name in REGISTRY:
        assert re.search(rf"^### .*\b{name}\b", text, re.M), f"docs/evaluators.md has no section for {name}"


def _yaml_blocks() -> list[tuple[str, str]]:
    return [(f"{_id(doc)}:{TEXT[doc].count(chr(10), 0, m.start('body'))}", m["body"])
            for doc in DOCS for m in _FENCE.finditer(TEXT[doc]) if m["lang"] == "yaml"]


YAML_BLOCKS = _yaml_blocks()


@pytest.mark.parametrize("where, block", YAML_BLOCKS, ids=[where for where, _ in YAML_BLOCKS])
def test_yaml_snippet_is_valid(where: str, block: str):
    suite_schema = json.loads((SCHEMAS / "suite.schema.json").read_text())
    data = yaml.safe_load(block)
    if isinstance(data, list):
        TypeAdapter(list[EvaluatorSpec]).validate_python(data)
    else:
        assert isinstance(data, dict), f"{where}: a yaml block is a suite, a part of one or a list of evaluators"
        jsonschema.validate({"name": "snippet", "cases": "cases.jsonl", **data}, suite_schema)


def test_the_docs_have_yaml_snippets_of_every_kind():
    kinds = {type(yaml.safe_load(block)).__name__ for _, block in YAML_BLOCKS}
    assert kinds == {"dict", "list"} and len(YAML_BLOCKS) > 20


def test_a_yaml_snippet_with_a_wrong_key_is_caught():
    with pytest.raises(jsonschema.ValidationError):
        test_yaml_snippet_is_valid("here", "limits: {case_seconds: 600, pattern_secs: 5}\n")
    with pytest.raises(ValueError):
        test_yaml_snippet_is_valid("here", "- {type: field_accuracy, fields: [{path: a, thresold: 1}]}\n")


def _links() -> list[tuple[Path, str]]:
    return [(doc, m["target"]) for doc in DOCS for m in _LINK.finditer(_prose(TEXT[doc]))
            if not m["target"].startswith(("http://", "https://", "mailto:"))]


def test_every_link_between_the_docs_resolves_to_a_file_and_an_anchor():
    links = _links()
    assert len(links) > 30
    broken = []
    for doc, target in links:
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(f"{_id(doc)}: {target} (no file {path})")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text()):
            broken.append(f"{_id(doc)}: {target} (no heading #{anchor} in {file.name})")
    assert not broken, "\n".join(broken)


def test_the_readme_links_every_docs_page():
    linked = {target.partition("#")[0] for doc, target in _links() if doc == README}
    assert {f"docs/{doc.name}" for doc in DOCS[1:]} <= linked


@pytest.mark.parametrize("name", REFERENCE_PAGES)
def test_a_reference_page_opens_with_a_table_of_contents(name: str):
    text = _FENCE.sub("", (ROOT / "docs" / f"{name}.md").read_text())
    sections = [slug(title) for level, title in _headings(text) if level == 2]
    contents = re.findall(r"^ *- \[[^\]]+\]\(#([^)]+)\)$", text[: text.index("\n## ")], re.M)
    assert len(sections) >= 2 and [target for target in contents if target in sections] == sections, (
        f"docs/{name}.md: its contents list {contents}, its sections are {sections}")
    assert set(contents) <= anchors(text)


def test_every_code_block_says_what_it_is_and_commands_run_or_say_why_not():
    problems = []
    for doc in DOCS:
        for m in _FENCE.finditer(TEXT[doc]):
            where = f"{_id(doc)}:{TEXT[doc].count(chr(10), 0, m.start('body'))}"
            skipped = _SKIP.search(m["before"])
            if m["lang"] not in LANGUAGES and not (m["lang"] == "" and skipped):
                problems.append(f"{where}: a ```{m['lang']} block; say console, yaml, json, python, toml or text, "
                                "or mark it <!-- doctest: skip: WHY -->")
            if m["lang"] == "text" and re.search(r"^(\$ |agenteval )", m["body"], re.M):
                problems.append(f"{where}: a command in a text block; put it in a console block")
    assert not problems, "\n".join(problems)
