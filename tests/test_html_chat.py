"""The HTML report shows a played tool loop or conversation as a chat: bubbles per turn, tool calls
and results inline (failures marked), each step's figures, the simulated user's turns marked, why
it stopped, and each evaluator's verdict at the turn it judged.

The results come from a real run of the CLI against the local test model server (tests/llm_server.py),
which plays the agent, the simulated user and the goal judge; the page is opened in a real headless
Chromium with every request but the file itself blocked.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from browsers import ARGS as CHROMIUM_ARGS, chromium_or_skip
from conftest import read_jsonl, write
from llm_server import LLMServer, calls
from playwright.sync_api import sync_playwright
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.conversations.simulated_user import JUDGE_SYSTEM
from agenteval.reports.html import clip
from agenteval.reports.transcript import chat, figures, verdict_marks

HOSTILE = "<img src=x onerror=\"document.body.dataset.pwned='1'\"><script>document.body.dataset.pwned='2'</script>"


def last_user(body):
    return next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), "")


def model(body):
    """The agent, the simulated user and the goal judge, told apart by the system message."""
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    if system.startswith("You are playing the user"):
        said = sum(1 for m in body["messages"] if m["role"] == "assistant")  # the user's own earlier messages
        return {"role": "assistant", "content": ["Hello.", "Refund A-7 please."][said] if said < 2 else "GOAL_REACHED"}
    if system == JUDGE_SYSTEM:
        return {"role": "assistant", "content": "no"}
    last = body["messages"][-1]
    if last["role"] == "tool":
        if '"error"' in last["content"] and "no such order" not in last["content"]:
            return {"role": "assistant", "content": "Sorry, the refund failed."}
        if "no such order" in last["content"]:
            return calls(("get_order", {"order_id": "Z-0"}))  # loops until max_steps
        return {"role": "assistant", "content": "Order A-7 was delivered " + HOSTILE}
    said = last_user(body)
    if said.startswith("Where is"):
        return calls(("get_order", {"order_id": "A-7"}))
    if said.startswith("Refund it"):
        return calls(("refund", {"order_id": "A-7", "amount": 999}))
    if said.startswith("Loop"):
        return calls(("get_order", {"order_id": "Z-0"}))
    if "Refund A-7" in said:
        return {"role": "assistant", "content": "Your refund is issued."}
    return {"role": "assistant", "content": "How can I help?"}


SUITE = """
name: live-chat
models:
  agent: {{base_url: "{url}", model: agent-1, temperature: 0, backoff: 0.01}}
  customer: {{base_url: "{url}", model: user-1, backoff: 0.01}}
target:
  type: openai
  endpoint: agent
  messages:
    - {{role: system, content: "You are a refund agent."}}
  tools:
    - name: get_order
      parameters: {{type: object, properties: {{order_id: {{type: string}}}}}}
      mock:
        - {{when: {{order_id: A-7}}, result: {{status: delivered, total: 42.5, __proto__: {{polluted: true}}}}}}
        - {{result: {{error: no such order}}}}
    - name: refund
      parameters: {{type: object, properties: {{order_id: {{type: string}}, amount: {{type: number}}}}}}
      mock: [{{when: {{amount: 42.5}}, result: {{ok: true}}}}]
  loop: {{max_steps: 3}}
evaluators:
  - {{type: contains, name: mentions-order, scope: turn, path: content, reference: "A-7"}}
  - {{type: contains, name: final, path: content, reference: "refund"}}
  - {{type: conversation, max_turns: 3}}
cases:
  - id: chat
    turns:
      - "Where is order A-7? <script>document.body.dataset.pwned='3'</script>"
      - user: Refund it
        evaluators: [{{type: contains, name: apologises, path: content, reference: Sorry}}]
  - id: sim
    input: {{order: A-7}}
    user:
      endpoint: customer
      persona: A customer.
      goal: Get a refund for A-7.
      max_turns: 3
      stop: {{regex: "refund is issued", judge: true}}
  - id: loop
    turns: ["Loop please"]
