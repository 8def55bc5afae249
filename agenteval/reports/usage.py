"""Latency, tokens and cost, suite limits and `--repeat` spread, as lines under the summary tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from agenteval.reports.numbers import num


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} ms" if value >= 100 else f"{value:.1f} ms"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def usage_lines(summary: dict[str, Any]) -> list[str]:
    """Plain lines (no markup): one for the target, one for model judges, one per suite limit, the repeat spread."""
    lines = []
    usage = summary.get("usage")
    if usage:
        latency, target, judges = usage["latency_ms"], usage["target"], usage["judges"]
        if target["requests"]:
            tokens = target["tokens"]
            counted = any(tokens.values()) or target["cost_usd"] is not None  # a command target counts no tokens
            lines.append(
                f"target: latency p50 {_ms(latency['p50'])}, p95 {_ms(latency['p95'])}, max {_ms(latency['max'])}"
                + (f"; tokens {tokens['total']} (in {tokens['input']}, out {tokens['output']}); cost {_usd(target['cost_usd'])}" if counted else "")
                + (f"; {target['cached']} from cache" if target["cached"] else "")
            )
        if judges["requests"]:
            lines.append(
                f"model judges: {judges['requests']} results, tokens {judges['tokens']['total']}, cost {_usd(judges['cost_usd'])}"
                + (f"; {judges['cached']} from cache" if judges["cached"] else "")
            )
        if usage["total_tokens"] or usage["total_cost_usd"] is not None:
            lines.append(f"total: tokens {usage['total_tokens']}, cost {_usd(usage['total_cost_usd'])}")
    for check in summary.get("suite_limits") or []:
        from agenteval.evaluators.budgets import describe_limit

        lines.append(f"suite limit {'met' if check['passed'] else 'NOT met'}: {describe_limit(check)}")
    repeats = summary.get("repeats")
    if repeats:
        for label, key in (("pass rate", "pass_rate"), ("mean score", "mean_score")):
            stats = repeats[key]
            ci = stats["ci95"]
            lines.append(
                f"{label} over {repeats['repeat']} repetitions: mean {num(stats['mean'])}, std {num(stats['std'])}, "
                f"95% CI " + ("n/a" if ci is None else f"[{num(ci[0])}, {num(ci[1])}]")
            )
        flaky = repeats["flaky"]
        shown = ", ".join(f"{row['case_id']} ({row['passed']}/{row['runs']})" for row in flaky[:10])
        lines.append(f"flaky cases: {repeats['flaky_cases']}" + (f": {shown}" if shown else ""))
        for mark, key in (("@", "pass_at_k"), ("^", "pass_hat_k")):  # k up to 10, and N (older summaries have none)
            shown = [f"pass{mark}{k} {num(value)}" for k, value in (repeats.get(key) or {}).items() if int(k) <= 10 or int(k) == repeats["repeat"]]
            if shown:
                lines.append(f"pass{mark}k over {repeats['repeat']} repetitions: " + ", ".join(shown))
    return lines


def render_usage(summary: dict[str, Any], console: Console) -> None:
    from rich.text import Text

    from agenteval.reports.terminal import visible

    for line in usage_lines(summary):
        console.print(Text(visible(line)), soft_wrap=True)  # one line each, however narrow: a log reader greps for it
