"""Conversations end to end: the real CLI against a real local model server that plays the agent,
the simulated user and the goal judge (told apart by the system message each request carries),
an http target and a command target that receive the history, and the response cache replaying
a whole conversation."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest
from conftest import read_jsonl, write
from llm_server import LLMServer, calls
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.conversations.simulated_user import JUDGE_SYSTEM
from agenteval.evaluators.model.rubric import SYSTEM_PROMPT as RUBRIC_SYSTEM


class Model:
    """The server's chat function: the simulated user answers from `user_says` (in order, then
    GOAL_REACHED), the goal judge from `judge_says`, the rubric judge with a pass, the agent with
    `agent` (a function of the request body; default: echo the last user message)."""

    def __init__(self, user_says=(), judge_says=(), agent=None):
        self.user_says = list(user_says)
        self.judge_says = list(judge_says)
        self.agent = agent or (lambda body: f"echo: {last_user(body)}")
        self.requests = {"user": [], "judge": [], "rubric": [], "agent": []}

    def __call__(self, body):
        system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        if system.startswith("You are playing the user"):
            self.requests["user"].append(body)
            said = self.user_says.pop(0) if self.user_says else "GOAL_REACHED"
            return {"role": "assistant", "content": said}
        if system == JUDGE_SYSTEM:
            self.requests["judge"].append(body)
            return {"role": "assistant", "content": self.judge_says.pop(0) if self.judge_says else "no"}
        if system == RUBRIC_SYSTEM:
            self.requests["rubric"].append(body)
            return {"role": "assistant", "content": json.dumps({"coherent": {"reasoning": "it follows", "score": "pass"}})}
        self.requests["agent"].append(body)
        reply = self.agent(body)
        return reply if isinstance(reply, dict) else {"role": "assistant", "content": reply}


def last_user(body):
    return next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), "")


@pytest.fixture
def model():
    return Model()


@pytest.fixture
def server(model):
    with LLMServer(chat=model) as running:
        yield running


def run(tmp_path, *args):
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "-o", str(out), "-q", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    done = SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)
    return done, {line["case_id"]: line for line in read_jsonl(out)} if out.exists() else {}


def suite(server, cases, evaluators="  - {type: contains, path: content, reference: echo}", target=None, extra=""):
    target = target or """  type: openai
  endpoint: agent
  messages:
    - {role: system, content: "You are the support agent of {{ input.shop }}."}
    - {role: user, content: "unused in a conversation"}"""
    return f"""
name: talk
models:
  agent: {{base_url: "{server.base_url}", model: agent-1, temperature: 0, backoff: 0.01}}
  customer: {{base_url: "{server.base_url}", model: user-1, backoff: 0.01}}
