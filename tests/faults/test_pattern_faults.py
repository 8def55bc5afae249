"""Hostile answers and schemas against the text evaluators: every pattern, distance and analyzer stays bounded.

Each test runs the real `agenteval run` on a suite in a tmp folder and reads the results file:
the hostile case is an `error` (or a plain verdict) that names the evaluator and the limit, the
run ends quickly, and the healthy cases beside it are scored as usual.
"""

from __future__ import annotations

import json
import random
import re
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from conftest import ROOT, read_jsonl, run_cli, serving, write

from agenteval.json_schemas.formats import FORMATS


def run_suite(folder: Path, suite: str, cases: list[dict], timeout: float = 120) -> tuple[dict[str, dict[str, dict]], float, str]:
    """Run `suite` (YAML text; its cases are `cases.jsonl`) and give {case id: {evaluator: result}}, seconds, stderr."""
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    write(folder, "suite.yaml", suite)
    started = time.monotonic()
    done = run_cli("run", "suite.yaml", "-o", "r.jsonl", "--quiet", cwd=folder, timeout=timeout)
    seconds = time.monotonic() - started
    assert "Traceback" not in done.stderr, done.stderr
    rows = read_jsonl(folder / "r.jsonl")
    assert len(rows) == len(cases), done.stderr
    return {row["case_id"]: {result["name"]: result for result in row["evaluator_results"]} for row in rows}, seconds, done.stderr


def case(case_id: str, output: object) -> dict:
    return {"id": case_id, "input": {}, "expected": {}, "output": output}


EVIL = "a" * 40 + "!"  # `^(a|aa)+$` tries every split of the a's before failing at the `!`: about 2^28 steps


def test_backtracking_pattern_is_an_error_naming_it_in_regex_and_every_schema_keyword(tmp_path):
    keyed = json.dumps({EVIL: 1})
    suite = r"""
        name: redos
        cases: cases.jsonl
        limits: {pattern_seconds: 0.3}
        evaluators:
          - {name: words, type: regex, path: text, pattern: '^(a|aa)+$'}
          - {name: repro, type: regex, path: text, pattern: '^(a+)+$'}
          - {name: pattern, type: json_schema, path: string, schema: {type: string, pattern: '^(a|aa)+$'}}
          - {name: pattern_properties, type: json_schema, path: object, schema: {patternProperties: {'^(a|aa)+$': {type: integer}}}}
          - {name: property_names, type: json_schema, path: object, schema: {propertyNames: {pattern: '^(a|aa)+$'}}}
          - {name: additional, type: json_schema, path: object, schema: {patternProperties: {'^(a|aa)+$': {}}, additionalProperties: false}}
          - {name: unevaluated, type: json_schema, path: object, schema: {patternProperties: {'^(a|aa)+$': {}}, unevaluatedProperties: false}}
    """
    results, seconds, _ = run_suite(tmp_path, suite, [
        case("evil", {"text": EVIL, "string": json.dumps(EVIL), "object": keyed}),
        case("ok", {"text": "aaaa", "string": '"aaaa"', "object": '{"aaaa": 1}'}),
    ])
    bounded = ["words", "pattern", "pattern_properties", "property_names", "additional", "unevaluated"]
    for name in bounded:
        evil = results["evil"][name]
        kind = "regex" if name == "words" else "json_schema"
        assert evil["verdict"] == "error", (name, evil)
        assert evil["error"] == (
            f"{kind} {name!r}: pattern '^(a|aa)+$' ran longer than 0.3 s on this text "
            "(limit `limits.pattern_seconds: 0.3`; raise it in the suite's `limits:` if this is expected)"
        )
        assert results["ok"][name]["verdict"] == "pass", (name, results["ok"][name])
    # the pattern of the reported hang ends at once with the regex engine: a plain miss
    assert results["evil"]["repro"]["verdict"] == "fail"
    assert results["evil"]["repro"]["misses"] == ["text does not match /^(a+)+$/"]
    assert seconds < 6 * 0.3 + 15


