"""Targets and judges that misbehave as real processes: the run stays correct, bounded and clean.

Each test starts real child processes (often through the real CLI) that do what a broken or
hostile program does: print too much, hang, leave children holding their pipes, nest JSON
deeply, print a banner or one answer line too many. Timeouts are short so the file stays fast.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from conftest import read_jsonl, run_cli, write, MEASURE

from agenteval.evaluators import EvalContext
from agenteval.evaluators.code_judge import CodeJudge
from agenteval.process import Processes, interrupt
from agenteval.suite.models import Case
from agenteval.targets import Answer, CommandTarget, TargetRun


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie counts as ended: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def gone_soon(pid: int, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def wait_for_pid(path: Path, within: float = 15.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path.name} was never written")


@pytest.fixture
def pid_files(tmp_path):
    """Pid files the test's programs write; any process still alive at the end is killed by its pid."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        if path.exists() and path.read_text().strip():
            pid = int(path.read_text())
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def target(tmp_path: Path, script: str, **options) -> CommandTarget:
    write(tmp_path, "t.py", script)
    return CommandTarget.model_validate({"type": "command", "command": ["python", "t.py"], **options})


def ask(command: CommandTarget, tmp_path: Path, case_input: object = None) -> Answer:
    """The target's answer to one case, as a run gets it."""
    return command.answer(Case(id="c0", input=case_input, expected=None), TargetRun(tmp_path, Processes()))


def code_judge(tmp_path: Path, script: str, **options) -> CodeJudge:
    write(tmp_path, "judge.py", script)
    return CodeJudge.model_validate({"type": "code_judge", "command": ["python", "judge.py"], **options})


def context(tmp_path: Path, case_id: str = "c0", processes: Processes | None = None, **values) -> EvalContext:
    return EvalContext(
        case_id, values.get("input"), values.get("expected", 1), values.get("output", 1), {}, tmp_path,
        processes or Processes(),
    )


def summary_of(results: Path) -> dict:
    return json.loads(results.with_name(results.stem + ".summary.json").read_text())


# --- protocol jsonl: an answer never lands on the wrong case (FAULTS D1) ---------------------------

BANNER_JUDGE = """
import sys, json
print("loading model weights...", flush=True)
for line in sys.stdin:
    p = json.loads(line)
    print(json.dumps({"score": float(p["candidate_answer"] == p["reference_answer"]), "reasoning": "for " + p["case_id"]}), flush=True)
"""