target:
{target}
evaluators:
{evaluators}
cases:
{cases}
{extra}
"""


def by_name(line):
    return {result["name"]: result for result in line["evaluator_results"]}


SCRIPTED = """  - id: c1
    input: {shop: Acme}
    turns:
      - hello
      - user: my order id is A-1
        evaluators: [{type: contains, path: content, reference: "A-1"}, {type: contains, name: polite, path: content, reference: please}]
      - bye"""


def test_scripted_turns_send_the_history_and_each_turns_evaluators_judge_its_reply(server, model, tmp_path):
    write(tmp_path, "s.yaml", suite(server, SCRIPTED))
    done, lines = run(tmp_path)
    assert done.returncode == 1, done.stderr  # `turn 2: polite` fails
    line = lines["c1"]
    answer = line["output"]
    assert [turn["reply"] for turn in answer["turns"]] == ["echo: hello", "echo: my order id is A-1", "echo: bye"]
    assert answer["content"] == "echo: bye" and answer["stopped"] == "answered"
    third = model.requests["agent"][2]["messages"]
    assert third == [
        {"role": "system", "content": "You are the support agent of Acme."},
        {"role": "user", "content": "hello"}, {"role": "assistant", "content": "echo: hello"},
        {"role": "user", "content": "my order id is A-1"}, {"role": "assistant", "content": "echo: my order id is A-1"},
        {"role": "user", "content": "bye"},
    ]
    assert answer["messages"] == [*third, {"role": "assistant", "content": "echo: bye"}]
    results = by_name(line)
    assert list(results) == ["contains", "turn 2: contains", "turn 2: polite"]
    assert results["turn 2: contains"]["verdict"] == "pass" and results["turn 2: contains"]["hits"] == ["'A-1'"]
    assert results["turn 2: polite"]["verdict"] == "fail" and results["turn 2: polite"]["misses"] == ["'please'"]
    assert line["score"] == pytest.approx(2 / 3)
    # the transcript: one model step per turn, and the case's usage sums them
    assert [(step["kind"], step["turn"]) for step in answer["steps"]] == [("model", 1), ("model", 2), ("model", 3)]
    tokens = [step["usage"]["total_tokens"] for step in answer["steps"]]
    assert line["usage"]["total_tokens"] == answer["usage"]["total_tokens"] == sum(tokens)
    assert line["usage"]["latency_ms"] == pytest.approx(sum(step["latency_ms"] for step in answer["steps"]), abs=0.01)


def test_each_scope_judges_its_part_of_the_conversation(server, model, tmp_path):
    evaluators = """  - {type: contains, name: last, path: content, reference: "echo: bye"}
  - {type: contains, name: every-echo, scope: turn, path: content, reference: "echo"}
  - {type: contains, name: every-hello, scope: turn, path: content, reference: "hello"}
  - {type: contains, name: whole, scope: conversation, path: content, reference: "echo: bye"}
  - type: llm_judge
    endpoint: agent
    scope: conversation
    criteria: [{name: coherent, description: "The agent follows the conversation."}]"""
    write(tmp_path, "s.yaml", suite(server, SCRIPTED.replace(
        """        evaluators: [{type: contains, path: content, reference: "A-1"}, {type: contains, name: polite, path: content, reference: please}]\n""", ""
    ).replace("      - user: my order id is A-1", "      - my order id is A-1"), evaluators))
    done, lines = run(tmp_path)
    results = by_name(lines["c1"])
    assert results["last"]["verdict"] == "pass"
    assert results["every-echo"]["verdict"] == "pass" and results["every-echo"]["score"] == 1.0
    assert results["every-echo"]["details"]["turns"] == [{"turn": n, "score": 1.0, "verdict": "pass"} for n in (1, 2, 3)]
    hello = results["every-hello"]
    assert hello["score"] == pytest.approx(1 / 3) and hello["verdict"] == "partial"
    assert hello["hits"] == ["turn 1: 'hello'"] and hello["misses"] == ["turn 2: 'hello'", "turn 3: 'hello'"]
    assert results["whole"]["verdict"] == "pass"  # the whole answer's `content` is the last reply
    assert results["whole"]["details"] == {"scope": "conversation"}  # said, so reports place it at the end
    assert results["llm_judge"]["verdict"] == "pass"
    prompt = model.requests["rubric"][0]["messages"][1]["content"]
    assert "## Turn 1\nUser: hello\nAgent: echo: hello\n## Turn 2\nUser: my order id is A-1\n" in prompt
    assert "latency" not in prompt and "You are the support agent" not in prompt  # what was said, not how long it took
    assert done.returncode == 1


def test_an_http_target_receives_the_history_and_the_input(server, model, tmp_path):
    target = f"""  type: http
  url: "{server.base_url}/chat/completions"
  response_path: "choices[0].message\""""
    write(tmp_path, "s.yaml", suite(server, SCRIPTED.replace("""        evaluators: [{type: contains, path: content, reference: "A-1"}, {type: contains, name: polite, path: content, reference: please}]\n""", "")
                                    .replace("      - user: my order id is A-1", "      - my order id is A-1"), target=target))
    done, lines = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    bodies = model.requests["agent"]
    assert bodies[1] == {
        "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "echo: hello"},
                     {"role": "user", "content": "my order id is A-1"}],
        "input": {"shop": "Acme"},
    }
    turns = lines["c1"]["output"]["turns"]
    assert [turn["reply"] for turn in turns] == ["echo: hello", "echo: my order id is A-1", "echo: bye"]
    assert turns[0]["output"] == {"role": "assistant", "content": "echo: hello"}  # the service's own answer, kept