class _RefServer(BaseHTTPRequestHandler):
    requests: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        type(self).requests.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_schema_ref_to_another_document_is_never_fetched_or_read(tmp_path):
    with serving(_RefServer) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/int.json"
        secret = tmp_path / "outside" / "local.json"
        secret.parent.mkdir()
        secret.write_text('{"enum": ["s3cr3t"]}')
        (tmp_path / "run").mkdir()
        write(tmp_path / "run", "remote.schema.json", json.dumps({"properties": {"n": {"$ref": url}}}))
        suite = f"""
            name: refs
            cases: cases.jsonl
            evaluators:
              - {{name: http, type: json_schema, schema: {{$ref: "{url}"}}}}
              - {{name: file, type: json_schema, schema: {{$ref: "{secret.as_uri()}"}}}}
              - {{name: relative, type: json_schema, schema: {{$id: "{url}", $ref: "other.json"}}}}
              - {{name: from_file, type: json_schema, schema_file: remote.schema.json}}
              - {{name: local, type: json_schema, schema: {{$defs: {{i: {{type: integer}}}}, $ref: "#/$defs/i"}}}}
        """
        results, _, stderr = run_suite(tmp_path / "run", suite, [case("c1", '"abc"')])
    assert _RefServer.requests == []
    outside = "other documents are never fetched or read (only references inside it, like '#/$defs/...', resolve)"
    got = results["c1"]
    assert got["http"]["error"] == f"json_schema 'http': the schema's $ref '{url}' points outside the schema; {outside}"
    assert got["file"]["error"] == f"json_schema 'file': the schema's $ref '{secret.as_uri()}' points outside the schema; {outside}"
    assert got["relative"]["error"] == f"json_schema 'relative': the schema's $ref 'other.json' points outside the schema; {outside}"
    # a string is not an object: from_file's `properties` does not apply, its ref is never reached, and the case passes
    assert got["from_file"]["verdict"] == "pass"
    assert got["local"]["verdict"] == "fail" and got["local"]["misses"] == ["$: 'abc' is not of type 'integer'"]
    written = (tmp_path / "run" / "r.jsonl").read_text() + stderr
    assert "s3cr3t" not in written


def test_schema_file_ref_reached_by_the_answer_is_an_error_not_a_fetch(tmp_path):
    """The same refusal when the $ref sits in a schema file and the answer reaches it."""
    write(tmp_path, "order.schema.json", json.dumps({"properties": {"n": {"$ref": "file:///etc/hostname"}}}))
    suite = """
        name: refs
        cases: cases.jsonl
        evaluators:
          - {name: order, type: json_schema, schema_file: order.schema.json}
    """
    results, _, _ = run_suite(tmp_path, suite, [case("reaches", '{"n": "x"}'), case("misses", '{"m": 1}')])
    assert results["reaches"]["order"]["verdict"] == "error"
    assert results["reaches"]["order"]["error"].startswith("json_schema 'order': the schema's $ref 'file:///etc/hostname' points outside the schema")
    assert results["misses"]["order"]["verdict"] == "pass"


def test_edit_distances_past_edit_distance_chars_are_an_error_before_computing(tmp_path):
    rng = random.Random(1)
    big = lambda: "".join(rng.choice("abcdefghij") for _ in range(1_000_000))  # noqa: E731
    suite = """
        name: distances
        cases: cases.jsonl
        evaluators:
          - {name: lev, type: text_similarity, algorithm: levenshtein, path: a, reference_path: a}
          - {name: jaro, type: text_similarity, algorithm: jaro_winkler, path: a, reference_path: a}
          - {name: tokens, type: text_similarity, algorithm: token_set, path: b, reference_path: b}
          - {name: dice, type: text_similarity, path: c, reference_path: c}
    """
    words = " ".join(f"w{i}" for i in range(120_000))  # 120,000 distinct words: too many for token_set
    cases = [
        {"id": "small", "input": {}, "expected": {"a": "hello", "b": "hello world", "c": "hello"}, "output": {"a": "hallo", "b": "world hello", "c": "hello"}},
        {"id": "big", "input": {}, "expected": {"a": big(), "b": "one two", "c": "x" * 1_000_000}, "output": {"a": big(), "b": words, "c": "x" * 1_000_000}},
        {"id": "repeats", "input": {}, "expected": {"a": "x", "b": "refund " * 200_000, "c": "x"}, "output": {"a": "x", "b": "refund " * 200_000, "c": "x"}},
    ]
    results, seconds, _ = run_suite(tmp_path, suite, cases)
    assert results["small"]["lev"]["score"] == 0.8 and results["small"]["tokens"]["score"] == 1.0
    assert results["big"]["lev"]["error"] == (
        "text_similarity 'lev' (levenshtein): a has 1,000,000 characters, more than an edit distance is computed on "
        "(limit `limits.edit_distance_chars: 100000`; raise it in the suite's `limits:` if this is expected)"
    )
    assert results["big"]["jaro"]["verdict"] == "error" and "limits.edit_distance_chars: 100000" in results["big"]["jaro"]["error"]
    distinct = sum(len(word) + 1 for word in set(words.split()))
    assert results["big"]["tokens"]["error"].startswith(f"text_similarity 'tokens' (token_set): b has {distinct:,} characters of distinct words")
    # linear algorithms and texts of few distinct words are not refused
    assert results["big"]["dice"]["score"] == 1.0
    assert results["repeats"]["tokens"]["score"] == 1.0
    assert seconds < 30  # two 1 MB Levenshtein distances alone take 20 s or more