"""


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chat")
    with LLMServer(chat=model) as server:
        write(folder, "s.yaml", SUITE.format(url=server.base_url))
        done = CliRunner().invoke(app, ["run", str(folder / "s.yaml"), "-o", str(folder / "r.jsonl"), "--html", str(folder / "r.html"), "-q"])
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert done.exit_code == 1, done.stdout
    lines = {line["case_id"]: line for line in read_jsonl(folder / "r.jsonl")}
    return SimpleNamespace(html=folder / "r.html", lines=lines)


@pytest.fixture(scope="module")
def browser():
    chromium = chromium_or_skip()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, played):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    requests, problems = [], []

    def route(found):
        requests.append(found.request.url)
        found.continue_() if found.request.url.startswith("file://") else found.abort()

    context.route("**/*", route)
    opened = context.new_page()
    opened.on("console", lambda message: message.type in ("error", "warning") and problems.append(message.text))
    opened.on("pageerror", lambda error: problems.append(str(error)))
    opened.goto(played.html.as_uri())
    opened.wait_for_selector("body[data-ready=true]", timeout=30_000)
    yield SimpleNamespace(page=opened, requests=requests, problems=problems)
    context.close()


def open_case(page, case_id):
    page.click(f"#case-table tbody tr.case >> text={case_id}")
    return page.wait_for_selector("td.detail .chat")


def bubbles(chat_element):
    """Each message of the chat as (classes, role label, text or tool name, arguments or result)."""
    found = []
    for item in chat_element.query_selector_all(".msg"):
        said = item.query_selector(".said")
        tool = item.query_selector(".msg-head .tool-name")
        call = item.query_selector(".call")
        result = item.query_selector("pre.tool-result")
        found.append((
            item.get_attribute("class"), item.query_selector(".role").inner_text(),
            said.inner_text() if said else tool.inner_text() if tool else None,
            (call.query_selector(".tool-name").inner_text(), json.loads(call.query_selector("pre.arguments").inner_text())) if call
            else json.loads(result.inner_text()) if result and result.inner_text().startswith("{") else result.inner_text() if result else None,
        ))
    return found


def verdicts(chat_element, turn):
    return [item.inner_text() for item in chat_element.query_selector_all(f'ul.verdicts[data-turn="{turn}"] li')]


def test_a_conversation_reads_as_a_chat_with_tool_calls_results_and_a_failed_tool_marked(page, played):
    answer = played.lines["chat"]["output"]
    assert [step["kind"] for step in answer["steps"]] == ["model", "tool", "model", "model", "tool", "model"]
    assert answer["steps"][4]["error"] is True  # the refund mock has no rule for 999
    found = open_case(page.page, "chat")
    assert bubbles(found) == [
        ("msg system", "SYSTEM", "You are a refund agent.", None),
        ("msg user", "USER", "Where is order A-7? <script>document.body.dataset.pwned='3'</script>", None),
        ("msg assistant", "ASSISTANT", None, ("get_order", {"order_id": "A-7"})),
        ("msg tool", "TOOL RESULT", "get_order", {"status": "delivered", "total": 42.5, "__proto__": {"polluted": True}}),
        ("msg assistant", "ASSISTANT", "Order A-7 was delivered " + HOSTILE, None),
        ("msg user", "USER", "Refund it", None),
        ("msg assistant", "ASSISTANT", None, ("refund", {"order_id": "A-7", "amount": 999})),
        ("msg tool failed", "TOOL RESULT", "refund", {"error": answer["tool_calls"][1]["result"]["error"]}),
        ("msg assistant", "ASSISTANT", "Sorry, the refund failed.", None),
    ]
    assert answer["tool_calls"][1]["result"]["error"] == 'no mock result of \'refund\' for the arguments {"order_id":"A-7","amount":999}'
    assert found.query_selector(".msg.tool.failed .badge.error").inner_text() == "error"
    assert found.query_selector(".msg.tool:not(.failed) .badge") is None
    # the hostile strings are text: nothing ran, no element was made, no prototype was reached
    assert page.page.evaluate("document.body.dataset.pwned") is None
    assert found.query_selector("img") is None and found.query_selector("script") is None
    assert page.page.evaluate("({}).polluted") is None
    # each step's figures beside it: latency and tokens of each model call, latency of each tool call
    step_figures = [item.inner_text() for item in found.query_selector_all(".msg.assistant .figures")]
    assert len(step_figures) == 4 and all(re.fullmatch(r"\d+(\.\d)? ms · \d+ tokens \(\d+ in, \d+ out\)", text) for text in step_figures), step_figures
    tokens = [step["usage"]["total_tokens"] for step in answer["steps"] if step["kind"] == "model"]
    assert [int(re.search(r"(\d+) tokens", text).group(1)) for text in step_figures] == tokens
    assert all(re.fullmatch(r"\d+(\.\d)? ms", item.inner_text()) for item in found.query_selector_all(".msg.tool .figures"))
    assert [mark.inner_text() for mark in found.query_selector_all(".turn-mark")] == ["turn 1", "turn 2"]
    assert found.query_selector(".chat-end .stopped").inner_text() == "stopped: answered: every scripted turn was answered"
    assert page.problems == [] and page.requests == [played.html.as_uri()]


def test_each_verdict_shows_at_the_turn_it_judged(page, played):
    results = {result["name"]: result for result in played.lines["chat"]["evaluator_results"]}
    assert results["mentions-order"]["details"]["turns"] == [{"turn": 1, "score": 1.0, "verdict": "pass"}, {"turn": 2, "score": 0.0, "verdict": "fail"}]
    found = open_case(page.page, "chat")
    assert verdicts(found, 1) == ["mentions-order pass 1.000"]
    assert verdicts(found, 2) == ["mentions-order fail 0.000 'A-7'", "final pass 1.000", "turn 2: apologises pass 1.000"]
    assert verdicts(found, 0) == ["conversation pass 1.000"]  # the whole conversation's: at the end
    # in the page's order: turn 1's verdicts after turn 1's last reply, turn 2's after turn 2's
    order = page.page.evaluate("""() => [...document.querySelector('td.detail .chat').children].map((node) =>
        node.matches('ul.verdicts') ? 'verdicts ' + node.dataset.turn : node.matches('.msg') ? node.classList[1] + ' ' + node.dataset.turn : node.className)""")
    assert order == [
        "system 0", "turn-mark", "user 1", "assistant 1", "tool 1", "assistant 1", "verdicts 1",
        "turn-mark", "user 2", "assistant 2", "tool 2", "assistant 2", "verdicts 2", "chat-end",
    ]
    assert found.query_selector('ul.verdicts[data-turn="2"] li.fail .evaluator-name').inner_text() == "mentions-order"


def test_a_simulated_users_turns_the_goal_judge_and_the_goal_are_shown(page, played):
    answer = played.lines["sim"]["output"]
    assert answer["goal"] == {"reached": True, "rule": "regex", "matched": "refund is issued", "turn": 2}
    found = open_case(page.page, "sim")
    rows = [(kind, role, text) for kind, role, text, _ in bubbles(found)]
    assert rows == [
        ("msg system", "SYSTEM", "You are a refund agent."),
        ("msg user simulated", "USER (SIMULATED)", "Hello."),
        ("msg assistant", "ASSISTANT", "How can I help?"),
        ("msg judge", "GOAL JUDGE", "the goal is not reached yet"),
        ("msg user simulated", "USER (SIMULATED)", "Refund A-7 please."),
        ("msg assistant", "ASSISTANT", "Your refund is issued."),
    ]
    assert re.fullmatch(r"GOAL JUDGE \d+(\.\d)? ms · \d+ tokens \(\d+ in, \d+ out\)\nthe goal is not reached yet", found.query_selector(".msg.judge").inner_text())
    user_figures = [item.inner_text() for item in found.query_selector_all(".msg.user .figures")]
    assert len(user_figures) == 2 and all(re.fullmatch(r"\d+(\.\d)? ms · \d+ tokens \(\d+ in, \d+ out\)", text) for text in user_figures)
    end = found.query_selector(".chat-end")
    assert end.query_selector(".stopped").inner_text() == "stopped: the simulated user's goal was reached"
    assert end.query_selector(".goal").inner_text() == "goal reached in turn 2 (regex, matched 'refund is issued')"
    assert verdicts(found, 1) == ["mentions-order fail 0.000 'A-7'"]
    assert verdicts(found, 2) == ["mentions-order fail 0.000 'A-7'", "final pass 1.000"]
    assert verdicts(found, 0) == ["conversation pass 1.000"]
    assert page.problems == []


def test_a_loop_a_limit_ended_shows_the_calls_that_never_ran_and_agent_limits_at_the_end(page, played):
    line = played.lines["loop"]
    assert line["output"]["stopped"] == "max_steps" and line["verdict"] == "fail"
    found = open_case(page.page, "loop")
    calls_shown = [(call.query_selector(".tool-name").inner_text(), call.query_selector(".badge").inner_text() if call.query_selector(".badge") else None)
                   for call in found.query_selector_all(".msg.assistant .call")]
    assert calls_shown == [("get_order", None), ("get_order", None), ("get_order", "not run")]
    assert found.query_selector(".chat-end .stopped").inner_text() == "stopped: a limit ended it: max_steps (the model was still calling tools)"
    assert verdicts(found, 1) == ["mentions-order fail 0.000 content (type mismatch: null, not a string)",
                                  "final fail 0.000 content (type mismatch: null, not a string)"]
    assert verdicts(found, 0) == [
        "conversation pass 1.000",
        "agent_limits fail 0.000 the tool loop reached its max_steps of 3 model calls (loop.max_steps) and the model was still calling tools",
    ]
    assert page.problems == []


# --- the chat's data, from hand-written answers of the documented shape -----------------------

def test_a_recorded_conversation_without_steps_pairs_its_turns_and_an_http_targets_own_calls():
    answer = {"content": "done", "stopped": "answered", "turns": [
        {"user": "hi", "reply": "hello", "tool_calls": []},
        {"user": "refund A-1", "reply": "done", "tool_calls": [{"name": "refund", "arguments": {"id": "A-1"}, "result": {"ok": True}}]},
    ]}
    entries, end = chat(answer, clip)
    assert entries == [
        ["user", 1, "hi", None, None, None, 0], ["assistant", 1, "hello", None, None, None, 0],
        ["user", 2, "refund A-1", None, None, None, 0],
        ["assistant", 2, "done", [["refund", {"id": "A-1"}, None, 2, {"ok": True}]], None, None, 0],
    ]
    assert end == ["answered: every scripted turn was answered", None, None]
    assert chat({"content": "Paris"}, clip) is None and chat({"messages": [{"role": "user", "content": "x"}]}, clip) is None


def test_a_loops_model_steps_pair_with_its_last_replies_after_a_templates_examples():
    answer = {"content": "B", "stopped": "answered", "messages": [
        {"role": "user", "content": "example"}, {"role": "assistant", "content": "an example reply"},
        {"role": "user", "content": "real"}, {"role": "assistant", "content": "B"}],
        "steps": [{"kind": "model", "step": 1, "latency_ms": 1234.5, "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cost_usd": 0.000123, "cached": True}}],
        "usage": {"latency_ms": 1234.5, "total_tokens": 12}}
    entries, end = chat(answer, clip)
    assert [entry[5] for entry in entries] == [None, None, None, "1234 ms · 12 tokens (10 in, 2 out) · $0.000123 · cached"]
    assert [entry[1] for entry in entries] == [1, 1, 1, 1]
    assert end == ["answered: the last reply called no tool", None, "1234 ms · 12 tokens"]


def test_verdict_marks_place_each_scope():
    from agenteval.evaluators.base import EvaluatorResult

    answer = {"turns": [{"user": "a", "reply": "b"}, {"user": "c", "reply": "d"}], "stopped": "max_steps"}
    results = [
        EvaluatorResult("each", "contains", 0.5, "partial", details={"turns": [{"turn": 1, "score": 1.0, "verdict": "pass"}, {"turn": 2, "score": 0.0, "verdict": "fail"}]}),
        EvaluatorResult("last", "contains", 1.0, "pass"),
        EvaluatorResult("turn 2: own", "contains", 0.0, "fail"),
        EvaluatorResult("turn 3: never", "contains", 0.0, "fail"),
        EvaluatorResult("conversation", "conversation", 1.0, "pass", details={"turns": 2}),
        EvaluatorResult("agent_limits", "agent_limits", 0.0, "fail"),
        EvaluatorResult("rubric", "llm_judge", 0.75, "partial", details={"criteria": {}, "scope": "conversation"}),
    ]
    codes = {"pass": 0, "partial": 1, "fail": 2, "error": 3}
    assert verdict_marks(results, answer, codes) == [
        [0, 1, 0, 1.0, 1], [0, 2, 2, 0.0, 1], [1, 2, 0, 1.0, 0], [2, 2, 2, 0.0, 0], [3, 0, 2, 0.0, 0], [4, 0, 0, 1.0, 0], [5, 0, 2, 0.0, 0],
        [6, 0, 1, 0.75, 0],  # a judge of the whole conversation: at the end
    ]


def test_figures_word_a_steps_latency_tokens_and_cost():
    assert figures(45.25, None) == "45.2 ms"
    assert figures(None, {"input_tokens": 3, "output_tokens": 4, "cost_usd": 0.25}) == "7 tokens (3 in, 4 out) · $0.2500"
    assert figures("slow", {"total_tokens": "many", "cached": "yes"}) is None
