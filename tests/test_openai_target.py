"""`openai` and `http` targets end to end: the real CLI against a real local server."""

import json
import os
import statistics
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import read_jsonl, run_cli, write
from llm_server import Fault, LLMServer
from typer.testing import CliRunner

from agenteval.cli import app

SECRET = "sk-live-do-not-leak-4242"


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def suite_text(server, target="", evaluators="", cases="", extra=""):
    return f"""
name: live
target:
  type: openai
  base_url: "{server.base_url}"
  model: m1
  backoff: 0.01
{target}
evaluators:
{evaluators or "  - {type: contains, path: content, reference: Paris}"}
cases:
{cases or '''  - {id: a, input: {question: "capital of France?"}, expected: Paris}
  - {id: b, input: {question: "capital of Peru?"}, expected: Lima}'''}
{extra}
"""


def run(tmp_path, *args, env=None, quiet=True):
    """`agenteval run s.yaml [-q] ARGS`, the real command called in this process (start-up is most of a
    subprocess's time); `env` is laid over the environment (None removes a variable)."""
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "-o", str(out), *(["-q"] if quiet else []), *map(str, args)], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    done = SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)
    return done, {line["case_id"]: line for line in read_jsonl(out)} if out.exists() else {}


def test_the_answer_has_content_messages_tool_calls_usage_model_latency(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, """  temperature: 0
  max_tokens: 50
  messages:
    - {role: system, content: "Answer with the city only."}
    - {role: user, content: "Q: {{ input.question }} (case {{ case.id }})"}"""))
    done, lines = run(tmp_path)
    assert done.returncode == 1, done.stderr  # neither echo contains its city
    answer = lines["a"]["output"]
    assert answer["content"] == "echo: Q: capital of France? (case a)"
    assert answer["messages"] == [
        {"role": "system", "content": "Answer with the city only."},
        {"role": "user", "content": "Q: capital of France? (case a)"},
        {"role": "assistant", "content": "echo: Q: capital of France? (case a)"},
    ]
    assert answer["tool_calls"] == [] and answer["model"] == "m1"
    assert answer["usage"]["input_tokens"] == 11 and answer["usage"]["output_tokens"] == 7
    assert answer["latency_ms"] == answer["usage"]["latency_ms"] == lines["a"]["usage"]["latency_ms"] > 0
    sent = next(r.body for r in server.received if "case a" in json.dumps(r.body))
    assert sent["model"] == "m1" and sent["temperature"] == 0 and sent["max_tokens"] == 50
    assert "tools" not in sent and "top_p" not in sent


def test_a_missing_template_variable_is_a_case_error_that_names_it(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, """  messages: [{role: user, content: "{{ input.question }} {{ input.context.doc }}"}]"""))
    done, lines = run(tmp_path)
    assert done.returncode == 3
    assert lines["a"]["verdict"] == "error"
    assert lines["a"]["error"] == "messages[0].content: template variable input.context is undefined"
    assert server.count() == 0


def test_tool_calls_are_passed_and_read_back(tmp_path):
    def call_weather(body):
        assert body["tools"][0]["function"]["name"] == "get_weather"
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        ]}

    with LLMServer(chat=call_weather) as server:
        write(tmp_path, "s.yaml", suite_text(
            server,
            """  tools: [{type: function, function: {name: get_weather, parameters: {type: object, properties: {city: {type: string}}}}}]
  tool_choice: auto""",
            """  - {type: field_accuracy, fields: [{path: "tool_calls[0].name"}, {path: "tool_calls[0].arguments.city"}]}""",
            """  - {id: a, input: {question: "weather in Paris?"}, expected: {tool_calls: [{name: get_weather, arguments: {city: Paris}}]}}""",
        ))
        done, lines = run(tmp_path)
        assert done.returncode == 0, done.stderr
        assert lines["a"]["output"]["tool_calls"] == [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]
        assert server.received[0].body["tool_choice"] == "auto"