def test_jsonl_banner_before_the_first_answer_is_not_an_answer(tmp_path):
    write(tmp_path, "judge.py", BANNER_JUDGE)
    lines = [{"id": f"c{i}", "expected": i, "output": 999 if i == 2 else i} for i in range(6)]
    write(tmp_path, "cases.jsonl", "\n".join(json.dumps(line) for line in lines))
    write(tmp_path, "suite.yaml", """
        name: d1
        evaluators:
          - {name: judge, type: code_judge, command: [python, judge.py], protocol: jsonl}
        cases: cases.jsonl
    """)
    done = run_cli("run", "suite.yaml", "-o", "r.jsonl", "-q", "--workers", "1", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    got = {r["case_id"]: (r["verdict"], r["evaluator_results"][0]["reasoning"]) for r in read_jsonl(tmp_path / "r.jsonl")}
    assert got == {f"c{i}": ("fail" if i == 2 else "pass", f"for c{i}") for i in range(6)}


TWO_LINES_ONCE = """
import json, os, sys
for line in sys.stdin:
    p = json.loads(line)
    answer = json.dumps({"score": 1, "reasoning": "for " + p["case_id"], "details": {"pid": os.getpid()}})
    extra = "\\n" + json.dumps({"score": 0, "reasoning": "one line too many"}) if p["case_id"] == "c1" else ""
    sys.stdout.write(answer + extra + "\\n")
    sys.stdout.flush()
"""


def test_jsonl_extra_answer_line_is_a_protocol_error_not_the_next_answer(tmp_path):
    write(tmp_path, "judge.py", TWO_LINES_ONCE)
    write(tmp_path, "cases.jsonl", "\n".join(json.dumps({"id": f"c{i}", "expected": 1, "output": 1}) for i in range(5)))
    write(tmp_path, "suite.yaml", """
        name: extra
        evaluators: [{name: judge, type: code_judge, command: [python, judge.py], protocol: jsonl}]
        cases: cases.jsonl
    """)
    done = run_cli("run", "suite.yaml", "-o", "r.jsonl", "-q", "--workers", "1", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    results = {r["case_id"]: r["evaluator_results"][0] for r in read_jsonl(tmp_path / "r.jsonl")}
    assert results["c2"]["verdict"] == "error"
    assert results["c2"]["error"] == (
        "judge printed an answer line nobody asked for, after its answer for case 'c1': "
        "'{\"score\": 0, \"reasoning\": \"one line too many\"}'; protocol jsonl wants exactly one answer line "
        "per payload line, so the judge was restarted"
    )
    for case in ("c0", "c1", "c3", "c4"):
        assert (results[case]["verdict"], results[case]["reasoning"]) == ("pass", f"for {case}")
    assert results["c0"]["details"]["pid"] == results["c1"]["details"]["pid"] != results["c3"]["details"]["pid"]


def test_judge_helper_echoes_case_id_in_every_jsonl_answer_even_a_failed_one(tmp_path):
    write(tmp_path, "judge.py", """
        from agenteval.judge import run_judge
        def judge(payload):
            if payload["case_id"] == "c":
                return {"score": 1, "details": {"tags": {"a"}}}
            return payload["candidate_answer"] == payload["reference_answer"]
        run_judge(judge)
    """)
    payloads = [
        {"case_id": "a", "candidate_answer": 1, "reference_answer": 1}, {"case_id": "b", "candidate_answer": 1, "reference_answer": 2},
        {"case_id": "c", "candidate_answer": 1, "reference_answer": 1},
    ]
    done = subprocess.run(
        [sys.executable, "judge.py"], cwd=tmp_path, check=False, capture_output=True, text=True, timeout=30,
        input="".join(json.dumps(p) + "\n" for p in payloads), env={**os.environ, "AGENTEVAL_JUDGE_PROTOCOL": "jsonl"},
    )
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"score": 1.0, "case_id": "a"}, {"score": 0.0, "case_id": "b"},
        {"score": 0.0, "verdict": "error", "error": "the judge's result is not JSON: Object of type set is not JSON serializable", "case_id": "c"},
    ]


# --- interruption: nothing the run started outlives it (FAULTS D3) ---------------------------------

HANG = """
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(600)
"""


