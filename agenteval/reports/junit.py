"""JUnit XML for CI test views: one <testcase> per case (classname = suite, name = case id).

A matrix run (several targets or prompts) has one <testsuite> per cell, named and classed
`<suite> [<cell label>]`, and its test cases named `<case id> [<cell label>]`: a case runs in every
cell, and CI views that list test names without their class must still tell the cells apart.

Test cases are written to a temporary spool as results stream, and the file is assembled at the
end, when the counts its <testsuite> header needs are known; memory stays flat.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any
from xml.sax.saxutils import escape, quoteattr

from agenteval.reports.cell_table import cells, result_cell
from agenteval.reports.failures import describe, evaluator_heading, headline
from agenteval.reports.terminal import visible, visible_lines
from agenteval.results import CaseResult

MISSES_IN_BODY = 50  # per evaluator; the message is one line, the body the whole story
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """Text safe inside an element: escaped, its lines kept, control characters and bidirectional
    overrides shown as escapes as on the terminal (a CI view must not reorder what follows a
    case id), and what XML 1.0 still forbids (a lone surrogate) replaced."""
    return escape(_NOT_XML.sub("\ufffd", visible_lines(text)))


def xml_attr(text: str) -> str:
    """An attribute value, quoted: as `xml_text`, on one line (a line break shown as `\\n`)."""
    return quoteattr(_NOT_XML.sub("\ufffd", visible(text)))


def seconds_attr(seconds: float) -> str:
    """` time="1.234"`: three decimals, as the Surefire/Jenkins schema (junit-10.xsd) allows; left
    out when the duration is not a finite, non-negative number (a hand-edited results file)."""
    return f' time="{seconds:.3f}"' if math.isfinite(seconds) and seconds >= 0 else ""


@dataclass
class _SuiteSpool:
    body: IO[bytes]
    classname: str  # the suite (and cell), as an XML attribute value: also the <testsuite> name
    label: str  # the cell label, "" for the single unnamed cell
    target: str | None = None
    prompt: str | None = None
    verdicts: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


def testcase_xml(result: CaseResult, classname: str | None = None, label: str = "") -> str:
    """One <testcase>; a failure carries the misses, an error the error message. `label`: the
    result's cell, "" for the single unnamed cell (the name is then the case id alone); in a cell,
    a later `--repeat` run of the case is also named by its number (`q1 [gpt-a] (run 2)`)."""
    seconds = result.duration_ms / 1000
    name = result.case_id
    if label:
        name += f" [{label}]" + (f" (run {result.repetition + 1})" if result.repetition else "")
    head = f"<testcase classname={classname or xml_attr(result.suite)} name={xml_attr(name)}{seconds_attr(seconds)}"
    if result.verdict == "pass":
        return f"    {head}/>\n"
    failure = describe(result, MISSES_IN_BODY)
    lines = [headline(failure), *(f"  {note}" for note in failure.notes)]
    for misses in failure.evaluators:
        lines.append("  " + evaluator_heading(misses))
        lines.extend("    " + line for line in misses.lines)
        if misses.more:
            lines.append(f"    ... and {misses.more} more")
    first_miss = next((m.lines[0] for m in failure.evaluators if m.lines), None)
    if result.verdict == "error":  # the error itself, not another evaluator's miss
        first_error = next((e.error for e in result.evaluator_results if e.verdict == "error" and e.error), None)
        tag, message = "error", result.error or first_error or first_miss or "an evaluator could not score this case"
    else:
        tag, message = "failure", f"score {result.score:.3f}" + (f": {first_miss}" if first_miss else "")
    return (
        f"    {head}>\n      <{tag} type={xml_attr(result.verdict)} message={xml_attr(message)}>"
        f"{xml_text(chr(10).join(lines))}</{tag}>\n    </testcase>\n"
    )


class JunitWriter:
    """Fed one result at a time; `write` produces the whole file (one <testsuite> per suite and cell)."""

    def __init__(self) -> None:
        self._suites: dict[tuple[str, str], _SuiteSpool] = {}

    def add(self, result: CaseResult) -> None:
        label = result_cell(result)
        spool = self._suites.get((result.suite, label))
        if spool is None:
            name = f"{result.suite} [{label}]" if label else result.suite
            spool = self._suites[(result.suite, label)] = _SuiteSpool(
                tempfile.TemporaryFile(), xml_attr(name), label,
                result.target, result.prompt,
            )
        spool.body.write(testcase_xml(result, spool.classname, label).encode())
        spool.verdicts[result.verdict] += 1
        spool.seconds += result.duration_ms / 1000

    def write(self, out: IO[bytes], summary: dict[str, Any]) -> None:
        """The XML document; `summary` gives the run id and start time as suite properties."""
        verdicts = sum((spool.verdicts for spool in self._suites.values()), Counter())
        seconds = sum(spool.seconds for spool in self._suites.values())
        out.write(b'<?xml version="1.0" encoding="UTF-8"?>\n')
        out.write(
            f'<testsuites name="agenteval" tests="{verdicts.total()}" failures="{verdicts["fail"]}" '
            f'errors="{verdicts["error"]}"{seconds_attr(seconds)}>\n'.encode()  # no `skipped`: the schema has none here
        )
        gates = {cell.get("label"): cell.get("gate") for cell in cells(summary)}
        for spool in self._suites.values():
            stamp = summary.get("started_at")
            out.write(
                f'  <testsuite name={spool.classname} tests="{spool.verdicts.total()}" failures="{spool.verdicts["fail"]}" '
                f'errors="{spool.verdicts["error"]}" skipped="0"{seconds_attr(spool.seconds)}'
                f'{f" timestamp={xml_attr(stamp)}" if stamp else ""}>\n'.encode()
            )
            properties = [(key, summary[key]) for key in ("run_id", "interrupted") if summary.get(key) is not None]
            if spool.label:
                properties += [("cell", spool.label), *((key, value) for key, value in (("target", spool.target), ("prompt", spool.prompt)) if value is not None)]
                gate = gates.get(spool.label)
                if gate:
                    reason = gate.get("reason")
                    properties.append(("gate", "passed" if gate.get("passed") else f"failed: {reason}" if reason else "failed"))
            if properties:
                out.write(b"    <properties>\n")
                for key, value in properties:
                    out.write(f"      <property name={xml_attr(key)} value={xml_attr(str(value).lower() if isinstance(value, bool) else str(value))}/>\n".encode())
                out.write(b"    </properties>\n")
            spool.body.seek(0)
            while chunk := spool.body.read(1 << 20):
                out.write(chunk)
            out.write(b"  </testsuite>\n")
        out.write(b"</testsuites>\n")

    def close(self) -> None:
        for spool in self._suites.values():
            spool.body.close()