def test_unique_items_of_20000_objects_is_checked_in_one_pass(tmp_path):
    suite = """
        name: unique
        cases: cases.jsonl
        evaluators:
          - {name: unique, type: json_schema, schema: {type: array, uniqueItems: true}}
    """
    results, seconds, _ = run_suite(tmp_path, suite, [
        case("distinct", json.dumps([{"k": i} for i in range(20_000)])),
        case("same_value_other_spelling", json.dumps([{"k": 1, "j": [1, 2]}, {"j": [1.0, 2], "k": 1.0}])),
        case("true_is_not_one", json.dumps([True, 1, [0], [False], {"a": None}, {"a": 0}])),
    ])
    assert results["distinct"]["unique"]["verdict"] == "pass"
    assert results["same_value_other_spelling"]["unique"]["misses"] == [
        "$: [{'k': 1, 'j': [1, 2]}, {'j': [1.0, 2], 'k': 1.0}] has non-unique elements"
    ]
    assert results["true_is_not_one"]["unique"]["verdict"] == "pass"
    assert seconds < 20  # was still validating after 120 s


def test_vader_answer_of_emoji_is_an_error_at_once_on_max_words(tmp_path):
    suite = """
        name: tone
        cases: cases.jsonl
        evaluators:
          - {name: tone, type: sentiment, analyzer: vader}
    """
    results, _, _ = run_suite(tmp_path, suite, [
        case("emoji", ("\U0001F600\U0001F621 " * 7000)[:19999]),
        case("reply", "Thank you, this was really helpful!"),
    ])
    emoji = results["emoji"]["tone"]
    assert emoji["verdict"] == "error"
    assert emoji["error"] == "answer has 26,666 words as VADER reads it (emoji as their descriptions), more than max_words (2,000)"
    assert emoji["duration_ms"] < 500  # the analyzer took 25 s on it
    assert results["reply"]["tone"]["details"]["category"] == "positive"


def test_token_set_is_containment_and_token_jaccard_counts_the_extra_words(tmp_path):
    suite = """
        name: sets
        cases: cases.jsonl
        evaluators:
          - {name: token_set, type: text_similarity, algorithm: token_set, reference_path: text, path: text, threshold: 0.9}
          - {name: jaccard, type: text_similarity, algorithm: token_jaccard, reference_path: text, path: text, threshold: 0.9}
    """
    salad = "Berlin London Rome Madrid are capitals too, but Paris is not the capital of France"
    cases = [
        {"id": "salad", "input": {}, "expected": {"text": "Paris is the capital of France"}, "output": {"text": salad}},
        {"id": "reordered", "input": {}, "expected": {"text": "Paris is the capital of France"}, "output": {"text": "France's capital: Paris, it is the"}},
        {"id": "empty", "input": {}, "expected": {"text": ""}, "output": {"text": ""}},
    ]
    results, _, _ = run_suite(tmp_path, suite, cases)
    assert results["salad"]["token_set"]["score"] == 1.0  # documented: extra words cost nothing
    assert results["salad"]["jaccard"]["score"] == 6 / 15 and results["salad"]["jaccard"]["verdict"] == "fail"
    assert results["reordered"]["jaccard"]["score"] == 5 / 8  # `france's` is two words (france, s); `of` is missing
    assert results["empty"]["token_set"]["score"] == 1.0 and results["empty"]["jaccard"]["score"] == 1.0