def test_an_interrupt_arriving_while_a_child_starts_waits_until_the_child_is_tracked(tmp_path, monkeypatch):
    """SIGTERM landing inside Popen, after the fork (a loaded machine can keep the run there while the
    child starts), is raised once the child is tracked: the run's cleanup then kills it."""
    write(tmp_path, "hang.py", HANG)
    real_popen = subprocess.Popen

    def popen_then_signal(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # a real signal: its handler runs here, before Popen would return
        time.sleep(0.05)
        return proc

    previous = signal.signal(signal.SIGTERM, interrupt)
    processes = Processes()
    try:
        monkeypatch.setattr(subprocess, "Popen", popen_then_signal)
        with pytest.raises(KeyboardInterrupt):
            processes.start([sys.executable, "hang.py", "hung.pid"], tmp_path)
        monkeypatch.undo()
        hung = wait_for_pid(tmp_path / "hung.pid")
        assert alive(hung)
        processes.stop_all()
        assert gone_soon(hung), f"process {hung} survived the interrupted start"
    finally:
        signal.signal(signal.SIGTERM, previous)
    with pytest.raises(KeyboardInterrupt):  # outside a start, the handler raises at once
        interrupt(signal.SIGTERM, None)


@pytest.mark.parametrize(
    "part",
    [
        "target: {type: command, command: [python, hang.py, hung.pid], timeout: 600}\nevaluators: [{type: field_accuracy, fields: [{path: a}]}]",
        "evaluators: [{type: code_judge, command: [python, hang.py, hung.pid], timeout: 600}]",
        "evaluators: [{type: code_judge, command: [python, hang.py, hung.pid], timeout: 600, protocol: jsonl}]",
    ],
    ids=["command-target", "code-judge", "code-judge-jsonl"],
)
def test_sigterm_with_one_worker_kills_the_running_process(tmp_path, pid_files, part):
    write(tmp_path, "hang.py", HANG)
    write(tmp_path, "cases.jsonl", '{"id": "c0", "input": {}, "expected": {"a": 1}, "output": {"a": 1}}\n')
    (tmp_path / "suite.yaml").write_text(f"name: d3\n{part}\ncases: cases.jsonl\n")
    pid_files.append(tmp_path / "hung.pid")
    run = subprocess.Popen(
        [sys.executable, "-m", "agenteval", "run", "suite.yaml", "-o", "r.jsonl", "-q", "--workers", "1"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        hung = wait_for_pid(tmp_path / "hung.pid")
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=10)
    finally:
        run.kill()
    assert run.returncode == 130, stderr
    assert gone_soon(hung), f"process {hung} survived the interrupted run"
    assert summary_of(tmp_path / "r.jsonl")["interrupted"] is True


# --- timeouts bound the whole exchange (FAULTS D4) -------------------------------------------------

def test_jsonl_payload_to_a_judge_that_never_reads_stdin_times_out(tmp_path):
    evaluator = code_judge(tmp_path, "import time\nwhile True: time.sleep(100)", protocol="jsonl", timeout=1)
    started = time.monotonic()
    result = evaluator.evaluate(context(tmp_path, input="z" * (1 << 20)))
    evaluator.close()
    assert time.monotonic() - started < 3
    assert (result.verdict, result.error) == ("error", "judge timed out after 1s")


ESCAPES_THEN = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
open("escaped.pid", "w").write(str(child.pid))
{then}
"""


@pytest.mark.parametrize(
    ("then", "timeout", "output", "error", "within"),
    [
        # D4b: the target hangs; after the timeout, reading what is left of its pipes is bounded too
        ("time.sleep(30)", 1, None, "target timed out after 1s", 3),
        # D15: the target answers and exits at once; its escaped child must not hold the answer
        ('sys.stdin.read(); print(\'{"a": 1}\')', 5, {"a": 1}, None, 2.5),
    ],
    ids=["hangs", "answers"],
)
def test_an_escaped_grandchild_holding_stdout_does_not_hold_the_case(tmp_path, pid_files, then, timeout, output, error, within):
    pid_files.append(tmp_path / "escaped.pid")
    command = target(tmp_path, ESCAPES_THEN.format(then=then), timeout=timeout)
    started = time.monotonic()
    answer = ask(command, tmp_path, {})
    assert time.monotonic() - started < within
    assert (answer.output, answer.error) == (output, error)


# --- the answer counts once the process itself exits (FAULTS D15) ----------------------------------

LEAVES_A_CHILD = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
open("child.pid", "w").write(str(child.pid))
sys.stdin.read()
print('{"score": 1, "a": 1}')
"""


@pytest.mark.parametrize("kind", ["target", "judge"])
def test_answer_counts_at_exit_and_the_child_left_in_its_group_is_killed(tmp_path, pid_files, kind):
    pid_files.append(tmp_path / "child.pid")
    started = time.monotonic()
    if kind == "target":
        answer = ask(target(tmp_path, LEAVES_A_CHILD, timeout=5), tmp_path, {})
        assert (answer.output, answer.error) == ({"score": 1, "a": 1}, None)
    else:
        result = code_judge(tmp_path, LEAVES_A_CHILD, timeout=5).evaluate(context(tmp_path))
        assert (result.verdict, result.error) == ("pass", None)
    assert time.monotonic() - started < 2.5
    assert gone_soon(int((tmp_path / "child.pid").read_text()))


def test_target_that_never_reads_its_large_stdin_still_answers(tmp_path):
    answer = ask(target(tmp_path, 'print(\'{"a": 1}\')', timeout=5), tmp_path, "z" * (5 << 20))
    assert (answer.output, answer.error) == ({"a": 1}, None)


# --- bad output is that case's error, never the run's (FAULTS D5, row 3) ---------------------------

def test_deeply_nested_answers_are_case_errors_and_the_run_goes_on(tmp_path):
    write(tmp_path, "t.py", """
        import json, sys
        q = json.load(sys.stdin)["q"]
        depth = {2: 100000, 3: 300}.get(q)
        print("[" * depth + "]" * depth if depth else json.dumps({"a": q}))
    """)
    write(tmp_path, "cases.jsonl", "\n".join(json.dumps({"id": f"c{i}", "input": {"q": i}, "expected": {"a": i}}) for i in range(6)))
    write(tmp_path, "suite.yaml", """
        name: d5
        target: {type: command, command: [python, t.py]}
        evaluators: [{type: field_accuracy, fields: [{path: a}]}]
        cases: cases.jsonl
    """)
    done = run_cli("run", "suite.yaml", "-o", "r.jsonl", "-q", "--workers", "1", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    results = {r["case_id"]: (r["verdict"], r["error"]) for r in read_jsonl(tmp_path / "r.jsonl")}
    assert results == {
        "c0": ("pass", None), "c1": ("pass", None), "c4": ("pass", None), "c5": ("pass", None),
        "c2": ("error", "target printed JSON nested too deeply to parse"),
        "c3": ("error", "target printed JSON nested deeper than 200 levels"),
    }
    assert summary_of(tmp_path / "r.jsonl")["counts"]["errored"] == 2


def test_answer_with_nan_reads_big_integers_as_without_it(tmp_path):
    """With NaN the answer goes through Python's json, which would keep a 100-bit integer that
    the results writer (orjson) cannot write; it is read as orjson reads it, as a float."""
    big = "123456789012345678901234567890"
    answer = ask(target(tmp_path, f"print('{{\"a\": {big}, \"b\": NaN}}')"), tmp_path, {})
    assert answer.output["a"] == orjson.loads(big)
    assert isinstance(answer.output["a"], float) and math.isnan(answer.output["b"])


FLOOD = """
import json, sys
def flood():
    chunk = "x" * (1 << 20)
    for _ in range(100):
        sys.stdout.write(chunk)
    sys.stdout.flush()
"""


def test_hundred_megabyte_outputs_are_capped_and_memory_stays_bounded(tmp_path):
    write(tmp_path, "t.py", FLOOD + """
q = json.load(sys.stdin)["q"]
flood() if q == 0 else print(json.dumps({"a": q}))
""")
    write(tmp_path, "judge.py", FLOOD + """
for line in sys.stdin:
    flood() if json.loads(line)["case_id"] == "c1" else print(json.dumps({"score": 1}), flush=True)
""")
    write(tmp_path, "judge1.py", FLOOD + """
flood() if json.load(sys.stdin)["case_id"] == "c2" else print(json.dumps({"score": 1}))
""")
    write(tmp_path, "cases.jsonl", "\n".join(json.dumps({"id": f"c{i}", "input": {"q": i}, "expected": {"a": i}}) for i in range(4)))
    write(tmp_path, "suite.yaml", """
        name: flood
        target: {type: command, command: [python, t.py]}
        evaluators:
          - {name: jsonl, type: code_judge, command: [python, judge.py], protocol: jsonl}
          - {name: once, type: code_judge, command: [python, judge1.py]}
        cases: cases.jsonl
    """)
    run = subprocess.Popen(
        [*MEASURE, str(tmp_path / "peak"), sys.executable, "-m", "agenteval", "run", "suite.yaml", "-o", "r.jsonl", "-q", "--workers", "1"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(run.pid, 0)
    run.returncode = os.waitstatus_to_exitcode(status)
    assert run.returncode == 3
    results = {r["case_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert results["c0"]["error"] == "target output larger than 16 MiB"
    assert [(e["name"], e["error"]) for e in results["c1"]["evaluator_results"]] == [
        ("jsonl", "judge output larger than 16 MiB"), ("once", None),
    ]
    assert [(e["name"], e["error"]) for e in results["c2"]["evaluator_results"]] == [
        ("jsonl", None), ("once", "judge output larger than 16 MiB"),
    ]
    assert results["c3"]["verdict"] == "pass"
    peak_mb = float((tmp_path / "peak").read_text())
    assert peak_mb < 150, f"peak RSS {peak_mb:.0f} MB"


def test_max_output_mb_sets_the_cap(tmp_path):
    command = target(tmp_path, "import sys\nsys.stdout.write('x' * int(sys.stdin.read()))", max_output_mb=0.5)
    small, large = ask(command, tmp_path, 400_000), ask(command, tmp_path, 600_000)
    assert (len(small.output), small.error) == (400_000, None)
    assert large.error == "target output larger than 0.5 MiB"


# --- environment and secrets ----------------------------------------------------------------------

def test_targets_inherit_the_environment_and_env_values_never_appear_in_errors(tmp_path):
    write(tmp_path, "t.py", """
        import json, os, sys
        q = json.load(sys.stdin)["q"]
        if q == 0:
            print(json.dumps({"inherited": os.environ.get("AGENTEVAL_TEST_TOKEN"), "a": 0}))
        else:
            sys.exit("auth failed for key " + os.environ["SUITE_KEY"])
    """)
    write(tmp_path, "cases.jsonl", "\n".join(json.dumps({"id": f"c{i}", "input": {"q": i}, "expected": {"a": i}}) for i in range(2)))
    write(tmp_path, "suite.yaml", """
        name: env
        target: {type: command, command: [python, t.py], env: {SUITE_KEY: sk-live-SUITEKEY, DEBUG: "1"}}
        evaluators: [{type: field_accuracy, fields: [{path: a}]}]
        cases: cases.jsonl
    """)
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "run", "suite.yaml", "-o", "r.jsonl", "-q", "--workers", "1"],
        cwd=tmp_path, check=False, capture_output=True, text=True, timeout=60, env={**os.environ, "AGENTEVAL_TEST_TOKEN": "hunter2"},
    )
    results = {r["case_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert results["c0"]["output"] == {"inherited": "hunter2", "a": 0}
    assert results["c1"]["error"] == "target exited with code 1; stderr: auth failed for key ***"
    assert "sk-live-SUITEKEY" not in done.stderr


def test_a_wrong_env_value_is_reported_without_showing_it(tmp_path):
    write(tmp_path, "suite.yaml", """
        name: env
        target: {type: command, command: [python, t.py], env: {API_KEY: 123456789}}
        evaluators: [{type: field_accuracy, fields: [{path: a}]}]
        cases: [{id: a, input: {}, expected: {a: 1}}]
    """)
    done = run_cli("validate", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "must be a string (quote it in YAML), not int" in done.stderr
    assert "123456789" not in done.stderr


# --- start-up cost of the judge helper ------------------------------------------------------------

def test_importing_the_judge_helper_loads_nothing_a_bare_interpreter_lacks():
    done = subprocess.run(
        [sys.executable, "-c", "import sys; before = set(sys.modules); import agenteval.judge; print(sorted(set(sys.modules) - before))"],
        check=False, capture_output=True, text=True, timeout=30,
    )
    assert done.stdout.strip() == "['agenteval', 'agenteval.judge']", done.stderr