def test_parse_json_lets_field_checks_read_the_content(tmp_path):
    replies = {"a": '{"city": "Paris", "country": "FR"}', "b": "```json\n{\"city\": \"Lima\"}\n```", "c": "Lima, I think"}

    def as_json(body):
        case = body["messages"][-1]["content"]
        return {"role": "assistant", "content": replies[case]}

    with LLMServer(chat=as_json) as server:
        write(tmp_path, "s.yaml", suite_text(
            server, """  parse_json: true
  messages: [{role: user, content: "{{ case.id }}"}]""",
            """  - {type: field_accuracy, fields: [{path: content.city}]}""",
            """  - {id: a, expected: {content: {city: Paris}}}
  - {id: b, expected: {content: {city: Lima}}}
  - {id: c, expected: {content: {city: Lima}}}""",
        ))
        done, lines = run(tmp_path)
    assert done.returncode == 3
    assert lines["a"]["verdict"] == "pass" and lines["a"]["output"]["content"] == {"city": "Paris", "country": "FR"}
    assert lines["b"]["verdict"] == "pass"
    assert lines["c"]["verdict"] == "error" and "content is not JSON: 'Lima, I think'" in lines["c"]["error"]


def test_a_re_run_at_temperature_0_sends_nothing(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0"))
    first, lines = run(tmp_path)
    assert first.returncode == 1 and server.count() == 2
    second, again = run(tmp_path)
    assert second.returncode == 1 and server.count() == 2  # every answer came from the cache
    for case_id, line in lines.items():
        replayed = again[case_id]["output"]
        assert replayed["content"] == line["output"]["content"] and replayed["messages"] == line["output"]["messages"]
        assert replayed["usage"] == {**line["output"]["usage"], "cached": True}  # the recorded latency and tokens
    assert (tmp_path / ".agenteval" / "cache" / "responses.sqlite").is_file()
    run(tmp_path, "--no-cache")
    assert server.count() == 4
    run(tmp_path, "--refresh-cache")
    assert server.count() == 6
    run(tmp_path, "--cache-dir", tmp_path / "other")
    assert server.count() == 8 and (tmp_path / "other" / "responses.sqlite").is_file()


def test_a_re_run_on_threads_answers_cached_cases_in_its_own_thread_and_sends_each_other_once(server, tmp_path):
    """A re-run on threads with some answers cached (cases added since): every cached one is
    replayed, never sent; every other is sent once; the lines are the ones a run on one thread writes."""
    target = "  temperature: 0\n  messages: [{role: user, content: 'Q: {{ input.question }}'}]"

    def suite(ids):
        cases = "".join(f"  - {{id: '{i}', input: {{question: q{i}}}, expected: x}}\n" for i in ids)
        write(tmp_path, "s.yaml", suite_text(server, target, "  - {type: contains, path: content, reference: echo}", cases))

    suite(range(0, 40, 2))
    run(tmp_path, "--workers", "4")
    assert server.count() == 20
    suite(range(40))
    done, lines = run(tmp_path, "--workers", "4")
    assert done.returncode == 0 and len(lines) == 40
    assert server.count() == 40  # the 20 new cases, each sent once
    asked = sorted(int(r.body["messages"][0]["content"].removeprefix("Q: q")) for r in server.received)
    assert asked == sorted([*range(0, 40, 2), *range(1, 40, 2)])
    assert {case_id for case_id, line in lines.items() if line["output"]["usage"].get("cached")} == {str(i) for i in range(0, 40, 2)}
    _, alone = run(tmp_path, "--workers", "1")  # every answer cached now: the same lines as on one thread
    assert server.count() == 40

    def kept(line):
        return {key: value for key, value in line.items() if key not in ("run_id", "timestamp", "duration_ms", "evaluator_results", "output", "usage")}

    assert {case_id: kept(line) for case_id, line in alone.items()} == {case_id: kept(line) for case_id, line in lines.items()}
    for case_id, line in lines.items():
        assert alone[case_id]["output"] == {**line["output"], "usage": {**line["output"]["usage"], "cached": True}}
        assert [result["verdict"] for result in alone[case_id]["evaluator_results"]] == ["pass"]


def test_a_judged_re_run_on_threads_replays_target_and_judge_and_asks_the_judge_only_what_it_lacks(tmp_path):
    """Target answers cached, the judge's not yet (its criteria changed): each case's target answer is
    replayed, its judge asked once; a third run replays both and writes the lines a run on one thread writes."""
    from agenteval.evaluators.model.rubric import SYSTEM_PROMPT

    def chat(body):
        if body["messages"][0].get("content") == SYSTEM_PROMPT:  # the judge: grade every criterion it names
            names = [line.split(" (score:")[0].removeprefix("- ") for line in body["messages"][1]["content"].splitlines() if line.startswith("- ")]
            return {"role": "assistant", "content": json.dumps({name: {"reasoning": "ok", "score": "pass"} for name in names})}
        return {"role": "assistant", "content": "echo: " + body["messages"][-1]["content"]}

    with LLMServer(chat=chat) as server:
        def suite(criterion):
            cases = "".join(f"  - {{id: '{i}', input: {{question: q{i}}}, expected: x}}\n" for i in range(12))
            judge = f"  - {{type: llm_judge, endpoint: j, criteria: [{{name: {criterion}, description: d}}]}}"
            write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0", judge, cases, f"models:\n  j: {{base_url: '{server.base_url}', model: g}}"))

        suite("right")
        run(tmp_path, "--workers", "4")
        assert server.count() == 24  # 12 answers, 12 grades
        suite("exact")  # another rubric: new judge requests, the same answers
        done, lines = run(tmp_path, "--workers", "4")
        assert done.returncode == 0 and server.count() == 36  # the 12 new grades, each asked once
        assert all(line["output"]["usage"]["cached"] for line in lines.values())
        assert all(line["evaluator_results"][0]["details"]["criteria"]["exact"]["score"] == 1.0 for line in lines.values())
        _, again = run(tmp_path, "--workers", "4")
        _, alone = run(tmp_path, "--workers", "1")
        assert server.count() == 36

    def kept(line):
        return {**line, "run_id": None, "timestamp": None, "duration_ms": None,
                "evaluator_results": [{**result, "duration_ms": None} for result in line["evaluator_results"]]}

    assert {case_id: kept(line) for case_id, line in again.items()} == {case_id: kept(line) for case_id, line in alone.items()}


def test_which_runs_try_cases_from_the_cache_in_their_own_thread(server, tmp_path):
    from agenteval.process import Processes
    from agenteval.runner import Runner
    from agenteval.runs import open_endpoints
    from agenteval.suite.loader import load_suite

    def tries(target="  temperature: 0", evaluators="", extra="", **settings):
        write(tmp_path, "s.yaml", suite_text(server, target, evaluators, extra=extra))
        loaded = load_suite(tmp_path / "s.yaml")
        options = SimpleNamespace(**{"cache": True, "refresh_cache": False, "cache_dir": None, **settings})
        runner = Runner(loaded, "r", Processes(), endpoints=open_endpoints(loaded, options, None))
        list(runner.score(iter(()), workers=2))  # (sets the run's evaluators up)
        try:
            return runner._answers_from_cache()
        finally:
            runner.endpoints.close()

    assert tries()
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0"))
    loaded = load_suite(tmp_path / "s.yaml")
    options = SimpleNamespace(cache=True, refresh_cache=False, cache_dir=None)
    runner = Runner(loaded, "r", Processes(), endpoints=open_endpoints(loaded, options, None))
    list(runner.score(iter(()), workers=2))
    first, second = list(loaded.iter_cases())
    list(runner.score(iter([first]), workers=1))  # case a's answer is now cached
    assert server.count() == 1
    assert runner._from_cache((second, 0, loaded.cells[0])) is None and server.count() == 1  # a miss: nothing sent
    replayed = runner._from_cache((first, 0, loaded.cells[0]))
    assert replayed.case_id == "a" and replayed.output["usage"]["cached"] is True and server.count() == 1
    runner.endpoints.close()
    assert not tries(refresh_cache=True)  # --refresh-cache: every answer is asked again
    assert not tries(cache=False)  # --no-cache
    tool = "[{name: t, parameters: {type: object}, mock: [{result: ok}]}]"
    assert not tries(f"  temperature: 0\n  tools: {tool}")  # a tool loop: its tools run between its requests
    judge = "  - {type: llm_judge, endpoint: j, criteria: [{name: c, description: d}]}"
    models = f"models:\n  j: {{base_url: '{server.base_url}', model: m}}"
    assert tries(evaluators=judge, extra=models)  # a judge only asks its model: its replies may come from the cache too
    assert not tries(evaluators="  - {type: code_judge, command: [echo, '1']}")  # a program could do anything, twice
    assert not tries(evaluators="  - {type: regex, path: content, pattern: P}")  # (not one of the checks known to be safe)
    assert not tries(evaluators=judge + "\n  - {type: code_judge, command: [echo, '1']}", extra=models)


def test_without_temperature_0_a_target_is_not_cached(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server))
    run(tmp_path)
    run(tmp_path)
    assert server.count() == 4
    assert not (tmp_path / ".agenteval").exists()