def test_decomposed_and_composed_spellings_are_equal_unless_unicode_raw(tmp_path):
    suite = """
        name: unicode
        cases: cases.jsonl
        evaluators:
          - {name: nfc, type: equals, path: word, reference: "Café", case_sensitive: false}
          - {name: raw, type: equals, path: word, reference: "Café", unicode: raw}
          - {name: keyword, type: keyword_coverage, path: name, keywords: ["Müller"], whole_word: true}
          - {name: dice, type: text_similarity, path: name, reference: "Café Müller GmbH", threshold: 1}
          - {name: ligature, type: contains, path: text, reference: "fine", unicode: nfkc}
          - {name: no_ligature, type: contains, path: text, reference: "fine"}
    """
    nfd = {"word": "Cafe\u0301", "name": "Cafe\u0301 Mu\u0308ller GmbH", "text": "a \ufb01ne day"}
    results, _, _ = run_suite(tmp_path, suite, [case("nfd", nfd)])
    got = results["nfd"]
    assert got["nfc"]["verdict"] == "pass"
    assert got["raw"]["misses"] == ["word does not equal 'Café'"]
    assert got["keyword"]["verdict"] == "pass"
    assert got["dice"]["score"] == 1.0  # was 0.88 for the fuzzy spelling of the same name
    assert got["ligature"]["verdict"] == "pass"
    assert got["no_ligature"]["verdict"] == "fail"  # NFC keeps compatibility characters such as the ligature


# one valid and one invalid value per format
FORMAT_VALUES = {
    "date-time": ("2024-02-29T23:59:60.5+01:00", "not a date"),
    "date": ("2024-02-29", "2023-02-29"),
    "time": ("08:30:00Z", "25:00:00Z"),
    "duration": ("P1Y2M3DT4H5M6S", "P1H"),
    "email": ("ana@example.com", "ana.example.com"),
    "idn-email": ("josé@exämple.com", "josé"),
    "hostname": ("api.example.com", "-bad-.example.com"),
    "idn-hostname": ("bücher.example", "bad host"),
    "ipv4": ("192.168.0.1", "192.168.0.256"),
    "ipv6": ("2001:db8::1", "2001:db8::1%eth0"),
    "uri": ("https://example.com/a?b=c#d", "/relative/only"),
    "uri-reference": ("../a/b?c", "has space"),
    "iri": ("https://exämple.com/ä", "no-scheme"),
    "iri-reference": ("ä/b", "a\\b"),
    "uuid": ("123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000"),
    "uri-template": ("https://example.com/{user}/{+path}{?q,page}", "https://example.com/{user"),
    "json-pointer": ("/a~1b/0", "a/b"),
    "relative-json-pointer": ("1/a", "/a"),
    "regex": ("^[A-Z]{3}$", "(unclosed"),
}


def test_every_format_the_readme_lists_is_checked_whatever_is_installed(tmp_path):
    readme = (ROOT / "docs" / "evaluators.md").read_text()  # the README's evaluator reference moved there
    listed = re.search(r"Formats checked: (.+?)\.", readme, re.S)
    assert listed is not None
    assert re.findall(r"`([a-z0-9-]+)`", listed.group(1)) == list(FORMATS) == list(FORMAT_VALUES)
    evaluators = "\n".join(
        f"  - {{name: {name}, type: json_schema, path: {json.dumps(name)}, schema: {{format: {name}}}}}" for name in FORMATS
    )
    suite = f"name: formats\ncases: cases.jsonl\nevaluators:\n{evaluators}\n"
    results, _, _ = run_suite(tmp_path, suite, [
        case("valid", {name: json.dumps(good) for name, (good, _) in FORMAT_VALUES.items()}),
        case("invalid", {name: json.dumps(bad) for name, (_, bad) in FORMAT_VALUES.items()}),
    ])
    for name, (good, bad) in FORMAT_VALUES.items():
        assert results["valid"][name]["verdict"] == "pass", (name, good, results["valid"][name])
        assert results["invalid"][name]["misses"] == [f"$: {bad!r} is not a {name!r}"], (name, bad)


def test_inline_boolean_schemas_accept_everything_or_nothing(tmp_path):
    suite = """
        name: booleans
        cases: cases.jsonl
        evaluators:
          - {name: anything, type: json_schema, schema: true}
          - {name: nothing, type: json_schema, schema: false}
    """
    results, _, _ = run_suite(tmp_path, suite, [case("c1", '{"a": 1}')])
    assert results["c1"]["anything"]["verdict"] == "pass"
    assert results["c1"]["nothing"]["misses"] == ["$: False schema does not allow {'a': 1}"]