def test_a_command_target_receives_the_history_on_stdin_and_answers_with_reply(server, tmp_path):
    write(tmp_path, "agent.py", """
import json, sys
payload = json.load(sys.stdin)
said = [m["content"] for m in payload["messages"] if m["role"] == "user"]
print(json.dumps({"reply": f"{payload['input']['shop']} heard {len(payload['messages'])} messages, last: {said[-1]}"}))
""")
    target = f"""  type: command
  command: ["{sys.executable}", agent.py]"""
    cases = """  - id: c1
    input: {shop: Acme}
    turns: [hello, "order A-1", bye]"""
    write(tmp_path, "s.yaml", suite(server, cases, "  - {type: contains, path: content, reference: 'last: bye'}", target=target))
    done, lines = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    replies = [turn["reply"] for turn in lines["c1"]["output"]["turns"]]
    assert replies == ["Acme heard 1 messages, last: hello", "Acme heard 3 messages, last: order A-1", "Acme heard 5 messages, last: bye"]
    assert lines["c1"]["usage"]["latency_ms"] > 0


def test_a_command_target_answer_without_text_is_the_case_error_naming_the_turn(server, tmp_path):
    write(tmp_path, "agent.py", "import json, sys\npayload = json.load(sys.stdin)\nprint(json.dumps({'said': len(payload['messages'])}))\n")
    target = f"""  type: command
  command: ["{sys.executable}", agent.py]"""
    write(tmp_path, "s.yaml", suite(server, "  - {id: c1, turns: [hello]}", target=target))
    done, lines = run(tmp_path)
    assert done.returncode == 3
    assert lines["c1"]["verdict"] == "error"
    assert lines["c1"]["error"] == "turn 1: command target: the answer has no text `content` or `reply` (keys: said)"


def simulated(stop, max_turns=4, extra_case=""):
    return f"""  - id: refund
    input: {{shop: Acme, order: A-1, problem: broken kettle}}
    user:
      endpoint: customer
      persona: A polite customer.
      goal: Get a refund for order A-1.
      max_turns: {max_turns}
      stop: {stop}
{extra_case}"""


def refund_agent(body):
    said = last_user(body)
    return "Your refund is issued." if "refund" in said.lower() else "How can I help?"


def test_a_simulated_user_reaches_its_goal_by_a_regex_on_the_reply(tmp_path):
    model = Model(user_says=["Hello there.", "I want a refund for A-1."], agent=refund_agent)
    with LLMServer(chat=model) as server:
        evaluators = "  - {type: conversation, max_turns: 3}"
        write(tmp_path, "s.yaml", suite(server, simulated("{regex: 'refund is (issued|done)'}"), evaluators))
        done, lines = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    answer = lines["refund"]["output"]
    assert [(t["user"], t["reply"]) for t in answer["turns"]] == [
        ("Hello there.", "How can I help?"), ("I want a refund for A-1.", "Your refund is issued."),
    ]
    assert answer["stopped"] == "goal"
    assert answer["goal"] == {"reached": True, "rule": "regex", "matched": "refund is issued", "turn": 2}
    # the user model saw its persona, goal and scenario, and the agent's reply as the other side
    user_request = model.requests["user"][1]["messages"]
    assert "Get a refund for order A-1." in user_request[0]["content"] and "broken kettle" in user_request[0]["content"]
    assert user_request[2:] == [{"role": "assistant", "content": "Hello there."}, {"role": "user", "content": "How can I help?"}]
    assert [(s["kind"], s["turn"]) for s in answer["steps"]] == [("user", 1), ("model", 1), ("user", 2), ("model", 2)]
    usage = lines["refund"]["usage"]
    user_tokens = sum(s["usage"]["total_tokens"] for s in answer["steps"] if s["kind"] == "user")
    assert usage["simulated_user"]["total_tokens"] == user_tokens > 0
    assert usage["total_tokens"] == sum(s["usage"]["total_tokens"] for s in answer["steps"])
    result = by_name(lines["refund"])["conversation"]
    assert result["verdict"] == "pass" and result["hits"][:2] == ["turns taken: 2 (at most 3)", "goal reached in turn 2 (regex)"]


