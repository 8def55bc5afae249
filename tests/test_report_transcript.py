"""The HTML report's chat transcript of a trajectory (agenteval.reports.transcript), shape by shape."""

from agenteval.reports.html import clip
from agenteval.reports.transcript import TURNS_KEPT, transcript


def test_chat_messages_of_each_vendor_become_turns_with_their_calls_and_results():
    openai = {"messages": [
        {"role": "user", "content": "where is A-1?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"id\": \"A-1\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
        {"role": "assistant", "content": "It has shipped."},
    ]}
    assert transcript(openai, clip) == [
        ["user", "where is A-1?", None, None], ["assistant", None, [["lookup", {"id": "A-1"}, None]], None],
        ["tool", None, None, [["lookup", "shipped"]]], ["assistant", "It has shipped.", None, None],
    ]
    gemini = [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]}]
    assert transcript(gemini, clip) == [["user", "hi", None, None], ["model", None, [["f", {"a": 1}, None]], None]]


def test_a_list_of_calls_becomes_one_turn_per_call_with_its_result():
    responses = [{"type": "function_call", "name": "f", "arguments": "{\"a\": 1}", "call_id": "x"},
                 {"type": "function_call_output", "call_id": "x", "output": "ok"}]
    assert transcript(responses, clip) == [["call", None, [["f", {"a": 1}, None]], [["f", "ok"]]]]
    plain = {"steps": [{"name": "search", "arguments": "not json"}]}
    [[role, _, [[name, arguments, problem]], results]] = transcript(plain, clip)
    assert (role, name, arguments, results) == ("call", "search", None, None) and "JSON" in problem


def test_answers_that_are_not_trajectories_have_no_transcript():
    assert transcript([{"name": "Widget", "qty": 2}], clip) is None  # line items, not calls
    assert transcript({"content": "Paris"}, clip) is None
    assert transcript({"messages": "not a list"}, clip) is None
    assert transcript("text", clip) is None and transcript(None, clip) is None


def test_long_transcripts_and_values_are_cut():
    messages = [{"role": "user", "content": "x" * 5000}] * (TURNS_KEPT + 5)
    turns = transcript(messages, clip)
    assert len(turns) == TURNS_KEPT + 1 and turns[-1] == ["note", "… and 5 more turns", None, None]
    assert len(turns[0][1]) == 1000 and turns[0][1].endswith("…")
    [[_, _, [[_, arguments, _]], _]] = transcript([{"name": "f", "arguments": {"blob": "y" * 5000}}], clip)
    assert list(arguments) == ["$clip"] and len(arguments["$clip"]) == 600
