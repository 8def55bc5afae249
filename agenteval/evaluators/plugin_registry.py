"""Evaluator types from other packages, through the `agenteval.evaluators` entry-point group.

A plugin package declares, in its pyproject.toml:

    [project.entry-points."agenteval.evaluators"]
    word_count = "my_package.evaluators:WordCount"

where `WordCount` is an `EvaluatorConfig` subclass with `type: Literal["word_count"]` and an
`evaluate` method. Entry points are read once, when a suite names a type that is not built in or
a command lists every type (`agenteval evaluators`, `agenteval schema suite`): never for `--help`,
for reading results, or for a suite of built-in types. Each plugin is checked like a built-in type.

What a plugin's `evaluate` returns is checked by `run_evaluator` like a judge's answer (an
EvaluatorResult with a finite score in [0, 1], a known verdict, details that serialize);
anything else, or an exception (`sys.exit()` included), is that case's `error`. A plugin type
whose evaluate runs programs or talks to a network says so with the class flags
`runs_programs` / `uses_network`, and a cases file then needs `trust_cases` to use it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agenteval.evaluators.base import EvaluatorConfig

GROUP = "agenteval.evaluators"


class PluginError(Exception):
    """An installed evaluator plugin cannot be used; the message names the plugin and its package."""


@dataclass(frozen=True, slots=True)
class Plugin:
    """One evaluator type declared by an installed package."""

    type_name: str
    reference: str  # "module:attribute", as declared
    package: str  # "name version" of the distribution declaring it


def declared_plugins() -> list[Plugin]:
    """Every entry point of the group, without importing anything."""
    from importlib.metadata import entry_points

    found = []
    for point in entry_points(group=GROUP):
        dist = point.dist
        package = f"{dist.name} {dist.version}" if dist is not None else "an unknown package"
        found.append(Plugin(point.name, point.value, package))
    return found


def plugin_types(built_in: Collection[str]) -> dict[str, type[EvaluatorConfig]]:
    """Type name -> config class of every installed plugin. Raises PluginError, naming the plugin,
    when one fails to import, is not an evaluator, or takes a name already used."""
    loaded: dict[str, tuple[type[EvaluatorConfig], Plugin]] = {}
    for plugin in declared_plugins():
        where = f"evaluator plugin {plugin.type_name!r} ({plugin.reference}, from {plugin.package})"
        if plugin.type_name in built_in:
            raise PluginError(f"{where}: {plugin.type_name!r} is a built-in evaluator type; the plugin must use another name")
        if plugin.type_name in loaded:
            other = loaded[plugin.type_name][1]
            raise PluginError(f"{where}: the type {plugin.type_name!r} is also declared by {other.package} ({other.reference})")
        loaded[plugin.type_name] = (_load(plugin, where), plugin)
    return {name: cls for name, (cls, _) in loaded.items()}


def _load(plugin: Plugin, where: str) -> type[EvaluatorConfig]:
    from importlib.metadata import EntryPoint

    try:
        target = EntryPoint(plugin.type_name, plugin.reference, GROUP).load()
    except BaseException as exc:  # noqa: BLE001 - any failure of foreign code is reported, naming the plugin
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, SystemExit):  # never agenteval's exit code: e.g. a module parsing the command line
            raise PluginError(f"{where} called sys.exit({exc.code!r}) while being imported") from None
        raise PluginError(f"{where} failed to load: {type(exc).__name__}: {exc}") from None
    problem = evaluator_problem(target, plugin.type_name)
    if problem:
        raise PluginError(f"{where}: {problem}")
    return target


def evaluator_problem(target: Any, type_name: str) -> str | None:
    """Why `target` cannot serve as the evaluator type `type_name`, or None when it can."""
    import typing

    from agenteval.evaluators.base import EvaluatorConfig

    if not (isinstance(target, type) and issubclass(target, EvaluatorConfig)):
        return f"{target!r} is not a subclass of agenteval.evaluators.EvaluatorConfig"
    field = target.model_fields.get("type")
    if field is None or typing.get_origin(field.annotation) is not typing.Literal or typing.get_args(field.annotation) != (type_name,):
        return f"its `type` field must be `Literal[{type_name!r}]` (the entry point's name)"
    if getattr(target, "type_name", None) != type_name:
        return f"its `type_name` must be {type_name!r} (the entry point's name)"
    if target.evaluate is EvaluatorConfig.evaluate:
        return "it does not implement `evaluate(self, ctx) -> EvaluatorResult`"
    return None


def describe(cls: type) -> str:
    """The first sentence of a class docstring: the one-line description `agenteval evaluators` shows."""
    paragraph = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
    sentence, dot, _ = paragraph.partition(". ")
    return sentence + dot.strip()