def test_errors_after_retries_are_case_errors_and_the_run_goes_on(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  retries: 1\n  timeout: 0.5", cases="""  - {id: a, input: {q: 1}, expected: x}"""))
    server.fail(Fault("status", 500, body="boom"), Fault("sleep", seconds=1.0))
    done, lines = run(tmp_path, "--workers", "1")
    assert done.returncode == 3
    assert lines["a"]["error"].startswith("openai target: POST http://127.0.0.1:")
    assert lines["a"]["error"].endswith("/v1/chat/completions after 2 attempts: timed out after 0.5s")


def test_a_named_model_under_models_is_used_and_overridden(server, tmp_path):
    write(tmp_path, "s.yaml", f"""
name: named
models:
  small: {{base_url: "{server.base_url}", model: tiny, temperature: 0.7, max_tokens: 9}}
target: {{type: openai, endpoint: small, temperature: 0}}
evaluators: [{{type: contains, path: content, reference: echo}}]
cases: [{{id: a, input: hi, expected: x}}]
""")
    done, _ = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.received[0].body == {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "temperature": 0, "max_tokens": 9}


def test_an_unknown_named_model_is_a_load_error(server, tmp_path):
    write(tmp_path, "s.yaml", """
name: named
models: {small: {base_url: "http://127.0.0.1:1/v1", model: tiny}}
target: {type: openai, endpoint: smal}
evaluators: [{type: contains, path: content, reference: x}]
cases: [{id: a, input: hi, expected: x}]
""")
    done = run_cli("validate", tmp_path / "s.yaml")
    assert done.returncode == 2
    assert "target.endpoint: 'smal' is not defined under `models:` (known: small); did you mean 'small'?" in done.stderr


def test_a_literal_key_in_a_suite_is_a_load_error(tmp_path):
    write(tmp_path, "s.yaml", f"""
name: leaky
target: {{type: openai, base_url: "http://127.0.0.1:1/v1", model: m, api_key: {SECRET}}}
evaluators: [{{type: contains, path: content, reference: x}}]
cases: [{{id: a, input: hi, expected: x}}]
""")
    done = run_cli("validate", tmp_path / "s.yaml")
    assert done.returncode == 2
    assert "s.yaml:2: target: a literal `api_key` is not allowed in a suite" in done.stderr
    assert SECRET not in done.stderr


def test_the_key_never_reaches_results_summaries_cache_or_logs(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, """  temperature: 0
  api_key_env: LIVE_TEST_KEY
  headers: {X-Org: "${LIVE_TEST_ORG}"}"""))
    env = {"LIVE_TEST_KEY": SECRET, "LIVE_TEST_ORG": "org-secret-77"}
    server.fail(Fault("status", 400, body=f"invalid key {SECRET} (org org-secret-77)"))
    done, lines = run(tmp_path, "--workers", "1", env=env)
    assert done.returncode == 3
    assert "invalid key *** (org ***)" in lines["a"]["error"]
    assert server.received[1].headers["Authorization"] == f"Bearer {SECRET}"
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        data = path.read_bytes()
        assert SECRET.encode() not in data and b"org-secret-77" not in data, path
    assert SECRET not in done.stdout + done.stderr


def test_endpoint_concurrency_is_reached_without_workers(tmp_path):
    with LLMServer(delay=0.15) as server:
        cases = "\n".join(f"  - {{id: c{i}, input: q{i}, expected: x}}" for i in range(12))
        write(tmp_path, "s.yaml", suite_text(server, "  concurrency: 4", cases=cases))
        done, lines = run(tmp_path)
        assert done.returncode == 1 and len(lines) == 12 and server.max_in_flight == 4


# --- http target -------------------------------------------------------------------------------

def http_suite(server, target, cases='  - {id: a, input: {q: 1}, expected: {q: 1}}'):
    return f"""
name: service
target:
  type: http
  url: "{server.url}/answer"
  backoff: 0.01
{target}
evaluators: [{{type: field_accuracy, fields: [{{path: q}}]}}]
cases:
{cases}
"""


def test_http_posts_the_input_and_reads_the_answer_at_response_path(server, tmp_path):
    write(tmp_path, "s.yaml", http_suite(server, '  response_path: echo\n  headers: {X-Token: "${HTTP_TEST_TOKEN}"}'))
    done, lines = run(tmp_path, env={"HTTP_TEST_TOKEN": "tok-123"})
    assert done.returncode == 0, done.stderr
    assert lines["a"]["output"] == {"q": 1} and lines["a"]["usage"]["latency_ms"] > 0
    request = server.received[0]
    assert request.method == "POST" and request.path == "/answer" and request.body == {"q": 1}
    assert request.headers["X-Token"] == "tok-123"


def test_http_get_sends_the_input_as_query_parameters(server, tmp_path):
    write(tmp_path, "s.yaml", http_suite(server, "  method: GET\n  response_path: path", '  - {id: a, input: {q: 1, city: Paris}, expected: x}'))
    done, lines = run(tmp_path)
    assert done.returncode == 1  # the answer is not {q: 1}
    assert server.received[0].method == "GET" and server.received[0].path == "/answer?q=1&city=Paris"
    assert lines["a"]["output"] == "/answer"


def test_http_non_2xx_after_retries_is_a_case_error_with_status_and_body(server, tmp_path):
    write(tmp_path, "s.yaml", http_suite(server, "  retries: 2"))
    server.fail(*[Fault("status", 502, body="upstream down: db timeout")] * 3)
    done, lines = run(tmp_path)
    assert done.returncode == 3
    assert lines["a"]["error"] == (
        f"http target: POST {server.url}/answer after 3 attempts: HTTP 502: 'upstream down: db timeout'"
    )
    assert server.count() == 3


def test_http_a_missing_response_path_is_a_case_error(server, tmp_path):
    write(tmp_path, "s.yaml", http_suite(server, "  response_path: data.answer"))
    done, lines = run(tmp_path)
    assert done.returncode == 3 and "the response has no `data.answer`" in lines["a"]["error"]


def test_a_missing_header_variable_is_a_case_error_naming_it(server, tmp_path):
    write(tmp_path, "s.yaml", http_suite(server, '  headers: {X-Token: "${SURELY_UNSET_VAR_1}"}'))
    done, lines = run(tmp_path, env={"SURELY_UNSET_VAR_1": None})
    assert done.returncode == 3
    assert lines["a"]["error"] == "http target: environment variable SURELY_UNSET_VAR_1 is not set (used as ${SURELY_UNSET_VAR_1})"
    assert server.count() == 0


# --- repeat, budgets ---------------------------------------------------------------------------

def test_repeat_reports_spread_and_flaky_cases(tmp_path):
    calls = {"n": 0}

    def alternating(body):
        calls["n"] += 1
        text = body["messages"][-1]["content"]
        flip = "Paris" if calls["n"] % 2 else "no idea"
        return {"role": "assistant", "content": "Lima" if "Peru" in text else flip}

    with LLMServer(chat=alternating) as server:
        write(tmp_path, "s.yaml", suite_text(server, cases='''  - {id: a, input: {question: "capital of France?"}, expected: Paris}
  - {id: b, input: {question: "capital of Peru?"}, expected: Lima}''',
            evaluators="  - {type: contains, path: content, reference_path: ''}"))
        done, _ = run(tmp_path, "--repeat", "4", "--workers", "1", quiet=False)
    out = tmp_path / "r0.jsonl"
    lines = read_jsonl(out)
    assert len(lines) == 8 and sorted(line["repetition"] for line in lines) == [0, 0, 1, 1, 2, 2, 3, 3]
    summary = json.loads((tmp_path / "r0.summary.json").read_text())
    repeats = summary["repeats"]
    assert repeats["repeat"] == 4 and repeats["flaky_cases"] == 1
    assert repeats["flaky"] == [{"case_id": "a", "runs": 4, "passed": 2, "pass_rate": 0.5}]
    rates = [sum(line["verdict"] == "pass" for line in lines if line["repetition"] == r) / 2 for r in range(4)]
    assert repeats["pass_rate"]["mean"] == pytest.approx(statistics.mean(rates))
    assert repeats["pass_rate"]["std"] == pytest.approx(statistics.stdev(rates))
    half = 3.182 * statistics.stdev(rates) / 2
    assert repeats["pass_rate"]["ci95"] == pytest.approx([statistics.mean(rates) - half, statistics.mean(rates) + half])
    assert "flaky cases: 1: a (2/4)" in done.stdout


def test_suite_limits_gate_the_run(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(
        server, "  temperature: 0",
        """  - {type: contains, path: content, reference_path: ''}
  - {type: latency, p95_ms: 60000}
  - {type: token_usage, max_tokens: 100, total_tokens: 4}
  - {type: cost, max_usd: 1, total_usd: 0.5}""",
        '  - {id: a, input: "say Paris", expected: Paris}',
        "prices: {m1: {input: 1000, output: 2000}}",
    ))
    done, lines = run(tmp_path)
    assert lines["a"]["verdict"] == "pass"
    usage = lines["a"]["usage"]
    assert usage["cost_usd"] == pytest.approx((2 * 1000 + 3 * 2000) / 1e6)
    assert done.returncode == 1  # every case passed, but the suite used more than 4 tokens
    assert "suite limit not met: total_tokens 5 > 4 (evaluator token_usage)" in done.stderr
    summary = json.loads((tmp_path / "r0.summary.json").read_text())
    checks = {check["figure"]: check for check in summary["suite_limits"]}
    assert checks["total_tokens"]["passed"] is False and checks["total_tokens"]["value"] == 5
    assert checks["latency_p95_ms"]["passed"] and checks["total_cost_usd"]["passed"]
    assert summary["usage"]["total_cost_usd"] == pytest.approx(0.008)


# --- the qa-llm example ------------------------------------------------------------------------

def test_the_qa_llm_example_replays_offline_from_its_committed_cache(tmp_path):
    from conftest import EXAMPLES

    cache = EXAMPLES / "qa-llm" / ".agenteval" / "cache" / "responses.sqlite"
    before = cache.read_bytes()
    assert len(before) <= 16 * 1024
    env = {**os.environ, "QA_LLM_BASE_URL": "http://localhost:11434/v1"}  # the default: the key the cache holds
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "run", str(EXAMPLES / "qa-llm" / "suite.yaml"), "-o", str(tmp_path / "r.jsonl"), "-q"],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert done.returncode == 1, done.stderr
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
    assert {k: v["verdict"] for k, v in lines.items()} == {
        "capital-france": "pass", "capital-australia": "fail", "water-boils": "pass", "largest-planet": "pass", "author-hamlet": "pass",
    }
    assert all(line["usage"]["cached"] for line in lines.values())
    judge = lines["capital-australia"]["evaluator_results"][1]
    assert judge["details"]["criteria"]["correct"]["raw_score"] == "fail" and judge["details"]["usage"]["cached"]
    assert cache.read_bytes() == before and not list(cache.parent.glob("*-wal"))


# --- OpenAI by default: no base_url, the key in OPENAI_API_KEY ------------------------------------

def openai_target(**keys):
    from agenteval.targets.openai import OpenAITarget

    return OpenAITarget.model_validate({"type": "openai", "model": "gpt-4o-mini", **keys})


def test_without_base_url_or_endpoint_a_target_asks_openai_with_the_key_in_OPENAI_API_KEY():
    from agenteval.endpoints.settings import merged_settings
    from agenteval.targets.model_entries import ChatModel
    from agenteval.targets.openai import OpenAITarget

    settings = merged_settings(openai_target(), {})
    assert (settings.base_url, settings.api_key_env, settings.model) == ("https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4o-mini")
    given = {  # what the target says -> (where it goes, the variable its key is read from)
        "api_key_env: MY_OPENAI_KEY": ({"api_key_env": "MY_OPENAI_KEY"}, ("https://api.openai.com/v1", "MY_OPENAI_KEY")),
        "an Authorization header": ({"headers": {"Authorization": "Bearer ${GATEWAY_TOKEN}"}}, ("https://api.openai.com/v1", None)),
        "base_url of OpenAI": ({"base_url": "https://API.openai.com/v1/"}, ("https://API.openai.com/v1/", "OPENAI_API_KEY")),
        "a local server": ({"base_url": "http://localhost:11434/v1"}, ("http://localhost:11434/v1", None)),
        "a gateway": ({"base_url": "https://gateway.example/v1", "api_key_env": "GW_KEY"}, ("https://gateway.example/v1", "GW_KEY")),
    }
    for what, (keys, expected) in given.items():
        settings = merged_settings(openai_target(**keys), {})
        assert (settings.base_url, settings.api_key_env) == expected, what
    models = {"local": ChatModel(base_url="http://127.0.0.1:9/v1", model="m"), "gpt": ChatModel(model="gpt-4o-mini", temperature=0)}
    named = OpenAITarget.model_validate({"type": "openai", "endpoint": "gpt"})
    settings = merged_settings(named, models)  # a named model without base_url: OpenAI too
    assert (settings.base_url, settings.api_key_env, settings.model, settings.temperature) == ("https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4o-mini", 0)
    settings = merged_settings(openai_target(endpoint="local"), models)
    assert (settings.base_url, settings.api_key_env, settings.model) == ("http://127.0.0.1:9/v1", None, "gpt-4o-mini")


def test_judges_and_simulated_users_without_base_url_ask_openai_too():
    from agenteval.conversations.simulated_user import endpoint_settings
    from agenteval.endpoints import Endpoints
    from agenteval.endpoints.settings import merged_settings
    from agenteval.evaluators.model.llm_judge import LLMJudge
    from agenteval.evaluators.model.rubric import judge_model
    from agenteval.evaluators.model.semantic_similarity import SemanticSimilarity
    from agenteval.targets.model_entries import ChatModel

    judge = LLMJudge.model_validate({"type": "llm_judge", "model": "gpt-4o-mini", "criteria": [{"name": "ok", "description": "d"}]})
    settings = judge_model(judge, {})
    assert (settings.base_url, settings.api_key_env, settings.temperature) == ("https://api.openai.com/v1", "OPENAI_API_KEY", 0)
    embeddings = merged_settings(SemanticSimilarity.model_validate({"type": "semantic_similarity", "model": "text-embedding-3-small"}), {})
    assert (embeddings.base_url, embeddings.api_key_env) == ("https://api.openai.com/v1", "OPENAI_API_KEY")
    user = endpoint_settings("customer", Endpoints(models={"customer": ChatModel(model="gpt-4o-mini")}))
    assert (user.base_url, user.api_key_env, user.model) == ("https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4o-mini")
    local = endpoint_settings("customer", Endpoints(models={"customer": ChatModel(base_url="http://127.0.0.1:9/v1", model="m")}))
    assert (local.base_url, local.api_key_env) == ("http://127.0.0.1:9/v1", None)


def test_a_model_is_still_required(tmp_path):
    write(tmp_path, "s.yaml", DEFAULT_OPENAI.replace("model: gpt-4o-mini", "temperature: 0"))
    done = run_cli("validate", tmp_path / "s.yaml")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"{tmp_path / 's.yaml'}:2: target: no `model`: give it, or `endpoint: NAME` of a model under `models:`",
        f"{tmp_path / 's.yaml'}: 1 error",
    ]


def test_the_default_key_is_sent_as_a_bearer_token(server):
    """The settings an openai target without base_url resolves to, sent to a local server instead of
    api.openai.com (tests reach no other host): the key in OPENAI_API_KEY arrives as the Bearer token."""
    from agenteval.endpoints import Endpoints
    from agenteval.endpoints.chat import chat_body, complete
    from agenteval.endpoints.settings import merged_settings

    resolved = merged_settings(openai_target(), {})
    assert resolved.base_url == "https://api.openai.com/v1"
    settings = resolved.model_copy(update={"base_url": server.base_url})
    endpoints = Endpoints(environ={"OPENAI_API_KEY": SECRET + "\r\n"})  # (a .env saved with CRLF line ends)
    try:
        reply = complete(endpoints, settings, chat_body(settings, [{"role": "user", "content": "hi"}]), cache=False)
    finally:
        endpoints.close()
    assert reply.content == "echo: hi" and reply.model == "gpt-4o-mini"
    assert server.received[0].headers["Authorization"] == f"Bearer {SECRET}"


def test_a_local_server_gets_no_key_even_when_OPENAI_API_KEY_is_set(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, evaluators="  - {type: contains, path: content, reference: France}"))
    done, lines = run(tmp_path, env={"OPENAI_API_KEY": SECRET})
    assert done.returncode == 1, done.stderr  # asked: a's echo names France, b's does not
    assert (lines["a"]["verdict"], lines["b"]["verdict"]) == ("pass", "fail")
    assert server.count() == 2 and all("Authorization" not in received.headers for received in server.received)


DEFAULT_OPENAI = """
name: default-openai
target: {type: openai, model: gpt-4o-mini}
evaluators: [{type: contains, path: content, reference: Paris}]
cases: [{id: a, input: "capital of France?"}]
"""


def test_a_run_of_the_default_openai_target_without_OPENAI_API_KEY_stops_before_any_case(tmp_path):
    write(tmp_path, "s.yaml", DEFAULT_OPENAI)
    done, lines = run(tmp_path, env={"OPENAI_API_KEY": None})
    assert (done.returncode, lines) == (2, {})
    assert done.stderr.splitlines() == [
        f"{tmp_path / 's.yaml'}: target: environment variable OPENAI_API_KEY is not set: api.openai.com needs an API key; "
        "set it, or name another variable with `api_key_env: NAME`"
    ]
    done, lines = run(tmp_path, env={"OPENAI_API_KEY": "  "})  # blank is not set
    assert (done.returncode, lines) == (2, {}) and "OPENAI_API_KEY is not set" in done.stderr
    write(tmp_path, "s.yaml", DEFAULT_OPENAI.replace("model: gpt-4o-mini", "model: gpt-4o-mini, api_key_env: TEAM_OPENAI_KEY"))
    done, lines = run(tmp_path, env={"OPENAI_API_KEY": SECRET, "TEAM_OPENAI_KEY": None})  # the variable named, not the default
    assert (done.returncode, lines) == (2, {})
    assert done.stderr.splitlines() == [
        f"{tmp_path / 's.yaml'}: target: environment variable TEAM_OPENAI_KEY is not set: it holds the API key (`api_key_env`); "
        "set it, or name another variable"
    ]


def test_a_cases_file_judge_without_base_url_needs_trust_before_it_could_send_OPENAI_API_KEY(tmp_path):
    write(tmp_path, "s.yaml", "name: t\nevaluators: [{type: equals}]\ncases: cases.jsonl\n")
    judge = {"type": "llm_judge", "model": "gpt-4o-mini", "criteria": [{"name": "ok", "description": "d"}]}
    write(tmp_path, "cases.jsonl", json.dumps({"id": "a", "output": "x", "expected": "x", "evaluators": [judge]}) + "\n")
    done = run_cli("validate", tmp_path / "s.yaml")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        f"{tmp_path / 'cases.jsonl'}:1: evaluators[0].type: case 'a': a `llm_judge` evaluator in a cases file talks to a server "
        "of its own (a case may only use `endpoint: NAME` of the suite's `models:`); cases files are data, so this needs "
        "`trust_cases: true` in the suite (only for a file you trust like your own code), or move the evaluator into the suite"
    )
