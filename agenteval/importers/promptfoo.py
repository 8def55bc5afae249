"""promptfoo's `promptfooconfig.yaml` as agenteval suites.

`providers` become the suite's `targets:` and `prompts` its `prompts:`, so each case runs once
per (provider, prompt) pair as in promptfoo (`_cell_groups`). `vars` become each case's `input`,
`defaultTest` becomes the suite's `defaults:` (its assertions the suite's evaluators), `env` a
`.env` file beside the suite, and each `assert` becomes the built-in evaluator that checks the same
thing (a `not-` form: its opposite, or the check with `negate`). promptfoo's `--model-outputs`
file becomes a predictions file; a Python or `exec:` script provider a command target running it as
promptfoo does (agenteval.importers.promptfoo_provider). What has no equivalent (JavaScript, inline Python of several lines, a JavaScript `transform`) is listed with its line, never dropped silently. A few mappings
change a detail of the meaning; those are listed as notes.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.importers import (
    ImportFailed, Imported, Names, Parsed, Skipped, Source, canonical_json, slug, strip_file_prefix,
)
from agenteval.suite.yaml_nodes import KeyPath

OPENAI_URL = "${OPENAI_BASE_URL:-https://api.openai.com/v1}"
GRADER_MODEL = "gpt-4.1-mini"
EMBEDDING_MODEL = "text-embedding-3-large"

# promptfoo provider prefixes that speak the OpenAI chat-completions protocol: (base_url, key variable)
COMPATIBLE: dict[str, tuple[str, str | None]] = {
    "openai": (OPENAI_URL, "OPENAI_API_KEY"),
    "azure": ("${AZURE_OPENAI_BASE_URL}", "AZURE_OPENAI_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY"),
    "perplexity": ("https://api.perplexity.ai", "PERPLEXITY_API_KEY"),
    "cerebras": ("https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
    "fireworks": ("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "ollama": ("${OLLAMA_BASE_URL:-http://localhost:11434}/v1", None),
    "localai": ("${LOCALAI_BASE_URL:-http://localhost:8080}/v1", None),
}
# provider `config` keys that mean the same on an agenteval openai target
SAME_CONFIG = ("temperature", "max_tokens", "top_p", "seed", "stop", "tools", "tool_choice", "response_format")

MODEL_TARGETS = ("openai", "anthropic")  # targets that take messages (and `prompts:`) and answer `{content, ...}`
# ... and on the anthropic target (the Messages API has no seed or response_format)
ANTHROPIC_SAME_CONFIG = ("temperature", "max_tokens", "top_p", "stop", "tools", "tool_choice")

TOP_KEYS_HANDLED = {"description", "prompts", "providers", "tests", "defaultTest", "assertionTemplates", "env"}
TOP_KEYS_WHY = {
    "scenarios": "scenarios (test groups crossed with configs) have no agenteval form; write their tests out",
    "outputPath": "agenteval writes results with `run -o`",
    "sharing": "agenteval has no result sharing service",
    "evaluateOptions": "set concurrency and repeats on `agenteval run` (--workers, --repeat)",
    "commandLineOptions": "give the options to `agenteval run`",
    "derivedMetrics": "agenteval computes no metrics from other metrics",
    "extensions": "promptfoo extension hooks have no agenteval form",
    "nunjucksFilters": "custom template filters have no agenteval form",
    "redteam": "red-team generation has no agenteval form",
    "tracing": "use `agenteval run --otel`",
}


@dataclass
class _Defaults:
    """A config's `defaultTest`: `vars` (all of them, and the names that go to the suite's
    `defaults.input`: not the lists, which make one case per value), assertions, metadata, threshold."""

    vars: dict[str, Any] = field(default_factory=dict)
    asserts: list[tuple[Parsed, KeyPath, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    threshold: float | None = None
    shared: set[str] = field(default_factory=set)
    transform: str | None = None  # options.transform: JavaScript every assertion reads the answer through
    transform_vars: str | None = None  # options.transformVars: JavaScript over the vars, run at import
    transform_vars_at: tuple[Parsed, KeyPath] | None = None  # where it is written, for the one line about it
    per_case: bool = False  # vars and metadata merged into each case instead (AgentV's promptfoo-shaped files)

    def suite_key(self) -> dict[str, Any]:
        """The suite's `defaults:` (empty: none)."""
        out: dict[str, Any] = {}
        if self.per_case:
            return out
        if self.shared:
            out["input"] = {key: value for key, value in self.vars.items() if key in self.shared}
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        if self.threshold is not None:
            out["threshold"] = self.threshold
        return out


# characters str.splitlines() breaks a line at: a .env value holding one (other than \n, escaped) cannot be written
_LINE_BREAKS = set("\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# headers that carry credentials, and values shaped like a key whatever their header
_SECRET_HEADER = re.compile(r"(?i)auth|api[-_]?key|token|secret|passw|cookie|credential")
_KEY_SHAPED = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}|\b(?:xox[abpr]|gh[pousr])_?[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16}\b")


