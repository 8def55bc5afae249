"""Run a promptfoo tests generator once, at import, when the user asks (`--run-generators`).

promptfoo reads `tests: file://gen.py:make_tests` (default function `generate_tests`) and
`tests: file://gen.js[:name]` by calling the code, with the test's `config` when it has one; the
import does the same once, in a child process bounded in time and output (its process group is
killed on timeout), and writes what it returns as cases. A failure is one line: `why(...)`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

GENERATOR_TIMEOUT_S = 60.0
MAX_OUTPUT_MB = 16.0

# The node side: load the file (CommonJS, else as an ES module), pick the export, call it with the
# config when it is a function (awaited), print the JSON of what it gives.
NODE_RUNNER = r"""
const { pathToFileURL } = require('url');
const [file, name, configText] = process.argv.slice(1);
(async () => {
  let mod;
  try { mod = require(file); } catch (e) {
    if (e && (e.code === 'ERR_REQUIRE_ESM' || e instanceof SyntaxError)) mod = await import(pathToFileURL(file).href);
    else throw e;
  }
  if (name) mod = mod[name];
  else if (mod && typeof mod !== 'function' && !Array.isArray(mod) && mod.default !== undefined) mod = mod.default;
  const config = configText ? JSON.parse(configText) : undefined;
  const result = typeof mod === 'function' ? await mod(config) : await mod;
  process.stdout.write(JSON.stringify(result === undefined ? null : result));
})().catch((e) => { process.stderr.write(String((e && e.stack) || e)); process.exit(1); });
"""


def generator_command(file: Path, function: str | None, config: Any) -> list[str] | str:
    """The argv that runs the generator, or why it cannot run here (a `.ts` file; no `node`)."""
    config_text = "" if config is None else json.dumps(config)
    file = file.resolve()  # node's require() reads a bare name as a package
    if file.suffix == ".py":
        return [sys.executable, "-m", "agenteval.importers.promptfoo_generator", str(file), function or "generate_tests", config_text]
    if file.suffix == ".ts":
        return "a TypeScript generator needs a TypeScript runtime, which the import does not run: compile it to .js, or write its tests out"
    node = shutil.which("node")
    if node is None:
        return "a JavaScript generator runs under `node`, which is not installed (install Node.js, or write its tests out)"
    return [node, "-e", NODE_RUNNER, str(file), function or "", config_text]


def run_generator(argv: list[str], folder: Path, timeout: float = GENERATOR_TIMEOUT_S) -> tuple[list[Any], None] | tuple[None, str]:
    """(the tests it returned, None), or (None, why): it failed, hung, printed too much or returned
    something other than a JSON list."""
    from agenteval.process import Processes, decode_json, max_output_bytes, stderr_tail

    result = Processes().run(argv, b"", timeout, folder, max_output=max_output_bytes(MAX_OUTPUT_MB))
    lines = [line.strip() for line in result.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if re.match(r"^[\w.]*(Error|Exception)\b", line)), lines[-1] if lines else "")
    if result.returncode and not result.timed_out and result.output_limit is None and said:
        return None, f"it failed: {said[:500]}"  # the error itself, not its traceback
    failure = result.failure("it", timeout)
    if failure is not None:
        return None, failure
    try:
        data = decode_json(result.stdout)
    except ValueError as exc:
        return None, f"it printed no JSON ({exc})" + stderr_tail(result.stderr)
    if not isinstance(data, list):
        return None, f"it returned {_kind(data)}, not a list of tests"
    return data, None


def _kind(value: Any) -> str:
    return {type(None): "nothing", dict: "an object", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def main(argv: list[str]) -> int:
    """The Python side: call the function with the config (if any), print its JSON."""
    from agenteval.importers.promptfoo_python import script_function

    file, name, config_text = argv
    function = script_function(file, name, kind="tests")
    result = function(json.loads(config_text)) if config_text else function()
    if inspect.isawaitable(result):
        result = asyncio.run(_awaited(result))
    try:
        sys.stdout.write(json.dumps(result, allow_nan=False))
    except (TypeError, ValueError) as exc:
        sys.stderr.write(f"{name} returned a value that is not JSON: {exc}\n")
        return 1
    return 0


async def _awaited(value: Any) -> Any:
    return await value


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