def test_a_simulated_user_stops_when_the_judge_says_the_goal_is_reached(tmp_path):
    model = Model(user_says=["Hi.", "Refund please.", "Thanks."], judge_says=["no", "Yes."], agent=refund_agent)
    with LLMServer(chat=model) as server:
        write(tmp_path, "s.yaml", suite(server, simulated("{judge: true}"), "  - {type: conversation}"))
        done, lines = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    answer = lines["refund"]["output"]
    assert len(answer["turns"]) == 2 and answer["goal"] == {"reached": True, "rule": "judge", "turn": 2}
    assert [s.get("reached") for s in answer["steps"] if s.get("purpose") == "judge"] == [False, True]
    asked = model.requests["judge"][1]["messages"][1]["content"]
    assert "Get a refund for order A-1." in asked and "User: Refund please.\nAgent: Your refund is issued." in asked
    assert model.requests["judge"][0]["model"] == "user-1" and model.requests["judge"][0]["temperature"] == 0


def test_a_simulated_user_stops_when_the_agent_calls_the_stop_tool(tmp_path):
    def agent(body):
        if body["messages"][-1]["role"] == "tool":
            return "Done: refund issued."
        if "refund" in last_user(body).lower():
            return calls(("issue_refund", {"order": "A-1"}))
        return "How can I help?"

    model = Model(user_says=["Hi.", "I need a refund."], agent=agent)
    with LLMServer(chat=model) as server:
        target = """  type: openai
  endpoint: agent
  tools:
    - name: issue_refund
      description: Refund an order.
      parameters: {type: object, properties: {order: {type: string}}}
      mock: [{result: {refunded: true}}]"""
        evaluators = "  - {type: tool_calls, scope: conversation, calls: [{name: issue_refund, arguments: {order: A-1}}]}"
        write(tmp_path, "s.yaml", suite(server, simulated("{tool: issue_refund}"), evaluators, target=target))
        done, lines = run(tmp_path)
    assert lines, done.stdout + done.stderr
    answer = lines["refund"]["output"]
    assert answer["goal"] == {"reached": True, "rule": "tool", "tool": "issue_refund", "turn": 2}
    assert answer["turns"][1]["reply"] == "Done: refund issued."
    assert answer["tool_calls"] == [{"name": "issue_refund", "arguments": {"order": "A-1"}, "result": {"refunded": True},
                                     "id": "call_1_issue_refund", "step": 1, "turn": 2}]
    assert [(s["kind"], s["turn"]) for s in answer["steps"]] == [("user", 1), ("model", 1), ("user", 2), ("model", 2), ("tool", 2), ("model", 2)]
    assert done.returncode == 0, (done.stdout, lines["refund"]["evaluator_results"])


def test_a_conversation_that_never_reaches_its_goal_stops_at_max_turns(tmp_path):
    model = Model(user_says=["Hi.", "Hello?", "Anyone?", "Hm."], agent=lambda body: "How can I help?")
    with LLMServer(chat=model) as server:
        write(tmp_path, "s.yaml", suite(server, simulated("{regex: refunded}", max_turns=3), "  - {type: conversation, max_turns: 2}"))
        done, lines = run(tmp_path)
    assert done.returncode == 1
    answer = lines["refund"]["output"]
    assert len(answer["turns"]) == 3 and answer["stopped"] == "max_turns"
    assert answer["goal"] == {"reached": False, "rule": None, "turn": None}
    assert len(model.requests["user"]) == 3  # no message is asked for after the last turn
    result = by_name(lines["refund"])["conversation"]
    assert result["misses"] == ["turns taken: 3 (at most 2)", "goal not reached (stopped: max_turns)"]
    assert result["score"] == 0.0 and result["verdict"] == "fail"


def test_a_simulated_user_saying_goal_reached_ends_the_conversation(tmp_path):
    model = Model(user_says=["Refund A-1 please."], agent=refund_agent)  # then GOAL_REACHED
    with LLMServer(chat=model) as server:
        write(tmp_path, "s.yaml", suite(server, simulated("{}"), "  - {type: conversation}"))
        done, lines = run(tmp_path)
    assert done.returncode == 0
    answer = lines["refund"]["output"]
    assert len(answer["turns"]) == 1 and answer["goal"] == {"reached": True, "rule": "user", "turn": 1}