class PromptfooImporter:
    """One import: the config, its Source, and what was produced so far."""

    def __init__(self, config: Parsed, source: Source, out_dir: Path | None = None, dialect: str = "promptfoo") -> None:
        self.config = config
        self.source = source
        self.out_dir = out_dir
        self.dialect = dialect
        self.result = Imported(config_name=config.name)
        self.uses_grader = False
        self.uses_embeddings = False
        self.runs_code = False
        self.text_path: str | None = None
        self.case_ids: set[str] = set()
        self.said: set[tuple[str, KeyPath, str]] = set()  # lines given once for several cases
        self.grader: dict[str, Any] | None = None  # defaultTest.options.provider, as `models.grader`
        self.embeddings: dict[str, Any] | None = None  # ... its `embedding`, as `models.embeddings`
        self.extra_assertion: Callable[[dict[str, Any], Parsed, KeyPath, Names], dict[str, Any] | None] | None = None
        self.test_transform: str | None = None  # the current test's own options.transform (JavaScript)
        self.default_transform: str | None = None  # defaultTest.options.transform
        self.announce: Callable[[str], None] | None = None  # set: tests generators run (`--run-generators`), each announced first

    # -- listing --------------------------------------------------------------------------------
    def skip(self, parsed: Parsed, path: KeyPath, why: str, note: bool = False) -> None:
        self.result.skipped.append(Skipped(parsed.name, parsed.line(path), parsed.keys.get(path[:3], _key(path)), why, note))

    def done(self, key: str) -> None:
        self.result.converted.add(key)

    # -- the whole config -----------------------------------------------------------------------
    def run(self) -> Imported:
        data = self.config.data
        for key in data:
            if key not in TOP_KEYS_HANDLED and not str(key).startswith("x-"):
                why = TOP_KEYS_WHY.get(key, "not an agenteval suite key")
                self.skip(self.config, (key,), why)
        prompts = self.prompts()
        targets = _script_cells(self.targets(), prompts)
        defaults = self.default_test()
        self.env()
        tests = self.tests()
        recorded = bool(tests) and all("providerOutput" in test for _, test, _ in tests)
        if recorded:
            for index, (label, _target) in enumerate(targets):
                self.skip(self.config, ("providers", index) if "providers" in data else ("providers",),
                          f"provider {label!r} not called: every test carries `providerOutput`, so the suite scores those recorded answers", note=True)
            targets = [("recorded", {"type": "recorded"})]
        self.text_path = "content" if any(t.get("type") in MODEL_TARGETS for _, t in targets) else None

        suite_names = Names()
        suite_evaluators = self.assertions(defaults.asserts, suite_names, per_case=False)
        cases: list[dict[str, Any]] = []
        for parsed, test, path in tests:
            cases.extend(self.case(len(cases), parsed, test, path, defaults, suite_names))
        self.result.cases = cases
        if not suite_evaluators and any(not case.get("evaluators") for case in cases):
            suite_evaluators = [{"name": "answered", "type": "length", **({"path": self.text_path} if self.text_path else {}), "min": 0,
                                 "criterion": {"name": "answered", "description": "An answer came back (a promptfoo test without assertions passes then)."}}]
            self.skip(self.config, ("tests",), "some tests have no assertion: the suite checks only that an answer came back "
                      "(evaluator `answered`), as promptfoo passes such a test", note=True)

        description = data.get("description") if isinstance(data.get("description"), str) else None
        base_name = slug(description or Path(self.config.name).stem, "promptfoo-suite")
        groups = _cell_groups(prompts, targets)
        for file_name, cells in groups.items():
            suite: dict[str, Any] = {"name": base_name if file_name == "suite.yaml" else f"{base_name}-{file_name[6:-5]}"}
            if description:
                suite["description"] = description
            suite.update(cells)
            models = self.models()
            if models:
                suite["models"] = models
            if self.runs_code:
                suite["trust_cases"] = True
            if self.result.env:
                suite["env_file"] = ".env"
            if defaults.suite_key():
                suite["defaults"] = defaults.suite_key()
            suite["evaluators"] = suite_evaluators
            suite["cases"] = "cases.jsonl"
            self.result.suites[file_name] = suite
        return self.result

    def models(self) -> dict[str, Any]:
        models: dict[str, Any] = {}
        if self.uses_grader:
            models["grader"] = self.grader or {"base_url": OPENAI_URL, "model": GRADER_MODEL, "api_key_env": "OPENAI_API_KEY", "temperature": 0}
        if self.uses_embeddings:
            models["embeddings"] = self.embeddings or {"base_url": OPENAI_URL, "model": EMBEDDING_MODEL, "api_key_env": "OPENAI_API_KEY"}
        return models

    # -- prompts --------------------------------------------------------------------------------
    def prompts(self) -> list[tuple[str, list[dict[str, Any]] | None]]:
        """(label, chat messages) per prompt; None messages: the target's default (the input)."""
        data = self.config.data
        raw = data.get("prompts")
        if raw is None:
            return [("default", None)]
        self.done("prompts")
        items = raw if isinstance(raw, list) else [raw]
        found: list[tuple[str, list[dict[str, Any]] | None]] = []
        where: dict[int, KeyPath] = {}  # the key path of each prompt found, by its place in `found`
        for index, item in enumerate(items):
            path: KeyPath = ("prompts", index) if isinstance(raw, list) else ("prompts",)
            label, labelled = f"prompt{index + 1}", False
            if isinstance(item, dict):
                labelled = bool(item.get("label"))
                label = str(item.get("label") or item.get("id") or label)
                item = item.get("raw", item.get("id"))
            if not isinstance(item, str):
                self.skip(self.config, path, "a prompt that is not text or a file is not converted")
                continue
            if item.startswith("file://"):
                names = self.source.glob(item)
                for name in names:
                    found.extend(self.prompt_file(name, path, label, labelled and len(names) == 1))
            else:
                found.append((label, self.chat(item, path)))
            where.update({place: path for place in range(len(where), len(found))})
        usable = []
        for place, (label, messages) in enumerate(found):
            unknown = _unknown_filters(messages or [])
            variables = _env_reads(messages or [])
            if variables:
                shown = ", ".join(f"{{{{env.{name}}}}}" for name in variables)
                self.skip(self.config, where[place], f"prompt {label!r} reads the environment ({shown}); agenteval's prompts read the "
                          "case input only, so a secret never goes into requests and results unseen: not carried (give the value as a var)")
            elif unknown:
                self.skip(self.config, where[place], f"prompt {label!r} uses the template filter{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(unknown)}, which agenteval's templates lack; not carried")
            else:
                if "/" in label:
                    self.skip(self.config, where[place], f"prompt {label!r} is named {label.replace('/', '-')!r}: a cell's label ends "
                              "with `/PROMPT`, so a prompt's name cannot hold one (a target's can)", note=True)
                usable.append((label, messages))
        return usable or [("default", None)]

    def prompt_file(self, ref: str, path: KeyPath, label: str, labelled: bool = False) -> list[tuple[str, list[dict[str, Any]] | None]]:
        """The prompts of a file, named by the prompt's own `label` (`labelled`: it names this one
        file), else by the file (a messages file: `label`)."""
        name = strip_file_prefix(ref)
        suffix = Path(name.split(":")[0]).suffix.lower()
        if suffix in (".py", ".js", ".ts", ".mjs", ".cjs"):
            self.skip(self.config, path, f"a prompt function ({name}) runs code agenteval does not call; write its messages out")
            return []
        why = self.source.missing(name)
        if why is not None:
            self.skip(self.config, path, f"prompt file {why}")
            return []
        if suffix in (".json", ".yaml", ".yml"):
            parsed = self.source.parsed(name)
            if _is_messages(parsed.data):
                return [(label, [self.message(m) for m in parsed.data])]
            self.skip(self.config, path, f"{name} holds no list of chat messages")
            return []
        text = self.source.text(name)
        parts = [part.strip("\n") for part in re.split(r"^---\s*$", text, flags=re.M)] if suffix in (".txt", "") else [text]
        parts = [part for part in parts if part.strip()]
        stem = label if labelled else Path(name).stem
        return [(f"{stem}-{i + 1}" if len(parts) > 1 else stem, self.chat(part, path)) for i, part in enumerate(parts)]

    def chat(self, text: str, path: KeyPath) -> list[dict[str, Any]]:
        stripped = text.strip()
        if stripped.startswith("["):
            try:
                messages = json.loads(stripped)
            except ValueError:
                messages = None
            if _is_messages(messages):
                return [self.message(m) for m in messages]
        return [{"role": "user", "content": self.template(text)}]

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        content = message.get("content")
        return {"role": message["role"], "content": self.template(content) if isinstance(content, str) else content}

    def template(self, text: str) -> str:
        """promptfoo's `{{ topic }}` is agenteval's `{{ input.topic }}`: see `rewrite_template`."""
        return rewrite_template(text)

    # -- providers -> targets -------------------------------------------------------------------
    def targets(self) -> list[tuple[str, dict[str, Any]]]:
        data = self.config.data
        raw = data.get("providers", data.get("targets"))
        key = "providers" if "providers" in data else "targets"
        if raw is None:
            return [("recorded", {"type": "recorded"})]
        self.done("providers")
        items = raw if isinstance(raw, list) else [raw]
        found = []
        for index, item in enumerate(items):
            path: KeyPath = (key, index) if isinstance(raw, list) else (key,)
            converted = self.target(item, path)
            if converted is not None:
                found.append(converted)
        if not found:
            return [("recorded", {"type": "recorded"})]
        return found

    def target(self, item: Any, path: KeyPath) -> tuple[str, dict[str, Any]] | None:
        config: dict[str, Any] = {}
        label = None
        if isinstance(item, dict):
            provider_id = item.get("id")
            config = item.get("config") or {}
            label = item.get("label")
            for key in item:
                if key not in ("id", "config", "label"):
                    self.skip(self.config, path + (key,), f"provider key `{key}` has no agenteval target form")
        else:
            provider_id = item
        if not isinstance(provider_id, str):
            self.skip(self.config, path, "a provider without a string id (a function or a file) is not converted; answers come from --predictions")
            return None
        if provider_id.startswith(("http://", "https://")) or provider_id == "http" or provider_id == "https":
            return self.http_target(provider_id, config, path, label)
        prefix, _, rest = provider_id.partition(":")
        if prefix in COMPATIBLE and rest:
            kind, _, model = rest.partition(":")
            if prefix == "openai" and kind in ("responses", "assistant", "realtime", "embedding", "embeddings", "image", "moderation"):
                self.skip(self.config, path, f"provider {provider_id!r}: only chat completions have an agenteval target; answers come from --predictions")
                return None
            if not model or kind not in ("chat", "completion"):
                model = rest
            base_url, key_env = COMPATIBLE[prefix]
            target: dict[str, Any] = {"type": "openai", "base_url": base_url, "model": model}
            if key_env:
                target["api_key_env"] = key_env
            self.provider_options(target, config, SAME_CONFIG, "/v1", path)
            return (str(label or provider_id), target)
        if prefix == "anthropic" and rest:
            return self.anthropic_target(provider_id, rest, config, path, label)
        if provider_id.startswith(("file://", "python:", "exec:")):
            return self.script_target(provider_id, config, path, label)
        self.skip(self.config, path, f"provider {provider_id!r} is not OpenAI-compatible, Anthropic or http; answers come from --predictions or recorded outputs")
        return None

    def script_target(self, provider_id: str, config: dict[str, Any], path: KeyPath, label: str | None) -> tuple[str, dict[str, Any]] | None:
        """A script provider (`file://provider.py[:function]`, `python:provider.py`, `exec:COMMAND`) as a
        command target running it through agenteval.importers.promptfoo_provider, with promptfoo's
        calling convention; the prompt is put into each target's command in `run` (`_script_cells`)."""
        import shlex

        config = dict(config)
        for key, value in list(config.items()):  # a literal key: to .env, read back by the command target as `${NAME}`
            if isinstance(value, str) and (_SECRET_HEADER.search(str(key)) or _KEY_SHAPED.search(value)) and "${" not in value:
                name = self.secret(f"{label or 'script'}_{key}", value, path + ("config", key))
                if name is None:
                    del config[key]
                else:
                    config[key] = f"${{{name}}}"
        adapter = ["python", "-m", "agenteval.importers.promptfoo_provider", "--config=" + json.dumps(config, separators=(",", ":"))]
        if provider_id.startswith("exec:"):
            words = shlex.split(provider_id[len("exec:"):])
            files = [word for word in words if not word.startswith("-") and ("/" in word or re.search(r"\.(py|sh|js|rb|ts|mjs|cjs)$", word))]
            for word in files:
                why = self.source.missing(word)
                if why is not None:
                    self.skip(self.config, path, f"provider {provider_id!r}: {why}")
                    return None
            command = [*adapter, "--exec", *[self.rebased(word) if word in files else word for word in words]]
            shown = provider_id
        else:
            ref = provider_id[len("python:"):] if provider_id.startswith("python:") else strip_file_prefix(provider_id)
            file_name, _, function = ref.partition(":")
            if not file_name.endswith(".py"):
                self.skip(self.config, path, f"provider {provider_id!r}: a JavaScript provider runs code agenteval does not run; "
                          "answers come from --predictions or recorded outputs")
                return None
            why = self.source.missing(file_name)
            if why is not None:
                self.skip(self.config, path, f"provider {provider_id!r}: {why}")
                return None
            command = [*adapter, "--file", self.rebased(file_name), f"--function={function or 'call_api'}"]
            shown = file_name
        self.skip(self.config, path, f"provider {provider_id!r} runs {shown} as promptfoo does (prompt, options, context) through a "
                  "`command` target: it is code from the config's folder, so read it before running the suite", note=True)
        self.done("providers:script")
        return (str(label or provider_id), {"type": "command", "command": command, "__script": True})

    def anthropic_target(
        self, provider_id: str, rest: str, config: dict[str, Any], path: KeyPath, label: str | None
    ) -> tuple[str, dict[str, Any]] | None:
        """`anthropic:messages:MODEL` (or `anthropic:MODEL`): agenteval's anthropic target."""
        kind, _, model = rest.partition(":")
        if kind != "messages" or not model:
            if kind in ("completion", "vertex", "bedrock"):
                self.skip(self.config, path, f"provider {provider_id!r}: only the Messages API has an agenteval target; answers come from --predictions")
                return None
            model = rest
        target: dict[str, Any] = {"type": "anthropic", "model": model}
        self.provider_options(target, config, ANTHROPIC_SAME_CONFIG, "", path)
        return (str(label or provider_id), target)

    def provider_options(self, target: dict[str, Any], config: dict[str, Any], same: tuple[str, ...], api_path: str, path: KeyPath) -> None:
        """A model provider's `config` onto its target: the keys that mean the same, its API host
        (`apiHost` without a scheme gets https:// and the API's `api_path`) and key variable; the rest listed."""
        for key, value in config.items():
            if isinstance(value, str) and value.startswith("file://") and key in same:
                why = self.source.missing(value)
                if why is not None:
                    self.skip(self.config, path + ("config", key), f"provider option `{key}`: {why}")
                    continue
                value = self.source.parsed(value).data if Path(strip_file_prefix(value)).suffix.lower() in (".json", ".yaml", ".yml") \
                    else self.source.text(value)
            if key in same:
                target[key] = value
            elif key in ("apiBaseUrl", "apiHost"):
                target["base_url"] = value if str(value).startswith("http") else f"https://{value}{api_path}"
            elif key == "apiKeyEnvar":
                target["api_key_env"] = value
            elif key == "apiKey" and isinstance(value, str):
                named = re.fullmatch(r"\{\{\s*env\.(\w+)\s*\}\}|\$\{(\w+)\}", value.strip())
                name = (named.group(1) or named.group(2)) if named else self.secret(f"{target.get('model', 'model')}_API_KEY", value, path + ("config", key))
                if name is not None:
                    target["api_key_env"] = name
            else:
                self.skip(self.config, path + ("config", key), f"provider option `{key}` has no agenteval target form")

    def http_target(self, provider_id: str, config: dict[str, Any], path: KeyPath, label: str | None) -> tuple[str, dict[str, Any]]:
        url = config.get("url", provider_id)
        target: dict[str, Any] = {"type": "http", "url": url}
        for key, value in config.items():
            if key == "url":
                continue
            if key == "method":
                target["method"] = str(value).upper()
            elif key == "headers" and isinstance(value, dict):
                target["headers"] = self.headers(value, str(label or "http"), path + ("config", key))
            elif key == "transformResponse" and isinstance(value, str) and re.fullmatch(r"json(\.[A-Za-z_]\w*)+", value.strip()):
                target["response_path"] = value.strip()[len("json."):]
            elif key == "body":
                self.skip(self.config, path + ("config", key), "the http target sends the case input as the JSON body; a body template is not carried: "
                          "give each case the body's fields as vars")
            elif key == "timeout" and isinstance(value, (int, float)):
                target["timeout"] = value / 1000
            else:
                self.skip(self.config, path + ("config", key), f"http provider option `{key}` has no agenteval target form")
        return (str(label or "http"), target)

    def headers(self, headers: dict[Any, Any], label: str, path: KeyPath) -> dict[str, str]:
        """Header values with `{{env.NAME}}` as `${NAME}`; a literal secret (a credential header, or a
        value shaped like a key) goes to the private `.env` and the header says `${NAME}`."""
        out: dict[str, str] = {}
        for name, raw in headers.items():
            value = _env_template(str(raw))
            if _SECRET_HEADER.search(str(name)) or _KEY_SHAPED.search(value):
                scheme, _, rest = value.partition(" ") if re.match(r"(?i)(bearer|basic|token|bot)\s", value) else ("", "", value)
                if "${" not in rest and rest.strip():
                    variable = self.secret(f"{label}_{name}", rest.strip(), path + (name,))
                    if variable is None:
                        continue
                    value = f"{scheme} ${{{variable}}}" if scheme else f"${{{variable}}}"
            out[str(name)] = value
        return out

    def secret(self, hint: str, value: str, path: KeyPath) -> str | None:
        """Put a literal secret into the private `.env` under a new name (taken from `hint`) and
        return the name, for the suite to say `${NAME}`; None (listed) when a .env line cannot hold it."""
        if _LINE_BREAKS & set(value) or "\n" in value:
            self.skip(self.config, path, "a literal secret holding a line break is not carried (it would have to be written into the suite); "
                      "set it in the environment and write `${NAME}`")
            return None
        base = re.sub(r"[^A-Za-z0-9]+", "_", hint).strip("_").upper() or "SECRET"
        if base[0].isdigit():
            base = f"_{base}"
        name, n = base, 2
        while name in self.result.env and self.result.env[name] != value:
            name, n = f"{base}_{n}", n + 1
        self.result.env[name] = value
        self.skip(self.config, path, f"a literal secret: written to .env beside the suite as {name} (mode 0600), never into the suite, "
                  "which names the variable", note=True)
        return name

    # -- defaultTest ----------------------------------------------------------------------------
    def default_test(self) -> _Defaults:
        """`defaultTest` (inline or a file) as the suite's `defaults:` and evaluators. AgentV's
        promptfoo-shaped files keep input and expected in vars, which are taken apart per case, so
        there the vars and metadata are merged into each case instead."""
        raw = self.config.data.get("defaultTest")
        if raw is None:
            return _Defaults()
        parsed, base = self.config, ("defaultTest",)
        if isinstance(raw, str):
            why = self.source.missing(raw)
            if why is not None:
                self.skip(self.config, base, f"defaultTest file {why}")
                return _Defaults()
            parsed, base, raw = self.source.parsed(raw), (), self.source.parsed(raw).data
        if not isinstance(raw, dict):
            self.skip(parsed, base, "defaultTest is not a mapping")
            return _Defaults()
        self.done("defaultTest")
        defaults = _Defaults(
            vars=self.vars(raw.get("vars"), parsed, base + ("vars",)) if "vars" in raw else {},
            asserts=[(parsed, base + ("assert", i), a) for i, a in enumerate(raw.get("assert") or [])],
            metadata=raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {},
        )
        defaults.per_case = self.dialect != "promptfoo"
        if not defaults.per_case:
            defaults.shared = {key for key, value in defaults.vars.items() if not isinstance(value, _Each)}
        threshold = raw.get("threshold")
        if _unit(threshold) and not defaults.per_case:
            defaults.threshold = threshold
            self.done("threshold")
        for key in raw:
            if key not in ("vars", "assert", "metadata", "options") and not (key == "threshold" and defaults.threshold is not None):
                self.skip(parsed, base + (key,), self.test_key_why(key))
        for key, value in (raw.get("options") or {}).items():
            if key == "provider" and parsed is self.config:
                self.grader_provider(value, base + ("options", key))
            elif key in ("transform", "postprocess", "transformVars") and self.inline_code(value, parsed, base + ("options", key)):
                if key == "transformVars":
                    defaults.transform_vars, defaults.transform_vars_at = value, (parsed, base + ("options", key))
                else:
                    defaults.transform = self.default_transform = value
            elif key not in ("transform", "postprocess", "transformVars"):
                self.skip(parsed, base + ("options", key), _option_why(key, value))
        return defaults

    def inline_code(self, value: Any, parsed: Parsed, path: KeyPath, then: str = "") -> bool:
        """Whether a `transform` / `transformVars` is inline JavaScript the suite can run; else listed
        (`then`: what is lost with it)."""
        if isinstance(value, str) and value.strip() and not value.startswith("file://"):
            self.done(str(path[-1]))
            return True
        why = "a transform from a file is not carried: write its code inline (it runs as JavaScript)" if isinstance(value, str) and value.strip() \
            else "a transform that is not JavaScript code is not carried"
        self.skip(parsed, path, why + then)
        return False

    def grader_provider(self, value: Any, path: KeyPath) -> None:
        """`defaultTest.options.provider`, the model that grades: the suite's `models.grader` when it
        is OpenAI-compatible (its `apiBaseUrl`, model and key), else listed."""
        split = isinstance(value, dict) and "id" not in value  # {text: ..., embedding: ...}
        if split and "embedding" in value:
            embedding = value["embedding"]
            model = re.fullmatch(r"openai:embeddings?:(.+)", embedding if isinstance(embedding, str) else "")
            if model:
                self.embeddings = {"base_url": OPENAI_URL, "model": model.group(1), "api_key_env": "OPENAI_API_KEY"}
            else:
                self.skip(self.config, path + ("embedding",), "the embeddings model is the suite's `models.embeddings`, an OpenAI-compatible "
                          "one named `openai:embedding:MODEL`; this one is not carried")
        item = value.get("text") if split else value
        if item is None:
            return
        converted = self.target(item, path + (("text",) if split else ())) if isinstance(item, (str, dict)) else None
        if converted is None or converted[1].get("type") != "openai":
            if converted is not None:
                self.skip(self.config, path, "the grader is the suite's `models.grader`, an OpenAI-compatible model; this provider is not one")
            return
        target = converted[1]
        self.grader = {key: target[key] for key in ("base_url", "model", "api_key_env", "temperature", "max_tokens", "top_p", "seed")
                       if key in target}
        self.grader.setdefault("temperature", 0)
        self.done("grader")

    # -- env ------------------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        """`env:` values, for a `.env` file beside the suite (agenteval.importers.output writes it,
        mode 0600). Values are never put into a message: only names are."""
        raw = self.config.data.get("env")
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.skip(self.config, ("env",), "`env` is not a mapping of names to values")
            return {}
        values: dict[str, str] = {}
        for name, value in raw.items():
            path: KeyPath = ("env", name)
            if not isinstance(name, str) or not _ENV_NAME.match(name):
                self.skip(self.config, path, "not a variable name a .env file can hold (letters, digits and _, not first a digit)")
            elif value is None or isinstance(value, (dict, list)):
                self.skip(self.config, path, "only a text, number or true/false value can go into a .env file")
            elif _LINE_BREAKS & set(text := _text(value)):
                self.skip(self.config, path, "the value holds a line break other than \\n, which a .env line cannot hold")
            else:
                values[name] = text
        self.result.env.update(values)
        if values:
            self.done("env")
            names = ", ".join(values)
            self.skip(self.config, ("env",), f"{names} written to .env beside the suite (mode 0600), which the suite reads "
                      "(`env_file: .env`); a variable the environment already has keeps its own value, where promptfoo's "
                      "`env` wins: to let these win, run with `--env-file DIR/.env --env-override`", note=True)
        return values

    # -- tests ----------------------------------------------------------------------------------
    def tests(self) -> list[tuple[Parsed, dict[str, Any], KeyPath]]:
        raw = self.config.data.get("tests")
        if raw is None:
            return []
        self.done("tests")
        found: list[tuple[Parsed, dict[str, Any], KeyPath]] = []
        items = raw if isinstance(raw, list) else [raw]
        for index, item in enumerate(items):
            path: KeyPath = ("tests", index) if isinstance(raw, list) else ("tests",)
            if isinstance(item, dict) and isinstance(item.get("path"), str):  # promptfoo's {path, config}: a file, or a generator given `config`
                found.extend(self.test_files(item["path"], path, item.get("config")))
            elif isinstance(item, dict):
                found.append((self.config, item, path))
            elif isinstance(item, str):
                found.extend(self.test_files(item, path))
            else:
                self.skip(self.config, path, "a test that is neither a mapping nor a file is not converted")
        return found

    def test_files(self, ref: str, path: KeyPath, config: Any = None) -> list[tuple[Parsed, dict[str, Any], KeyPath]]:
        if ref.startswith(("http://", "https://")):
            self.skip(self.config, path, "tests from a URL (a Google Sheet) are not fetched; download them as CSV")
            return []
        code = re.fullmatch(r"(?:file://)?(.+\.(?:py|js|ts|mjs|cjs))(?::(\w+))?", ref)
        if code:
            return self.generated_tests(code.group(1), code.group(2), config, path)
        names = self.source.glob(ref)
        if not names:
            self.skip(self.config, path, f"tests file {strip_file_prefix(ref)} not found")
            return []
        found: list[tuple[Parsed, dict[str, Any], KeyPath]] = []
        for name in names:
            why = self.source.missing(name)
            if why is not None:
                self.skip(self.config, path, f"tests file {why}")
                continue
            suffix = Path(name).suffix.lower()
            if suffix in (".csv", ".tsv"):
                found.extend(self.csv_tests(name))
            elif suffix == ".jsonl":
                shown = Parsed(name, None, {})
                for line, value in self.source.jsonl(name):
                    shown.lines[(line,)] = line
                    if isinstance(value, dict):
                        found.append((shown, value, (line,)))
                    else:
                        self.skip(shown, (line,), "a test line that is not an object is not converted")
            elif suffix in (".yaml", ".yml", ".json"):
                parsed = self.source.parsed(name)
                values = parsed.data if isinstance(parsed.data, list) else [parsed.data]
                for index, value in enumerate(values):
                    where: KeyPath = (index,) if isinstance(parsed.data, list) else ()
                    if isinstance(value, dict):
                        found.append((parsed, value, where))
                    else:
                        self.skip(parsed, where, "a test that is not a mapping is not converted")
            else:
                self.skip(self.config, path, f"tests file {name}: only YAML, JSON, JSONL, CSV and TSV files are read")
        return found

    def generated_tests(self, name: str, function: str | None, config: Any, path: KeyPath) -> list[tuple[Parsed, dict[str, Any], KeyPath]]:
        """Tests made by code (`file://gen.py:make_tests`, `file://gen.js`): run once, here, only
        when the user asked (`--run-generators`), as promptfoo calls them; else listed."""
        from agenteval.importers import promptfoo_generator as generator

        shown = f"{name}:{function}" if function else name
        if self.announce is None:
            self.skip(self.config, path, f"tests made by code ({shown}) are not run unless you ask (a downloaded config's code runs only "
                      "when you choose to): import with --run-generators to run it once now and write its tests as cases")
            return []
        why = self.source.missing(name)
        if why is not None:
            self.skip(self.config, path, f"tests generator {why}")
            return []
        argv = generator.generator_command(self.source.path(name), function, config)
        if isinstance(argv, str):
            self.skip(self.config, path, f"tests made by code ({shown}): {argv}")
            return []
        timeout = generator.GENERATOR_TIMEOUT_S
        self.announce(f"running the tests generator {shown} (code from the config's folder; --run-generators), at most {timeout:g}s")
        tests, failure = generator.run_generator(argv, self.source.folder, timeout)
        if tests is None:
            self.skip(self.config, path, f"tests generator {shown} gave no tests: {failure}")
            return []
        made = Parsed(shown, tests, {})
        found: list[tuple[Parsed, dict[str, Any], KeyPath]] = []
        for index, test in enumerate(tests):
            if isinstance(test, dict):
                found.append((made, test, (index,)))
            else:
                self.skip(made, (index,), "a generated test that is not an object is not converted")
        self.skip(self.config, path, f"{len(found)} test{'s' if len(found) != 1 else ''} made by running {shown} once, at import; "
                  "run the import again to make them anew", note=True)
        return found

    def csv_tests(self, name: str) -> list[tuple[Parsed, dict[str, Any], KeyPath]]:
        shown = Parsed(name, None, {})
        found: list[tuple[Parsed, dict[str, Any], KeyPath]] = []
        for line, row in self.source.csv(name):
            shown.lines[(line,)] = line
            test: dict[str, Any] = {"vars": {}, "assert": []}
            for column, value in row.items():
                if not column.startswith("__"):
                    test["vars"][column] = value
                elif column.startswith("__expected"):
                    if value.strip():
                        shown.keys[(line, "assert", len(test["assert"]))] = column
                        test["assert"].append(_assertion_from_string(value.strip()))
                elif column == "__description":
                    test["description"] = value
                elif column == "__metric" and value:
                    test["__metric"] = value
                elif column.startswith("__metadata:"):
                    test.setdefault("metadata", {})[column[len("__metadata:"):]] = value
                elif value:
                    self.skip(shown, (line,), f"column {column} has no agenteval form")
            metric = test.pop("__metric", None)
            if metric:
                for item in test["assert"]:
                    item["metric"] = metric
            found.append((shown, test, (line,)))
        return found

    def vars(self, raw: Any, parsed: Parsed, path: KeyPath) -> dict[str, Any]:
        if isinstance(raw, str) and raw.startswith("file://"):
            why = self.source.missing(raw)
            if why is not None:
                self.skip(parsed, path, f"vars file {why}")
                return {}
            raw = self.source.parsed(raw).data
        if not isinstance(raw, dict):
            self.skip(parsed, path, "vars that are not a mapping are not converted")
            return {}
        values: dict[str, Any] = {}
        for key, value in raw.items():
            if isinstance(value, str) and value.startswith("file://"):
                name = strip_file_prefix(value)
                suffix = Path(name).suffix.lower()
                if suffix in (".py", ".js", ".ts", ".mjs", ".cjs"):
                    self.skip(parsed, path + (key,), f"a var computed by code ({name}) is not run; give its value")
                    continue
                why = self.source.missing(name)
                if why is not None:
                    self.skip(parsed, path + (key,), f"var file {why}")
                    continue
                values[key] = self.source.parsed(name).data if suffix in (".json", ".yaml", ".yml") else self.source.text(name)
            elif isinstance(value, list) and self.dialect == "promptfoo" and value and isinstance(value[0], str):
                values[key] = _Each(value)  # one case per value, as promptfoo expands a list of strings (any other list is one value)
            else:
                values[key] = value
        return values

    def test_key_why(self, key: str) -> str:
        return {
            "threshold": "a case `threshold` is a number from 0 to 1",
            "provider": "a per-test provider has no agenteval form: every case runs with each of the suite's targets",
            "providers": "a per-test provider has no agenteval form: every case runs with each of the suite's targets",
            "prompts": "per-test prompts have no agenteval form: every case runs with each of the suite's prompts",
        }.get(key, f"test key `{key}` has no agenteval form")

    def case(
        self, index: int, parsed: Parsed, test: dict[str, Any], path: KeyPath, defaults: _Defaults, suite_names: Names,
    ) -> list[dict[str, Any]]:
        """The case of a test; several when a var holds a list or a glob (one per value, as promptfoo does)."""
        own = self.vars(test["vars"], parsed, path + ("vars",)) if "vars" in test else {}
        all_vars = {**defaults.vars, **own}
        listed = [key for key, value in all_vars.items() if isinstance(value, _Each)]
        combos = itertools.product(*(all_vars[key] for key in listed)) if listed else [()]
        cases = []
        for combo in combos:
            case_vars = {**all_vars, **dict(zip(listed, combo))}
            cases.append(self.one_case(index + len(cases), parsed, test, path, case_vars, own, defaults, suite_names, first=not cases))
        return cases

    def transformed_vars(self, code: str, case_vars: dict[str, Any], parsed: Parsed, path: KeyPath) -> dict[str, Any] | None:
        """promptfoo's `transformVars`, run once at import in the embedded JavaScript engine (no file,
        network or process access; bounded): its object is the case's vars. None (listed) when it fails."""
        from agenteval.evaluators.js_source import JavaScriptFailed, call_function
        from agenteval.extras import MissingDependency

        def once(why: str, note: bool = False) -> None:  # one line per place and reason, however many cases it made
            if (parsed.name, path, why) not in self.said:
                self.said.add((parsed.name, path, why))
                self.skip(parsed, path, why, note=note)

        try:
            value = call_function(code, ("vars", "context"), [case_vars, {"vars": case_vars, "prompt": None}])
        except (JavaScriptFailed, MissingDependency) as exc:
            once(f"`transformVars` could not run at import ({exc}); the cases keep the vars as written")
            return None
        if not isinstance(value, dict):
            once(f"`transformVars` returned {'null' if value is None else type(value).__name__}, not an object of vars; the cases keep the vars as written")
            return None
        fixed = ": the clock and random numbers it reads are fixed at that moment (promptfoo reads them anew each eval)" \
            if re.search(r"\bDate\b|Math\.random|crypto\.", code) else ""
        once("`transformVars` ran once per case at import, in the embedded JavaScript engine (no file, network or process access); "
             "each case's input is the vars it returned" + fixed, note=True)
        return value

    def case_id(self, test: dict[str, Any], index: int) -> str:
        """A test's `description` (one line), else its number (`001`); made unique."""
        described = test.get("description")
        base = " ".join(described.split()) if isinstance(described, str) and described.strip() and self.dialect == "promptfoo" else f"{index + 1:03d}"
        name, n = base, 2
        while name in self.case_ids:
            name, n = f"{base}-{n}", n + 1
        self.case_ids.add(name)
        return name

    def one_case(
        self, index: int, parsed: Parsed, test: dict[str, Any], path: KeyPath, case_vars: dict[str, Any], own: dict[str, Any],
        defaults: _Defaults, suite_names: Names, first: bool,
    ) -> dict[str, Any]:
        """One case. `case_vars` are all its vars (templated default assertions are rendered with
        them); its `input` leaves out those the suite's `defaults.input` gives."""
        skipped = len(self.result.skipped)
        code, (at, where) = defaults.transform_vars, defaults.transform_vars_at or (parsed, path)
        if (test.get("options") or {}).get("transformVars") is not None:
            at, where = parsed, path + ("options", "transformVars")
            value = test["options"]["transformVars"]
            code = value if self.inline_code(value, parsed, where) else None
        changed = self.transformed_vars(code, case_vars, at, where) if code is not None else None
        if changed is not None:
            case_vars = own = changed
        written = {key: value for key, value in case_vars.items() if key not in defaults.shared or key in own}
        case: dict[str, Any] = {"id": self.case_id(test, index), "input": written}
        metadata = dict(defaults.metadata) if defaults.per_case else {}
        if isinstance(test.get("metadata"), dict):
            metadata.update(test["metadata"])
        if isinstance(test.get("description"), str):
            metadata["description"] = test["description"]
        if metadata:
            case["metadata"] = metadata
        if "providerOutput" in test:
            case["output"] = test["providerOutput"]
            self.done("providerOutput")
        if self.dialect == "agentv":  # AgentV names its tests and threads conversations
            if isinstance(test.get("id"), (str, int)) and first:
                case["id"] = str(test["id"])
            elif isinstance(test.get("id"), (str, int)):
                case["id"] = f"{test['id']}-{index + 1}"
            if isinstance(test.get("conversation_id"), str):
                case.setdefault("metadata", {})["conversation_id"] = test["conversation_id"]
        agentv_keys = ("id", "conversation_id") if self.dialect == "agentv" else ()
        threshold = test.get("threshold")
        if _unit(threshold):
            case["threshold"] = threshold
            self.done("threshold")
        for key in test:
            if key not in ("vars", "assert", "description", "metadata", "options", "providerOutput", *agentv_keys) \
                    and not (key == "threshold" and "threshold" in case):
                self.skip(parsed, path + (key,), self.test_key_why(key))
        transformed = False
        for key, value in (test.get("options") or {}).items():
            if key in ("transform", "postprocess"):
                transformed = True
                if self.inline_code(value, parsed, path + ("options", key), "; the test's assertions read the transformed answer, so none is carried"):
                    self.test_transform = value
                    if any(not _templated(item[2]) for item in defaults.asserts):
                        self.skip(parsed, path + ("options", key), "defaultTest's assertions, which are the suite's evaluators, read the answer "
                                  "as it came, not as this test's `transform` makes it (its own assertions do)", note=True)
            elif key != "transformVars":
                self.skip(parsed, path + ("options", key), _option_why(key, value))
        if not transformed or self.test_transform is not None:
            names = Names(suite_names.used)
            asserts = [(parsed, path + ("assert", i), a) for i, a in enumerate(test.get("assert") or [])]
            templated = [item for item in defaults.asserts if _templated(item[2])]
            try:
                evaluators = self.assertions(templated + asserts, names, per_case=True, variables=case_vars)
            finally:
                self.test_transform = None
            if evaluators:
                case["evaluators"] = evaluators
        if not first:  # the same keys were listed for the first case of this test
            del self.result.skipped[skipped:]
        return case

    # -- assertions -----------------------------------------------------------------------------
    def assertions(
        self, items: list[tuple[Parsed, KeyPath, Any]], names: Names, per_case: bool, variables: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        evaluators = []
        for parsed, path, item in items:
            if not per_case and _templated(item):
                continue  # a defaultTest assertion naming vars: carried per case, rendered with its vars
            if variables is not None and _templated(item):
                item = _render(item, variables)
            converted = self.assertion(item, parsed, path, names)
            if converted is not None:
                evaluators.append(converted)
        return evaluators

    def assertion(self, item: Any, parsed: Parsed, path: KeyPath, names: Names) -> dict[str, Any] | None:
        if isinstance(item, dict) and "$ref" in item:
            item = self.reference(item["$ref"], parsed, path)
            if item is None:
                return None
        if self.extra_assertion is not None:
            converted = self.extra_assertion(item, parsed, path, names)
            if converted is not None:
                return converted or None
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            self.skip(parsed, path, "an assertion without a `type` is not converted")
            return None
        kind: str = item["type"]
        transform: str | dict[str, Any] | None = None
        own = item.get("transform")
        outer = self.test_transform if self.test_transform is not None else self.default_transform
        if own is not None and not self.inline_code(own, parsed, path + ("transform",), f"; `{kind}` reads the transformed answer, so it is not carried"):
            return None
        if own is not None and outer is None:  # a transform that throws is the test's error, as in promptfoo
            transform = _js_transform(own, self.text_path) or {"javascript": own}
        elif own is not None or outer is not None:  # promptfoo applies the test's transform, then the assertion's
            transform = {"javascript": _chained(outer, own) if own is not None and outer is not None else (own or outer)}
        if isinstance(transform, dict):
            self.runs_code = True  # a `javascript:` transform in the cases file needs trust_cases
            if self.text_path:
                transform["path"] = self.text_path
        for key in item:
            if key == "required" and self.dialect == "agentv" and item[key] is True:
                continue  # every agenteval evaluator must pass for its case to pass
            if key not in ("type", "value", "threshold", "weight", "metric", "config", "provider", "rubricPrompt", "assert", "transform"):
                self.skip(parsed, path + (key,), f"assertion key `{key}` has no agenteval form")
        for key in ("provider", "rubricPrompt"):
            if key in item:
                self.skip(parsed, path + (key,), "the grader is the suite's `models.grader`; a per-assertion grader or prompt is not carried")
        evaluator = self.mapped(kind, item, parsed, path, names)
        if evaluator is None:
            return None
        if transform is not None:
            if evaluator.get("path", "") != (self.text_path or "") or "expression" in evaluator:
                self.skip(parsed, path + ("transform",) if own is not None else path, f"`{kind}` is not carried: it reads another part of the "
                          "answer, which a `transform` (here promptfoo's) does not give")
                return None
            evaluator.pop("path", None)  # the transform reads the text itself
            if isinstance(transform, dict) and evaluator.get("type") not in ("javascript", "python"):
                transform["javascript"] = _as_text(transform["javascript"])  # promptfoo's other checks read a value as its JSON text
            evaluator["transform"] = transform
            self.done("transform")
        self.done(f"assert:{kind}")
        return self.common(evaluator, item, kind, names)

    def common(self, evaluator: dict[str, Any], item: dict[str, Any], kind: str, names: Names) -> dict[str, Any]:
        metric = item.get("metric")
        out = {"name": names.take(str(metric or kind)), **evaluator}
        if isinstance(item.get("weight"), (int, float)) and not isinstance(item.get("weight"), bool):
            out["weight"] = item["weight"]
        if isinstance(metric, str):
            out["criterion"] = {"name": metric}
        return out

    def reference(self, ref: Any, parsed: Parsed, path: KeyPath) -> Any:
        match = re.fullmatch(r"#/assertionTemplates/(.+)", str(ref))
        templates = self.config.data.get("assertionTemplates") or {}
        if match and match.group(1) in templates:
            self.done("assertionTemplates")
            return templates[match.group(1)]
        self.skip(parsed, path, f"$ref {ref!r} does not name an assertionTemplates entry")
        return None

    def mapped(self, kind: str, item: dict[str, Any], parsed: Parsed, path: KeyPath, names: Names) -> dict[str, Any] | None:
        value = item.get("value")
        threshold = item.get("threshold")
        text = {"path": self.text_path} if self.text_path else {}
        base = kind[4:] if kind.startswith("not-") else kind
        negated = kind.startswith("not-")

        def no(why: str) -> None:
            self.skip(parsed, path, f"`{kind}`: {why}")

        if base == "javascript":
            return self.javascript(item, negated, text, parsed, path)
        if base in ("webhook", "ruby"):
            return no("runs code agenteval does not run; rewrite it as a `python` evaluator")
        if kind == "python":
            return self.python(item, parsed, path)
        if negated and base in ("python", "is-json", "contains-json", "similar", "levenshtein", "llm-rubric", "model-graded-closedqa", "factuality",
                                "answer-relevance", "g-eval", "equals", "contains-all", "icontains-all", "is-valid-openai-tools-call",
                                "tool-call-f1", "cost", "latency", "assert-set") and not (base == "equals" and value == ""):
            out = self.python(item, parsed, path) if base == "python" else self.mapped(base, item, parsed, path, names)
            return {**out, "negate": True} if out else None  # no opposite built in: the check itself, turned around
        if base in ("equals",):
            if negated:  # `not-equals: ''`, an answer that is not empty
                return {"type": "length", **text, "min": 1}
            if isinstance(value, (dict, list)):
                return {"type": "equals", **text, "as_json": True, "reference": canonical_json(value)}
            return {"type": "equals", **text, "reference": _text(value)}
        if base in ("contains", "icontains", "contains-any", "icontains-any", "contains-all", "icontains-all"):
            values = value if isinstance(value, list) else [value] if value is not None else []
            if isinstance(value, str) and base.endswith(("-any", "-all")):
                values = [part.strip() for part in value.split(",")]
            if not values:
                return no("needs a `value`")
            out: dict[str, Any] = {"type": "not_contains" if negated else "contains", **text,
                                   "reference": [_text(v) for v in values] if len(values) > 1 else _text(values[0])}
            if not negated and base.endswith("-any"):
                out["mode"] = "any"
            if base.startswith("i"):
                out["case_sensitive"] = False
            return out
        if base == "starts-with":
            if negated:
                return {"type": "regex", **text, "pattern": "^" + re.escape(_text(value)), "must_match": False}
            return {"type": "starts_with", **text, "reference": _text(value)}
        if base == "regex":
            out = {"type": "regex", **text, "pattern": _text(value)}
            if negated:
                out["must_match"] = False
            return out
        if base == "is-json":
            if isinstance(value, dict):
                return {"type": "json_schema", **text, "schema": value}
            if isinstance(value, str) and value.startswith("file://"):
                why = self.source.missing(value)
                if why is not None:
                    return no(f"schema file {why}")
                return {"type": "json_schema", **text, "schema": self.source.parsed(value).data}
            return {"type": "json_valid", **text}
        if base == "contains-json":
            return no("agenteval's json_valid needs the whole answer to be one JSON document; no check finds JSON inside text")
        if base == "similar":
            self.uses_embeddings = True
            out = {"type": "semantic_similarity", "endpoint": "embeddings", **text, "threshold": threshold if threshold is not None else 0.75}
            refs = value if isinstance(value, list) else [value]
            if len(refs) > 1:
                self.skip(parsed, path + ("value",), "semantic_similarity compares with one reference: the first value is used", note=True)
            return self.with_reference(out, refs[0])
        if base == "levenshtein":
            reference = _text(value)
            distance = threshold if isinstance(threshold, (int, float)) else 5
            similarity = max(0.0, 1 - distance / max(len(reference), 1))
            self.skip(parsed, path, f"`levenshtein` passes at an edit distance of at most {distance:g}; carried as text_similarity "
                      f"(levenshtein) at a similarity of {similarity:.3f} (the distance over the reference's length)", note=True)
            return {"type": "text_similarity", **text, "algorithm": "levenshtein", "reference": reference,
                    "threshold": round(similarity, 3), "case_sensitive": True, "normalize_whitespace": False}
        if base in ("llm-rubric", "model-graded-closedqa", "factuality", "answer-relevance", "g-eval"):
            return self.judge(base, item, parsed, path)
        if base == "cost":
            if not isinstance(threshold, (int, float)):
                return no("needs a `threshold` (USD)")
            return {"type": "cost", "max_usd": threshold}
        if base == "latency":
            if not isinstance(threshold, (int, float)):
                return no("needs a `threshold` (ms)")
            return {"type": "latency", "max_ms": threshold}
        if base == "tool-call-f1":
            expected = value if isinstance(value, list) else [part.strip() for part in str(value or "").split(",") if part.strip()]
            if not expected:
                return no("needs the expected tool names as `value`")
            self.skip(parsed, path, "tool-call-f1 scores F1 per case; tool_calls scores the share of expected calls made "
                      "(precision, recall and F1 over the run are in the summary)", note=True)
            out = {"type": "tool_calls", "calls": [{"name": str(n)} for n in expected]}
            if self.text_path:
                out["path"] = "messages"
            if isinstance(threshold, (int, float)):
                out["min_score"] = threshold
            return out
        if base.startswith("trajectory:"):
            return self.trajectory(base, negated, value, parsed, path)
        if base == "is-valid-openai-tools-call":
            return no("agenteval does not check calls against the declared tools' parameter schemas; a tool_calls evaluator "
                      "with the expected calls says more")
        if base == "assert-set":
            children = [self.assertion(child, parsed, path + ("assert", i), Names())
                        for i, child in enumerate(item.get("assert") or [])]
            children = [child for child in children if child]
            if not children:
                return no("none of its assertions could be carried")
            out = {"type": "composite", "evaluators": children}
            if isinstance(threshold, (int, float)):
                out["min_score"] = threshold
            return out
        return no("has no agenteval equivalent")

    def trajectory(self, base: str, negated: bool, value: Any, parsed: Parsed, path: KeyPath) -> dict[str, Any] | None:
        """promptfoo's (and AgentV's) trajectory assertions as tool_calls checks."""
        where = {"path": "messages"} if self.text_path else {}
        value = value if isinstance(value, (dict, list)) else {"name": value}
        if base == "trajectory:tool-used":
            names = value if isinstance(value, list) else [value.get("name")] if isinstance(value, dict) else []
            names = [str(n) for n in names if n]
            if not names:
                self.skip(parsed, path, f"`{base}` needs a tool `name`")
                return None
            if negated:
                return {"type": "tool_calls", **where, "forbidden": names, "calls": []}
            minimum = value.get("min", 1) if isinstance(value, dict) else 1
            out: dict[str, Any] = {"type": "tool_calls", **where, "min_calls": {n: minimum for n in names}, "calls": []}
            if isinstance(value, dict) and isinstance(value.get("max"), int):
                out["max_calls"] = {n: value["max"] for n in names}
            return out
        if negated:
            out = self.trajectory(base, False, value, parsed, path)
            return {**out, "negate": True} if out else None
        if base == "trajectory:tool-sequence" and isinstance(value, dict):
            steps = [str(step if isinstance(step, str) else step.get("name")) for step in value.get("steps") or []]
            order = "exact" if value.get("mode") == "exact" else "in_order"
            return {"type": "tool_calls", **where, "order": order, "calls": [{"name": step} for step in steps]}
        if base == "trajectory:tool-args-match" and isinstance(value, dict) and value.get("name"):
            call: dict[str, Any] = {"name": str(value["name"]), "arguments": value.get("args") or {}}
            if value.get("mode") == "exact":
                call["extra_arguments"] = False
            return {"type": "tool_calls", **where, "calls": [call]}
        self.skip(parsed, path, f"`{base}` has no agenteval equivalent")
        return None

    def with_reference(self, out: dict[str, Any], value: Any) -> dict[str, Any]:
        """semantic_similarity reads its reference from the expected answer at `reference_path`: the
        fixed value is put into each case's `expected` once names are final (finish_references)."""
        out["reference_path"] = "__reference"
        out["__reference"] = _text(value)
        return out

    def judge(self, base: str, item: dict[str, Any], parsed: Parsed, path: KeyPath) -> dict[str, Any] | None:
        value = item.get("value")
        if isinstance(value, str) and value.startswith("file://"):
            why = self.source.missing(value)
            if why is not None:
                self.skip(parsed, path, f"`{base}`: rubric file {why}")
                return None
            value = self.source.text(value)
        threshold = item.get("threshold")
        self.uses_grader = True
        name = slug(str(item.get("metric") or base), "rubric").replace("-", "_")
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            criteria = [{"name": f"{name}_{i + 1}", "description": v, "scale": "unit" if base == "g-eval" else "pass_fail"}
                        for i, v in enumerate(value)]
            out = {"type": "llm_judge", "endpoint": "grader", "criteria": criteria}
            if self.text_path:
                out["path"] = self.text_path
            if base == "g-eval" or isinstance(threshold, (int, float)):
                out["min_score"] = threshold if isinstance(threshold, (int, float)) else 0.7
            return out
        if base == "answer-relevance":
            description = "The answer is relevant to the question in the input."
        elif not isinstance(value, str) or not value.strip():
            self.skip(parsed, path, f"`{base}` needs a rubric text as `value`")
            return None
        elif base == "factuality":
            description = f"The answer is factually consistent with this reference: {value}"
        elif base == "model-graded-closedqa":
            description = f"The answer meets this criterion: {value}"
        else:
            description = value
        criterion: dict[str, Any] = {"name": name, "description": description, "scale": "pass_fail"}
        out: dict[str, Any] = {"type": "llm_judge", "endpoint": "grader", "criteria": [criterion]}
        if self.text_path:
            out["path"] = self.text_path
        if base == "g-eval" or isinstance(threshold, (int, float)):
            criterion["scale"] = "unit"
            out["min_score"] = threshold if isinstance(threshold, (int, float)) else 0.7
        return out

    def python(self, item: dict[str, Any], parsed: Parsed, path: KeyPath) -> dict[str, Any] | None:
        value = item.get("value")
        if isinstance(value, str) and not value.startswith("file://"):
            expression = value.strip()
            if "\n" in expression or re.search(r"\b(return|context)\b", expression):
                self.skip(parsed, path, "`python` with inline code: only a one-line expression of `output` is carried "
                          "(as `expression:`); move this one into a file with get_assert(output, context)")
                return None
            self.runs_code = True
            self.done("assert:python-inline")
            if self.text_path:  # the answer is the chat message: promptfoo's `output` is its text
                expression = f"(lambda output: {expression})(output[{self.text_path!r}])"
            out: dict[str, Any] = {"type": "python", "expression": expression}
            if isinstance(item.get("threshold"), (int, float)):
                out["min_score"] = item["threshold"]
            return out
        if not isinstance(value, str):
            self.skip(parsed, path, "`python` needs its code or file as `value`")
            return None
        ref = strip_file_prefix(value)
        file_name, _, function = ref.partition(":")
        why = self.source.missing(file_name)
        if why is not None:
            self.skip(parsed, path, f"python assertion file {why}")
            return None
        self.runs_code = True
        self.done("assert:python-file")
        module_path = self.rebased(file_name)
        config: dict[str, Any] = {"file": module_path, "function": function or "get_assert"}
        if isinstance(item.get("config"), dict):
            config["assertion_config"] = item["config"]
        if isinstance(item.get("threshold"), (int, float)):
            config["threshold"] = item["threshold"]
        if self.text_path:
            config["text_path"] = self.text_path
        return {"type": "code_judge", "command": ["python", "-m", "agenteval.importers.promptfoo_python"], "config": config}

    def javascript(self, item: dict[str, Any], negated: bool, text: dict[str, Any], parsed: Parsed, path: KeyPath) -> dict[str, Any] | None:
        """promptfoo's JavaScript assertion as agenteval's `javascript` evaluator, which runs the same
        code; a `file://` check is copied beside the suite (a suite reads files in its own folder)."""
        value = item.get("value")
        if not isinstance(value, str) or not value.strip():
            self.skip(parsed, path, "`javascript` needs its code or a file:// value")
            return None
        out: dict[str, Any] = {"type": "javascript", **text}
        if value.startswith("file://"):
            file_name, _, function = strip_file_prefix(value).partition(":")
            why = self.source.missing(file_name)
            if why is not None:
                self.skip(parsed, path, f"javascript assertion file {why}")
                return None
            code = self.source.text(file_name)
            if re.search(r"""require\(\s*['"]\.{1,2}/|^\s*import\s.*from\s*['"]\.{1,2}/""", code, re.M):
                self.skip(parsed, path, f"javascript assertion file {file_name} loads other files of its folder: copy them and "
                          "the file beside the imported suite and name it in a `javascript` evaluator's `file`")
                return None
            name = self.copied(file_name, code)
            out["file"] = f"{name}:{function}" if function else name
        else:
            out["code"] = value
        threshold = item.get("threshold")
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
            out["threshold"] = threshold
        if isinstance(item.get("config"), dict):
            out["config"] = item["config"]
        if negated:
            out["negate"] = True
        self.runs_code = True
        self.done("assert:javascript")
        return out

    def copied(self, file_name: str, code: str) -> str:
        """The name a check file gets beside the suite: its own, made unique among the copies."""
        stem, dot, suffix = Path(file_name).name.rpartition(".")
        name, number = Path(file_name).name, 1
        while name in self.result.files and self.result.files[name] != code:
            number += 1
            name = f"{stem}-{number}{dot}{suffix}"
        self.result.files[name] = code
        return name

    def rebased(self, name: str) -> str:
        """A path relative to the config's folder, as seen from the output folder."""
        if self.out_dir is None:
            return name
        import os

        return os.path.relpath(self.source.folder / name, self.out_dir).replace(os.sep, "/")


def import_promptfoo(config: Parsed, source: Source, out_dir: Path | None = None, model_outputs: Path | None = None,
                     run_generators: Callable[[str], None] | None = None) -> Imported:
    """The suites a promptfoo config becomes, and what could not be carried over; with
    `model_outputs` (promptfoo's `--model-outputs` file), the answers as predictions too. With
    `run_generators` (told a line before each runs), tests made by code are run once and written."""
    if not isinstance(config.data, dict):
        raise ImportFailed(f"{config.name}: expected a mapping of keys at the top")
    outputs = read_model_outputs(model_outputs) if model_outputs is not None else None  # a bad file: nothing is imported
    importer = PromptfooImporter(config, source, out_dir)
    importer.announce = run_generators
    imported = importer.run()
    finish_references(imported)
    if outputs is not None and model_outputs is not None:
        imported.predictions = model_predictions(outputs, imported, model_outputs, importer.text_path)
    return imported


def read_model_outputs(path: Path) -> list[tuple[Any, list[Any] | None]]:
    """promptfoo's `--model-outputs` file, read as promptfoo reads it: a JSON list whose items are
    an output (a string) or an object with `output` (and optional `tags`). (output, tags) per item;
    anything else is an ImportFailed naming the item (promptfoo would give the test no output)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ImportFailed(f"{path}: cannot read the model outputs: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ImportFailed(f"{path}: the model outputs file is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        where = f"{path}:{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else str(path)
        raise ImportFailed(f"{where}: the model outputs file is not valid JSON: {getattr(exc, 'msg', exc)}") from None
    shape = "a JSON list with one output per test, each a string or an object with `output`"
    if not isinstance(data, list):
        raise ImportFailed(f"{path}: expected {shape}; got a JSON {_json_kind(data)}")
    outputs: list[tuple[Any, list[Any] | None]] = []
    for index, item in enumerate(data):
        if _has_lone_surrogate(item):
            raise ImportFailed(f"{path}: item [{index}] holds a lone surrogate (half of a UTF-16 pair, `\\ud800`), which is not text; "
                               "fix the file (nothing was written)")
        if isinstance(item, str):
            outputs.append((item, None))
        elif isinstance(item, dict) and "output" in item:
            tags = item.get("tags")
            outputs.append((item["output"], tags if isinstance(tags, list) else None))
        else:
            got = "an object without `output`" if isinstance(item, dict) else f"a JSON {_json_kind(item)}"
            raise ImportFailed(f"{path}: item [{index}] is {got}; expected {shape}")
    return outputs


def model_predictions(outputs: list[tuple[Any, list[Any] | None]], imported: Imported, path: Path,
                      text_path: str | None) -> list[dict[str, Any]]:
    """One `{"id", "output"}` per case, in order: the Nth output answers the Nth test (after list
    vars made one test per value, as promptfoo counts them). A count that differs is an
    ImportFailed: pairing them otherwise would score answers against the wrong tests. For a chat
    target the answer is the message, `{"content": text}`, which the evaluators read. The outputs
    are one answer per test, as for one (provider, prompt) pair: when the suite has several, the
    lines name the first (`target`, `prompt`) and `predictions_options` choose it on `agenteval run`."""
    cases = imported.cases
    if len(outputs) != len(cases):
        ids = f" ({cases[0]['id']} to {cases[-1]['id']})" if len(cases) > 1 else ""
        raise ImportFailed(
            f"{path}: {len(outputs)} model output{'s' if len(outputs) != 1 else ''} for {len(cases)} test{'s' if len(cases) != 1 else ''}"
            f"{ids}: --model-outputs gives one output per test, in the config's order; nothing was written"
        )
    suite = next(iter(imported.suites.values()), {})
    cell = {key: next(iter(suite[plural])) for key, plural in (("target", "targets"), ("prompt", "prompts")) if suite.get(plural)}
    imported.predictions_options = [word for key, name in cell.items() for word in (f"--{key}", name)]
    predictions = []
    empty = []
    for index, (case, (output, _tags)) in enumerate(zip(cases, outputs)):
        if output is None:  # promptfoo: no output, the test fails with "No output"
            empty.append((index, case["id"]))
            continue
        text = output if isinstance(output, str) else json.dumps(output, separators=(",", ":"), ensure_ascii=False)
        predictions.append({"id": case["id"], "output": {text_path: text} if text_path else text, **cell})
    if empty:
        first, case_id = empty[0]
        more = f" and {len(empty) - 1} more" if len(empty) > 1 else ""
        imported.skipped.append(Skipped(
            str(path.absolute()), None, f"[{first}].output{more}",
            f"no output (null): case {case_id}{more} gets no prediction, so `agenteval run` records it as an error, as promptfoo "
            "fails such a test with `No output`", note=True,
        ))
    tagged = [index for index, (_, tags) in enumerate(outputs) if tags]
    if tagged:
        imported.skipped.append(Skipped(
            str(path.absolute()), None, f"[{tagged[0]}].tags" + (f" and {len(tagged) - 1} more" if len(tagged) > 1 else ""),
            "promptfoo passes an output's `tags` to its assertions as the var `tags`; not carried",
        ))
    return predictions


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _json_kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "true/false", type(None): "null"}.get(type(value), "number")


def finish_references(imported: Imported) -> None:
    """A semantic_similarity with a fixed reference reads it from the case's `expected`: move the
    value there (agenteval's semantic_similarity takes the reference from the expected answer)."""
    for suite in imported.suites.values():
        for evaluator in suite["evaluators"]:
            if "__reference" in evaluator:
                value = evaluator.pop("__reference")
                evaluator["reference_path"] = f"similar.{evaluator['name']}"
                for case in imported.cases:
                    _expected(case).setdefault("similar", {})[evaluator["name"]] = value
    for case in imported.cases:
        for evaluator in case.get("evaluators", []):
            if "__reference" in evaluator:
                value = evaluator.pop("__reference")
                evaluator["reference_path"] = f"similar.{evaluator['name']}"
                _expected(case).setdefault("similar", {})[evaluator["name"]] = value


def _expected(case: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(case.get("expected"), dict):
        case["expected"] = {}
    return case["expected"]


def _env_reads(messages: list[dict[str, Any]]) -> list[str]:
    """The environment variables a promptfoo template reads (`{{ env.NAME }}`, rewritten as `input.env.NAME`)."""
    found: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            found += [name for pair in re.findall(r"\binput\.env\.(\w+)|\binput\.env\[['\"](\w+)", content) for name in pair if name]
    return sorted(set(found))


def _unknown_filters(messages: list[dict[str, Any]]) -> list[str]:
    """Filters a template uses that jinja2 does not have (promptfoo's nunjucks adds `load`, `dump`...)."""
    from jinja2 import Environment, nodes
    from jinja2.exceptions import TemplateSyntaxError

    env = Environment()
    unknown: list[str] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str):
            continue
        try:
            tree = env.parse(content)
        except TemplateSyntaxError as exc:
            name = re.search(r"filter named '(\w+)'", str(exc))
            unknown.append(name.group(1) if name else f"(syntax: {exc})")
            continue
        unknown.extend(node.name for node in tree.find_all(nodes.Filter) if node.name not in env.filters)
    return sorted(set(unknown))


class _Each(list):  # type: ignore[type-arg]
    """A var's values, one case each (a list var, or the files a glob matches)."""


def _as_text(code: str) -> str:
    """A transform whose value is given as text: a string as it is, anything else as JSON (what
    promptfoo's checks other than javascript and python read)."""
    from agenteval.evaluators.js_source import function_body

    return (f"const __value = (() => {{\n{function_body(code)}\n}})();\n"
            "return typeof __value === 'string' ? __value : JSON.stringify(__value);")


def _chained(first: str, then: str) -> str:
    """Two promptfoo transforms as one JavaScript body: the test's, then the assertion's on its value."""
    from agenteval.evaluators.js_source import function_body

    return (f"const __first = (output, context) => {{\n{function_body(first)}\n}};\n"
            f"const __then = (output, context) => {{\n{function_body(then)}\n}};\n"
            "return __then(__first(output, context), context);")


def _js_transform(code: Any, text_path: str | None) -> str | None:
    """promptfoo's JavaScript `transform` as a jinja2 expression, for the chains of string methods
    that have a filter (`output.trim().toLowerCase()`); None for anything else."""
    if not isinstance(code, str):
        return None
    match = re.fullmatch(r"\s*output((?:\.(?:trim|toLowerCase|toUpperCase)\(\))+)\s*;?\s*", code)
    if match is None:
        return None
    filters = {"trim": "trim", "toLowerCase": "lower", "toUpperCase": "upper"}
    names = re.findall(r"\.(\w+)\(\)", match.group(1))
    subject = f"output.{text_path}" if text_path else "output"
    return " | ".join([subject, *(filters[name] for name in names)])


def _option_why(key: str, value: Any) -> str:
    return {
        "provider": "the grader is the suite's `models.grader` (an OpenAI model; change it there)",
        "transform": "a test's `transform` is code agenteval does not run; write it as the suite's or an evaluator's `transform:`",
        "transformVars": "`transformVars` runs code agenteval does not run",
        "rubricPrompt": "a custom grading prompt is not carried; the llm_judge default prompt is used",
        "storeOutputAs": "outputs are not passed between tests in agenteval",
        "runSerially": "give --workers 1 to `agenteval run`",
        "disableVarExpansion": "list vars are kept as one value already",
    }.get(key, f"option `{key}` has no agenteval form")


def _assertion_from_string(text: str) -> dict[str, Any]:
    """A CSV `__expected` cell as promptfoo reads it: `type:value`, `fn:`/`grade:` shorthands, else equals."""
    lowered = text.lower()
    for prefix, kind in (("fn:", "javascript"), ("javascript:", "javascript"), ("eval:", "javascript"), ("python:", "python"),
                         ("grade:", "llm-rubric"), ("llm-rubric:", "llm-rubric")):
        if lowered.startswith(prefix):
            return {"type": kind, "value": text[len(prefix):].strip()}
    match = re.match(r"^(not-)?([a-z-]+)(?:\(([\d.]+)\))?(?::(.*))?$", text, re.S)
    known = {"contains", "icontains", "contains-any", "icontains-any", "contains-all", "icontains-all", "starts-with", "regex",
             "is-json", "contains-json", "similar", "levenshtein", "equals", "javascript", "python", "llm-rubric",
             "model-graded-closedqa", "factuality", "answer-relevance", "cost", "latency", "perplexity", "rouge-n", "bleu",
             "is-valid-openai-tools-call", "is-valid-openai-function-call", "webhook", "g-eval", "tool-call-f1"}
    if match and match.group(2) in known and (match.group(4) is not None or match.group(2).startswith("is-")):
        out: dict[str, Any] = {"type": (match.group(1) or "") + match.group(2)}
        if match.group(4) is not None:
            out["value"] = match.group(4).strip()
        if match.group(3):
            out["threshold"] = float(match.group(3))
        return out
    return {"type": "equals", "value": text}


def _cell_groups(prompts: list[tuple[str, list[dict[str, Any]] | None]],
                 targets: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The target keys of each suite written: one target as `target:`, several as `targets:` by
    name (the provider's label, else its id); one prompt as the model targets' `messages`, several
    as `prompts:` by name (the prompt's label, else `prompt1`, `prompt2`...). `prompts:` are for
    model targets only, so http targets (which send the case input, not a prompt) go to a suite of
    their own, `suite-http.yaml`, when the config has both kinds. File name -> keys."""
    prompted = _cell_names([(label, messages) for label, messages in prompts if messages is not None])
    model = [(label, target) for label, target in targets if target.get("type") in MODEL_TARGETS]
    other = [(label, target) for label, target in targets if target.get("type") not in MODEL_TARGETS]
    groups: dict[str, dict[str, Any]] = {}
    for file_name, group in (("suite.yaml", model), ("suite-http.yaml" if model else "suite.yaml", other)):
        if not group:
            continue
        named = _cell_names([(label, dict(target)) for label, target in group], slash=True)
        keys: dict[str, Any] = {}
        if group is model and len(prompted) == 1:
            for _, target in named:
                target["messages"] = prompted[0][1]
        keys.update({"target": named[0][1]} if len(named) == 1 else {"targets": dict(named)})
        if group is model and len(prompted) > 1:
            keys["prompts"] = dict(prompted)
        groups[file_name] = keys
    return groups


def _script_cells(targets: list[tuple[str, dict[str, Any]]],
                  prompts: list[tuple[str, list[dict[str, Any]] | None]]) -> list[tuple[str, dict[str, Any]]]:
    """Script providers take the rendered prompt, which a command target does not: one command
    target per prompt, its template in the command (`LABEL PROMPT` when there are several)."""
    out = []
    for label, target in targets:
        if not target.pop("__script", False):
            out.append((label, target))
            continue
        with_prompt = [(name, messages) for name, messages in prompts if messages is not None]
        if not with_prompt:
            out.append((label, target))
            continue
        for name, messages in with_prompt:
            command = list(target["command"])
            command.insert(4, "--prompt=" + json.dumps(messages, ensure_ascii=False))
            out.append((label if len(with_prompt) == 1 else f"{label} {name}", {**target, "command": command}))
    return out


def _cell_names(items: list[tuple[str, Any]], slash: bool = False) -> list[tuple[str, Any]]:
    """Names a cell label can hold (no control characters; a "/" only in a target's (`slash`): the
    label's last "/" starts the prompt), unique."""
    taken: set[str] = set()
    named = []
    for label, value in items:
        base = re.sub(r"[\x00-\x1f]", "", label if slash else label.replace("/", "-")).strip() or "unnamed"
        name, n = base, 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        taken.add(name)
        named.append((name, value))
    return named


def _unit(value: Any) -> bool:
    """A number from 0 to 1 (a threshold)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _templated(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("value"), str) and "{{" in item["value"]


def _render(item: dict[str, Any], variables: dict[str, Any]) -> dict[str, Any]:
    from jinja2 import Undefined

    from agenteval.endpoints.sandbox import bounded_sandbox

    try:
        value = bounded_sandbox(Undefined).from_string(item["value"]).render(**variables)
    except Exception:  # a template this case's vars cannot fill: kept as written
        return item
    return {**item, "value": value}


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return canonical_json(value)


def _is_messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in value)


def _env_template(value: str) -> str:
    """promptfoo's `{{env.NAME}}` is agenteval's `${NAME}`."""
    return re.sub(r"\{\{\s*env\.(\w+)\s*\}\}", r"${\1}", value)


def _key(path: KeyPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(file)"


_TAG = re.compile(r"(\{\{-?|\{%-?)(.*?)(-?\}\}|-?%\})", re.S)
_TOKEN = re.compile(r"""("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[A-Za-z_]\w*|\s+|.)""", re.S)
_KEYWORDS = {"and", "or", "not", "in", "is", "if", "else", "elif", "endif", "for", "endfor", "set", "endset", "true",
             "false", "True", "False", "none", "None", "loop", "input", "range", "raw", "endraw", "with", "endwith",
             "macro", "endmacro", "block", "endblock", "recursive", "filter", "endfilter", "defined", "undefined"}


_DICT_METHODS = set(dir(dict))


def rewrite_template(text: str) -> str:
    """A promptfoo (nunjucks) template with its variables read from the case input: each free name
    inside `{{ }}` and `{% %}` becomes `input.NAME`. Attributes (`.name`), filters and tests
    (`| upper`, `is defined`), calls, string literals, keywords and names the template binds itself
    (`for x in`, `set x =`) are left alone."""
    bound: set[str] = set()
    for tag in _TAG.finditer(text):
        bound.update(re.findall(r"\bfor\s+([A-Za-z_]\w*)(?:\s*,\s*([A-Za-z_]\w*))?", tag.group(2)) and
                     [n for pair in re.findall(r"\bfor\s+([A-Za-z_]\w*)(?:\s*,\s*([A-Za-z_]\w*))?", tag.group(2)) for n in pair if n] or [])
        bound.update(re.findall(r"\bset\s+([A-Za-z_]\w*)", tag.group(2)))

    def inner(body: str) -> str:
        tokens = _TOKEN.findall(body)
        out, previous = [], ""
        for index, token in enumerate(tokens):
            if re.fullmatch(r"[A-Za-z_]\w*", token):
                following = next((t for t in tokens[index + 1:] if not t.isspace()), "")
                free = previous not in (".", "|", "is") and following != "(" and token not in _KEYWORDS and token not in bound
                if free and previous != "for" and previous != "set":
                    token = f'input["{token}"]' if token in _DICT_METHODS else f"input.{token}"
            out.append(token)
            if not token.isspace():
                previous = token if not token.startswith("input.") else "name"
        return "".join(out)

    return _TAG.sub(lambda m: m.group(1) + inner(m.group(2)) + m.group(3), text)
