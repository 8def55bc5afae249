"""A command target that runs a promptfoo script provider unchanged, with promptfoo's calling convention.

The importer writes `command: [python, -m, agenteval.importers.promptfoo_provider, --prompt=..., --config=...,
--file, provider.py, --function=call_api]` (or `--exec WORDS...` for an `exec:` provider). The case
input (promptfoo's vars) comes on stdin; the prompt template is rendered with them, then
`call_api(prompt, options, context)` is called with `options = {"config": ...}` and
`context = {"vars": ..., "prompt": ...}`, or the `exec:` command is run with the prompt, the options
and the context as its last three arguments. Its `output` (or the command's stdout) is printed as
the answer; an `error` is this case's error (exit 1, the message on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import subprocess
import sys
from typing import Any

from agenteval.importers.promptfoo_python import script_function


def _prompt(template: str, variables: Any) -> str:
    """The rendered prompt: a one-message prompt is its text; several messages are their JSON, as promptfoo passes them."""
    from jinja2.sandbox import SandboxedEnvironment

    messages = json.loads(template)
    env = SandboxedEnvironment()
    rendered = [{**m, "content": env.from_string(m["content"]).render(input=variables) if isinstance(m.get("content"), str) else m.get("content")}
                for m in messages]
    if len(rendered) == 1 and rendered[0].get("role") == "user" and isinstance(rendered[0]["content"], str):
        return rendered[0]["content"]
    return json.dumps(rendered)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="agenteval.importers.promptfoo_provider")
    parser.add_argument("--prompt")
    parser.add_argument("--config", default="{}")
    parser.add_argument("--file")
    parser.add_argument("--function", default="call_api")
    parser.add_argument("--exec", nargs=argparse.REMAINDER, dest="command")
    args = parser.parse_args(argv)
    variables = json.loads(sys.stdin.read() or "null")
    if args.prompt is not None:
        prompt = _prompt(args.prompt, variables)
    else:  # no prompt in the config: the input itself
        prompt = variables if isinstance(variables, str) else json.dumps(variables)
    options = {"config": json.loads(args.config)}
    context = {"vars": variables if isinstance(variables, dict) else {}, "prompt": {"raw": prompt}}
    if args.command:
        done = subprocess.run([*args.command, prompt, json.dumps(options), json.dumps(context)], capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stderr[-2000:] or f"exit {done.returncode}")
            return 1
        print(json.dumps(done.stdout.strip()))
        return 0
    result = script_function(args.file, args.function, kind="provider")(prompt, options, context)
    if inspect.isawaitable(result):
        result = asyncio.run(result)
    if not isinstance(result, dict):
        sys.stderr.write(f"{args.file}: {args.function} returned {type(result).__name__}; promptfoo expects a dict with `output`\n")
        return 1
    if result.get("error"):
        sys.stderr.write(f"{args.function}: {result['error']}\n")
        return 1
    if result.get("output") is None:  # promptfoo fails such a test with "No output"
        sys.stderr.write(f"{args.function} returned no output\n")
        return 1
    print(json.dumps(result.get("output")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