def test_an_agent_asking_again_for_a_fact_the_user_gave_is_a_retention_miss_naming_turn_and_fact(server, model, tmp_path):
    model.agent = lambda body: "Thanks. What is your order number?" if "bye" not in last_user(body) else "Bye."
    cases = """  - id: c1
    input: {shop: Acme}
    turns: ["Hi, my order id is A-1.", "It arrived broken.", bye]"""
    evaluators = """  - {type: conversation, name: listed, facts: {order_id: A-1}}
  - {type: conversation, name: detected}"""
    write(tmp_path, "s.yaml", suite(server, cases, evaluators))
    done, lines = run(tmp_path)
    assert done.returncode == 1
    results = by_name(lines["c1"])
    assert results["listed"]["misses"] == ["turn 1: asked again for order_id (given in turn 1)", "turn 2: asked again for order_id (given in turn 1)"]
    assert results["listed"]["details"]["asked_again"] == [[1, "order_id", 1], [2, "order_id", 1]]
    assert results["detected"]["details"]["facts"] == {"order id": "A-1"}
    assert results["detected"]["misses"][0] == "turn 1: asked again for order id (given in turn 1)"


def test_a_rerun_replays_the_conversation_from_the_cache_without_a_request(tmp_path):
    model = Model(user_says=["Hello there.", "I want a refund.", "Hello there.", "I want a refund."], judge_says=["no", "yes", "no", "yes"], agent=refund_agent)
    with LLMServer(chat=model) as server:
        write(tmp_path, "s.yaml", suite(server, simulated("{judge: true}"), "  - {type: conversation}"))
        first, lines_1 = run(tmp_path)
        sent = len(server.received)
        second, lines_2 = run(tmp_path)
        assert len(server.received) == sent == 6  # user, agent, judge per turn; then nothing
    assert first.returncode == second.returncode == 0
    a, b = lines_1["refund"]["output"], lines_2["refund"]["output"]
    assert b["turns"] == a["turns"] and b["messages"] == a["messages"] and b["goal"] == a["goal"]
    assert all(step["usage"].get("cached") for step in b["steps"]) and lines_2["refund"]["usage"]["cached"] is True


def test_a_cases_file_user_naming_an_endpoint_not_under_models_is_a_load_error(server, tmp_path):
    write(tmp_path, "cases.jsonl", json.dumps({"id": "x", "user": {"endpoint": "custmer", "goal": "refund"}}) + "\n")
    write(tmp_path, "s.yaml", suite(server, "  []").replace("cases:\n  []", "cases: cases.jsonl"))
    done, lines = run(tmp_path)
    assert done.returncode == 2 and not lines
    assert "cases.jsonl:1" in done.stderr + done.stdout
    assert "user.endpoint 'custmer' is not defined under `models:` (known: agent, customer); did you mean 'customer'?" in done.stderr + done.stdout


def test_a_cases_file_turn_evaluator_that_runs_code_needs_trust(server, tmp_path):
    case = {"id": "x", "turns": [{"user": "hi", "evaluators": [{"type": "code_judge", "command": ["python", "j.py"]}]}]}
    write(tmp_path, "cases.jsonl", json.dumps(case) + "\n")
    write(tmp_path, "s.yaml", suite(server, "  []").replace("cases:\n  []", "cases: cases.jsonl"))
    done, _ = run(tmp_path)
    assert done.returncode == 2
    assert "case 'x': a `code_judge` evaluator in a cases file runs a program or code" in done.stderr + done.stdout


def test_a_recorded_conversation_is_scored_by_scope_and_a_single_answer_whole(tmp_path):
    recorded = {"content": "Bye.", "messages": [], "tool_calls": [], "steps": [], "stopped": "answered", "usage": None,
                "turns": [{"user": "hi", "reply": "Hello! How can I help?", "tool_calls": []},
                          {"user": "bye", "reply": "Bye.", "tool_calls": []}]}
    cases = [{"id": "talk", "output": recorded}, {"id": "single", "output": {"content": "Hello! Bye."}}]
    write(tmp_path, "cases.jsonl", "".join(json.dumps(case) + "\n" for case in cases))
    write(tmp_path, "s.yaml", """
name: recorded
evaluators:
  - {type: contains, name: hello, scope: turn, path: content, reference: Hello}
  - {type: contains, name: bye, path: content, reference: Bye}
  - {type: conversation, max_turns: 1}
cases: cases.jsonl
""")
    done, lines = run(tmp_path)
    talk, single = by_name(lines["talk"]), by_name(lines["single"])
    assert talk["hello"]["score"] == 0.5 and talk["hello"]["misses"] == ["turn 2: 'Hello'"]
    assert talk["bye"]["verdict"] == "pass"
    assert talk["conversation"]["misses"] == ["turns taken: 2 (at most 1)"]
    assert single["hello"]["verdict"] == "pass" and single["hello"]["hits"] == ["'Hello'"]  # a single answer: judged whole
    assert single["conversation"]["misses"] == ["the answer is not a conversation (it has no `turns`)"]
    assert done.returncode == 1


def test_a_tool_loop_limit_in_a_turn_ends_the_conversation_and_fails_the_case(server, model, tmp_path):
    model.agent = lambda body: calls(("lookup", {"q": "again"}))  # never answers without a call
    target = """  type: openai
  endpoint: agent
  tools: [{name: lookup, parameters: {type: object}, mock: [{result: nothing}]}]
  loop: {max_steps: 2}"""
    cases = """  - id: c1
    turns:
      - hello
      - user: still there?
        evaluators: [{type: contains, path: content, reference: yes}]"""
    write(tmp_path, "s.yaml", suite(server, cases, "  - {type: conversation}", target=target))
    done, lines = run(tmp_path)
    assert done.returncode == 1
    line = lines["c1"]
    assert line["verdict"] == "fail" and len(line["output"]["turns"]) == 1
    assert line["output"]["stopped"] == "max_steps" and line["output"]["turns"][0]["stopped"] == "max_steps"
    results = by_name(line)
    assert results["turn 2: contains"]["misses"] == ["turn 2 was never answered (the conversation ended after 1: max_steps)"]
    assert results["agent_limits"]["misses"][0].startswith("the tool loop reached its max_steps of 2 model calls")
    assert len(model.requests["agent"]) == 2


def test_a_python_target_cannot_hold_a_conversation_and_the_case_error_says_so(server, tmp_path):
    write(tmp_path, "agent.py", "def answer(question):\n    return 'hi'\n")
    write(tmp_path, "s.yaml", suite(server, "  - {id: c1, turns: [hello]}", target="  type: python\n  function: agent:answer"))
    done, lines = run(tmp_path)
    assert done.returncode == 3
    assert lines["c1"]["error"] == ("a conversation (`turns:` or `user:`) needs a model target (openai, anthropic, bedrock, azure_openai, gemini) or an http or "
                                    "command target, which answer turn by turn; a python target cannot hold one")


def test_a_goal_judge_that_answers_neither_yes_nor_no_is_the_case_error_naming_the_turn(tmp_path):
    model = Model(user_says=["Hi.", "Refund please."], judge_says=["no", "Perhaps."], agent=refund_agent)
    with LLMServer(chat=model) as server:
        write(tmp_path, "s.yaml", suite(server, simulated("{judge: customer}"), "  - {type: conversation}"))
        done, lines = run(tmp_path)
    assert done.returncode == 3
    assert lines["refund"]["error"] == "turn 2: goal judge: the reply is neither yes nor no: 'Perhaps.'"
    assert len(model.requests["judge"]) == 2
    assert lines["refund"]["usage"]["simulated_user"]["total_tokens"] > 0


def test_a_conversations_latency_adds_up_every_step_tool_steps_too():
    """A tool step has a time but no usage of its own: the case's latency still counts it, as a
    single answer's tool loop does, and each turn's usage counts its own tool steps."""
    from agenteval.conversations.transcript import summed_usage

    steps = [
        {"kind": "model", "turn": 1, "latency_ms": 12.5, "usage": {"latency_ms": 12.5, "input_tokens": 10, "output_tokens": 2, "total_tokens": 12}},
        {"kind": "tool", "turn": 1, "name": "lookup", "latency_ms": 40.25},
        {"kind": "model", "turn": 1, "latency_ms": 7.0, "usage": {"latency_ms": 7.0, "input_tokens": 20, "output_tokens": 3, "total_tokens": 23}},
        {"kind": "user", "turn": 2, "latency_ms": 3.0, "usage": {"latency_ms": 3.0, "input_tokens": 5, "output_tokens": 1, "total_tokens": 6}},
    ]
    total = summed_usage(steps)
    assert total["latency_ms"] == 62.75 and total["total_tokens"] == 41
    assert total["simulated_user"] == {"latency_ms": 3.0, "input_tokens": 5, "output_tokens": 1, "total_tokens": 6}
    assert summed_usage([{"kind": "tool", "latency_ms": 4.0}]) == {"latency_ms": 4.0}
    assert summed_usage([]) is None
