"""The viewer's web app (Starlette): runs, one run, a case with its review form, two runs side by
side, and the agreement of each judge with the people who reviewed it.

Every request needs the token printed with the URL (in the query once, then an HttpOnly
SameSite=Strict cookie); a request without it is refused with 403, and so is one naming a host
other than the one the server listens on (DNS rebinding). Every write also needs the page's CSRF
token and, when the browser sends one, an Origin of this server. Pages are rendered with
autoescaping, so answers, inputs and notes are shown as text: an answer holding `<script>` does
nothing. Reviews are written by the reviews store (agenteval.stores.reviews), never here.
"""

from __future__ import annotations

import hmac
import math
import random
import re
import secrets
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from agenteval.reports.cell_table import cell_table, comparison_lines
from agenteval.reports.html import unreordered
from agenteval.reports.numbers import num, pct
from agenteval.results import ResultsFileError, read_results
from agenteval.stores.history import folder_runs, trends
from agenteval.stores.reviews import ReviewError, agreements, case_from_result, names_one, write_cases
from agenteval.view.case_view import cell_view, criteria_of, scales_of, shown
from agenteval.view.index import PAGE_SIZE, LineError, Row, RunIndex, cell_label
from agenteval.view.runs import Run, Runs

FORBIDDEN = "403 forbidden: open the address `agenteval view` printed (it carries the access token)\n"


@dataclass
class Settings:
    """What the command line gave the app."""

    runs: Runs
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    hosts: tuple[str, ...] | None = ("127.0.0.1", "localhost")  # the Host headers answered; None: any (--allow-remote)
    cookie: str = field(default_factory=lambda: f"agenteval_view_{secrets.token_hex(4)}")  # its own: viewers on other ports keep theirs
    cases_file: Path | None = None  # where "add to cases" writes (named by the user), else the button is absent
    static: bool = False  # rendering for --export: links to files, no forms


class TokenGate:
    """ASGI middleware: 403 without the token, or for a Host header that is not ours."""

    def __init__(self, app: Any, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        host = (request.headers.get("host") or "").rsplit(":", 1)[0].strip("[]")
        given = request.query_params.get("token") or request.cookies.get(self.settings.cookie) or ""
        hosts = self.settings.hosts
        if (hosts is not None and host not in hosts) or not hmac.compare_digest(given.encode(), self.settings.token.encode()):
            await PlainTextResponse(FORBIDDEN, status_code=403)(scope, receive, send)
            return
        if request.query_params.get("token"):
            target = request.url.remove_query_params("token")
            response = RedirectResponse(str(target.path) + (f"?{target.query}" if target.query else ""), status_code=303)
            response.set_cookie(self.settings.cookie, self.settings.token, httponly=True, samesite="strict", path="/")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("agenteval.view", "templates"), autoescape=True,
        trim_blocks=True, lstrip_blocks=True,
    )
    env.filters["pct"] = pct
    env.filters["num"] = num
    env.filters["shown"] = shown
    env.filters["ms"] = lambda value: "" if value is None else f"{value:.0f} ms" if value >= 100 else f"{value:.1f} ms"
    env.filters["usd"] = lambda value: "" if value is None else f"${value:.4f}"
    env.filters["kappa"] = lambda value: "-" if value is None else f"{value:.2f}"
    env.globals["case_path"] = case_path
    return env


def create_app(settings: Settings) -> Any:
    """The app, wrapped in the token gate."""
    env = _environment()
    runs = settings.runs

    def page(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        def link(path: str, **query: Any) -> str:
            kept = {key: value for key, value in query.items() if value not in (None, "") and not (key == "page" and value == 1)}
            if settings.static:
                return _static_link(path, kept)
            return path + (f"?{urlencode(kept)}" if kept else "")

        body = unreordered(env.get_template(template).render(csrf=settings.csrf, static=settings.static, link=link, **values))
        return HTMLResponse(body, status_code=status, headers=_SECURITY_HEADERS)

    def missing(request: Request, what: str) -> HTMLResponse:
        return page(request, "missing.html", status=404, what=what)

    async def runs_page(request: Request) -> Response:
        suite = request.query_params.get("suite", "")
        tag = request.query_params.get("tag", "")
        listed = []
        for run in runs.all():
            summary = run.summary()
            if summary is None:
                run.index.follow(0.2)
            record = _run_record(run, summary)
            listed.append(record)
        suites = sorted({record["suite"] for record in listed if record["suite"]})
        tags = sorted({t for record in listed for t in record["tags"]})
        shown_runs = [r for r in listed if (not suite or r["suite"] == suite) and (not tag or tag in r["tags"])]
        shown_runs.sort(key=lambda record: record["started_at"] or "", reverse=True)
        histories = [row for folder in runs.sources if folder.is_dir() for row in folder_runs(folder, suite or None, 0)]
        if runs.store is not None:
            histories += runs.store.history_rows(suite or None, None)  # no LIMIT
        trend_rows = _trend_rows(histories)
        return page(request, "runs.html", runs=shown_runs, suites=suites, tags=tags, suite=suite, tag=tag, trends=trend_rows)

    async def run_page(request: Request) -> Response:
        run = runs.get(request.path_params["key"])
        if run is None:
            return missing(request, f"run {request.path_params['key']}")
        query = {key: request.query_params.get(key, "") for key in ("verdict", "tag", "evaluator", "cell", "q", "sort")}
        number = _int(request.query_params.get("page"), 1)
        summary = run.summary()
        with run.index.locked():  # the cards and the table from one state of an index still being read
            found = run.index.page(page=number, verdict=query["verdict"], tag=query["tag"], evaluator=query["evaluator"],
                                   cell=query["cell"], text=query["q"], sort=query["sort"] or "file")
            overview = _overview(run.index, summary)
        ordered = [cell.get("label") for cell in (summary or {}).get("cells") or [] if isinstance(cell, dict)]
        if sorted(ordered, key=str) == sorted(found.cells):  # the run's own order of its cells
            found.cells = ordered
        groups = [_group_view(run.index, group, found.cells) for group in found.groups]
        reviews, review_problem = run.reviews()
        template = "cases_table.html" if request.query_params.get("fragment") else "run.html"
        return page(
            request, template, run=run, summary=summary, overview=overview, cells=found.cells,
            table=cell_table(summary) if summary else None, comparisons=comparison_lines(summary) if summary else [],
            groups=groups, found=found, query=query, evaluators=run.index.evaluators(), tags=run.index.tags(),
            problems=run.index.problems + [found for found in (run.problem, review_problem) if found], reviews=len(reviews),
            writing=summary is None or run.loading, reading=run.loading,
            reviewed={(r["case_id"]) for r in reviews},
        )

    async def run_count(request: Request) -> Response:
        run = runs.get(request.path_params["key"])
        if run is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        summary = run.summary()
        overview = _overview(run.index, summary)
        cards = {"passed": str(overview["passed"]), "failed": str(overview["failed"]), "errored": str(overview["errored"]),
                 "pass-rate": pct(overview["pass_rate"]), "mean-score": num(overview["mean_score"])}  # (as the cards show them)
        return JSONResponse({"cases": len(run.index), "finished": summary is not None and not run.loading, "cards": cards,
                             "reading": run.loading, "problems": run.index.problems + ([run.problem] if run.problem else [])})

    async def case_page(request: Request) -> Response:
        run = runs.get(request.path_params["key"])
        case_id = _case_id(request.path_params["case_id"])
        if run is None:
            return missing(request, f"run {request.path_params['key']}")
        rows = run.index.rows_of(case_id)
        if not rows:
            return missing(request, f"case {case_id} in run {run.key}")
        wanted_cell = request.query_params.get("cell")
        wanted_rep = _int(request.query_params.get("rep"), None)
        try:
            results = [run.index.result(row) for row in rows]
        except LineError as exc:
            return page(request, "missing.html", status=422, what=f"readable result for this case ({exc})")
        cells = [cell_view(result) for result in results]
        position = next((i for i, row in enumerate(rows) if (wanted_cell is None or row.cell == wanted_cell)
                         and (wanted_rep is None or row.repetition == wanted_rep)), 0)
        chosen = results[position]
        reviews, review_problem = run.reviews()
        own = [review for review in reviews if review["case_id"] == case_id]
        queue = request.query_params.get("queue", "")
        next_key = _queue_next(run, queue, (case_id, rows[position].cell, rows[position].repetition), reviews) if queue else None
        return page(
            request, "case.html", run=run, case_id=case_id, first=results[0], cells=cells, chosen=chosen,
            chosen_cell=cells[position], criteria=criteria_of(chosen, scales_of(run.summary())), reviews=own,
            problem=review_problem, queue=queue, next_case=next_key, cases_file=settings.cases_file,
            input=shown(results[0].input), expected=None if results[0].expected is None else shown(results[0].expected),
            saved=request.query_params.get("saved"), error=request.query_params.get("error"), reviewable=names_one(case_id),
        )

    async def review_post(request: Request) -> Response:
        refused = await _check_write(request, settings)
        if refused is not None:
            return refused
        run = runs.get(request.path_params["key"])
        case_id = _case_id(request.path_params["case_id"])
        if run is None or not run.index.rows_of(case_id):
            return PlainTextResponse("no such run or case\n", status_code=404)
        form = await read_form(request) or {}
        cell, repetition = str(form.get("cell", "")), _int(form.get("rep"), 0)
        row = next((row for row in run.index.rows_of(case_id) if row.cell == cell and row.repetition == repetition), None)
        if row is None:
            return PlainTextResponse("no such cell of the case\n", status_code=400)
        try:
            result = run.index.result(row)
        except LineError as exc:
            return PlainTextResponse(f"{exc}\n", status_code=422)
        queue = str(form.get("queue") or "")
        back = case_path(run.key, case_id)
        try:
            run.save_review(_review_from_form(form, result, scales_of(run.summary())))
        except ReviewError as exc:
            return RedirectResponse(back + "?" + urlencode({"cell": row.cell, "rep": row.repetition, "error": str(exc), "queue": queue}), status_code=303)
        if queue:
            reviews, _ = run.reviews()
            following = _queue_next(run, queue, (case_id, row.cell, row.repetition), reviews)
            if following:
                return RedirectResponse(_queue_address(run, following, queue), status_code=303)
        return RedirectResponse(back + "?" + urlencode({"cell": row.cell, "rep": row.repetition, "saved": "1", "queue": queue}), status_code=303)

    async def queue_start(request: Request) -> Response:
        run = runs.get(request.path_params["key"])
        if run is None:
            return missing(request, f"run {request.path_params['key']}")
        kind = request.query_params.get("kind", "failures")
        reviews, _ = run.reviews()
        first = _queue_next(run, kind, None, reviews)
        if first is None:
            return page(request, "missing.html", status=200, what=f"an unreviewed case in the {kind} queue (every one is reviewed)")
        return RedirectResponse(_queue_address(run, first, kind), status_code=303)

    async def agreement_page(request: Request) -> Response:
        run = runs.get(request.path_params["key"])
        if run is None:
            return missing(request, f"run {request.path_params['key']}")
        reviews, problem = run.reviews()
        try:
            found = agreements(read_results(run.path), reviews)
        except ResultsFileError as exc:
            found, problem = [], str(exc)
        return page(request, "agreement.html", run=run, agreements=found, reviews=len(reviews), problem=problem,
                    reviewers=sorted({review["reviewer"] for review in reviews}))

    async def cases_post(request: Request) -> Response:
        refused = await _check_write(request, settings)
        if refused is not None:
            return refused
        run = runs.get(request.path_params["key"])
        if run is None or settings.cases_file is None:
            return PlainTextResponse("no such run, or no cases file was named (agenteval view --cases FILE)\n", status_code=404)
        form = await read_form(request) or {}
        case_id = str(form.get("case_id", ""))
        row = next(iter(run.index.rows_of(case_id)), None)
        if row is None:
            return PlainTextResponse("no such case\n", status_code=404)
        reviews, _ = run.reviews()
        correction = next((r for r in reversed(reviews) if r["case_id"] == case_id and r.get("expected_wrong")), None)
        try:
            added, replaced = write_cases(settings.cases_file, [case_from_result(run.index.result(row), correction)])
            message = f"{'added to' if added else 'corrected in'} {settings.cases_file.name}"
        except (ReviewError, LineError) as exc:
            message = f"not written: {exc}"
        return RedirectResponse(case_path(run.key, case_id) + "?" + urlencode({"saved": message}), status_code=303)

    async def compare_page(request: Request) -> Response:
        base = runs.get(request.query_params.get("base", ""))
        new = runs.get(request.query_params.get("new", ""))
        listed = runs.all()
        if base is None or new is None:
            return page(request, "compare.html", runs=listed, base=base, new=new, rows=[], line=None, counts={})
        rows, counts, line = _compare(base, new)
        number = _int(request.query_params.get("page"), 1)
        pages = max(1, -(-len(rows) // PAGE_SIZE))
        number = min(max(1, number), pages)
        shown_rows = rows[(number - 1) * PAGE_SIZE: number * PAGE_SIZE]
        for item in shown_rows:
            item["old_miss"] = _first_miss(base.index, item["old"])
            item["new_miss"] = "missing from this run" if item["new"] is None else _first_miss(new.index, item["new"])
        return page(request, "compare.html", runs=listed, base=base, new=new, rows=shown_rows, line=line, counts=counts,
                    page_number=number, pages=pages)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name == "report.css":
            text = resources.files("agenteval.reports").joinpath("assets", "report.css").read_text(encoding="utf-8")
        elif name in ("view.css", "view.js"):
            text = resources.files("agenteval.view").joinpath("assets", name).read_text(encoding="utf-8")
        else:
            return PlainTextResponse("not found\n", status_code=404)
        kind = "text/css" if name.endswith(".css") else "text/javascript"
        return Response(text, media_type=kind, headers={**_SECURITY_HEADERS, "Cache-Control": "no-cache"})

    async def not_found(request: Request, exc: Exception) -> Response:
        return PlainTextResponse("not found\n", status_code=404)

    async def failed(request: Request, exc: Exception) -> Response:
        return page(request, "missing.html", status=500, what=f"a readable page ({type(exc).__name__}: {exc})")

    app = Starlette(
        routes=[
            Route("/", runs_page), Route("/compare", compare_page), Route("/assets/{name}", asset),
            Route("/runs/{key}", run_page), Route("/runs/{key}/count.json", run_count),
            Route("/runs/{key}/queue", queue_start), Route("/runs/{key}/agreement", agreement_page),
            Route("/runs/{key}/cases-file", cases_post, methods=["POST"]),
            Route("/runs/{key}/cases/{case_id:path}/review", review_post, methods=["POST"]),
            Route("/runs/{key}/cases/{case_id:path}", case_page),
        ],
        exception_handlers={404: not_found, Exception: failed},
    )
    return TokenGate(app, settings)


_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY",
}


FORM_BYTES = 256 * 1024


async def read_form(request: Request) -> dict[str, str] | None:
    """An url-encoded form (the last value of a repeated field), read once and kept on the request;
    None when it is larger than FORM_BYTES or of another type."""
    if "agenteval_form" in request.state._state:
        return request.state.agenteval_form
    from urllib.parse import parse_qsl

    kind = (request.headers.get("content-type") or "").split(";")[0].strip()
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_BYTES:
            request.state.agenteval_form = None
            return None
    form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)) if kind in ("application/x-www-form-urlencoded", "") else None
    request.state.agenteval_form = form
    return form


async def _check_write(request: Request, settings: Settings) -> Response | None:
    """CSRF: a write carries the page's token (form field `csrf` or header X-CSRF-Token), and the
    browser's Origin, when it sends one, is this server."""
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host', '')}":
        return PlainTextResponse("403 forbidden: a write from another site\n", status_code=403)
    form = await read_form(request)
    if form is None:
        return PlainTextResponse("413 a form of at most 256 KB, url-encoded\n", status_code=413)
    token = request.headers.get("x-csrf-token") or form.get("csrf", "")
    if not hmac.compare_digest(token.encode(), settings.csrf.encode()):
        return PlainTextResponse("403 forbidden: missing or bad CSRF token\n", status_code=403)
    return None


def _review_from_form(form: Any, result: Any, scales: dict[str, str] | None = None) -> dict[str, Any]:
    """A review record from the case page's form (the store checks it)."""
    verdicts, judged, scores = {}, {}, {}
    for evaluator in result.evaluator_results:
        mark = form.get(f"verdict:{evaluator.name}")
        if mark in ("right", "wrong"):
            verdicts[evaluator.name] = mark
            judged[evaluator.name] = evaluator.verdict
    for name, criterion in criteria_of(result, scales).items():
        value = str(form.get(f"score:{name}", "")).strip()
        if not value:
            continue
        if criterion["input"]["kind"] == "passfail":
            scores[name] = value if value in ("pass", "fail") else value
        else:
            try:
                number = float(value)
            except ValueError:
                number = math.nan
            scale = criterion["input"]
            low, high = (float(scale[key]) if scale.get(key) is not None else None for key in ("min", "max"))
            if math.isfinite(number) and ((low is not None and number < low) or (high is not None and number > high)
                                          or (scale.get("step") == 1 and not number.is_integer())):
                raise ReviewError(f"scores.{name}: {value} is not on its scale ({scale['text']})")
            scores[name] = int(number) if number.is_integer() else number
    record: dict[str, Any] = {
        "run_id": result.run_id, "case_id": result.case_id, "repetition": result.repetition, "target": result.target,
        "prompt": result.prompt, "reviewer": str(form.get("reviewer", "")).strip(), "verdicts": verdicts, "judged": judged,
        "scores": scores, "note": str(form.get("note", "")).strip() or None, "expected_wrong": form.get("expected_wrong") == "on",
    }
    corrected = str(form.get("corrected_expected", "")).strip()
    if record["expected_wrong"] and corrected:
        try:
            record["corrected_expected"] = orjson.loads(corrected)
        except orjson.JSONDecodeError:
            record["corrected_expected"] = corrected
    return record


QueueItem = tuple[str, str, int]
"""A result to review: its case id, cell (as `Row.cell` names it) and repetition."""


def _queue_next(run: Run, kind: str, after: QueueItem | None, reviews: list[dict[str, Any]]) -> QueueItem | None:
    """The next unreviewed result of a queue: `failures` (each case, cell and repetition that did not
    pass, file order) or `sample` (every result, a seeded shuffle). A review of another cell of the
    case does not count: in a run of several cells each is reviewed on its own."""
    items = run.index.results_order(not_passing=kind == "failures")
    if kind == "sample":
        random.Random(run.key).shuffle(items)
    reviewed = {(review["case_id"], cell_label(review.get("target"), review.get("prompt")), review.get("repetition", 0)) for review in reviews}
    start = items.index(after) + 1 if after in items else 0
    for item in items[start:] + items[:start]:
        if item not in reviewed and item != after:
            return item
    return None


def _queue_address(run: Run, item: QueueItem, queue: str) -> str:
    case_id, cell, repetition = item
    return case_path(run.key, case_id) + "?" + urlencode({"cell": cell, "rep": repetition, "queue": queue})


def _group_view(index: RunIndex, group: list[Row], cells: list[str]) -> dict[str, Any]:
    by_cell: dict[str, list[dict[str, Any]]] = {cell: [] for cell in cells}
    for row in group:
        try:
            result = index.result(row)
        except LineError as exc:
            by_cell.setdefault(row.cell, []).append({"row": row, "answer": "", "misses": [str(exc)]})
            continue
        misses = [miss for e in result.evaluator_results for miss in e.misses][:3]
        by_cell.setdefault(row.cell, []).append({
            "row": row, "answer": _excerpt(shown(result.output), 240), "misses": misses,
        })
    return {"case_id": group[0].case_id, "cells": by_cell, "disagree": len({row.verdict for row in group}) > 1, "tags": group[0].tags}


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _overview(index: RunIndex, summary: dict[str, Any] | None) -> dict[str, Any]:
    """Counts for the run's cards: the summary's once finished, counted from the index while writing."""
    if summary is not None:
        counts = summary["counts"]
        return {"total": counts.get("total", 0), "passed": counts.get("passed", 0), "failed": counts.get("failed", 0),
                "errored": counts.get("errored", 0), "pass_rate": summary.get("pass_rate"), "mean_score": summary.get("mean_score"),
                "evaluators": summary.get("evaluators") or {}}
    counts = index.counts()
    verdicts, total = counts["verdicts"], len(index)
    evaluators = {name: {**figures, "mean_score": None, "type": ""} for name, figures in counts["evaluators"].items()}
    return {"total": total, "passed": verdicts["pass"], "failed": total - verdicts["pass"] - verdicts["error"], "errored": verdicts["error"],
            "pass_rate": verdicts["pass"] / total if total else None, "mean_score": counts["mean_score"], "evaluators": evaluators}


def _run_record(run: Run, summary: dict[str, Any] | None) -> dict[str, Any]:
    overview = _overview(run.index, summary)
    usage = (summary or {}).get("usage") or {}
    cost = usage.get("total_cost_usd") if isinstance(usage, dict) else None  # target and judges (agenteval.usage)
    cells = (summary or {}).get("cells")
    return {
        "key": run.key, "suite": (summary or {}).get("suite") or run.index.suite or "", "run_id": (summary or {}).get("run_id") or run.index.run_id,
        "started_at": (summary or {}).get("started_at"), "cells": len(cells) if isinstance(cells, (list, dict)) and cells else 1,
        "total": overview["total"], "pass_rate": overview["pass_rate"], "mean_score": overview["mean_score"],
        "cost": cost if isinstance(cost, (int, float)) else None, "writing": summary is None,
        "tags": sorted((summary or {}).get("tags") or {}),
    }


def _trend_rows(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per suite: its pass rates run by run, drawn as a line, and the change from first to last."""
    rows = []
    for suite, figures in trends(history).items():
        values = figures["pass_rate"]["values"]
        defined = [value for value in values if value is not None]
        points = " ".join(f"{index * 120 / max(1, len(values) - 1):.1f},{22 - 20 * value:.1f}" for index, value in enumerate(values) if value is not None)
        rows.append({"suite": suite, "runs": len(values), "first": figures["pass_rate"]["first"], "last": figures["pass_rate"]["last"],
                     "change": figures["pass_rate"]["change"], "points": points if len(defined) > 1 else ""})
    return rows


def _compare(base: Run, new: Run) -> tuple[list[dict[str, Any]], dict[str, int], str | None]:
    """Case by case (same id, cell and repetition): regressions first, then improvements, then score changes."""
    old_rows = {(row.case_id, row.cell, row.repetition): row for row in base.index.all_rows()}
    items = []
    counts = {"regressions": 0, "improvements": 0, "unchanged": 0, "only_old": 0, "only_new": 0}
    paired: list[tuple[Row, Row]] = []
    for row in new.index.all_rows():
        old = old_rows.pop((row.case_id, row.cell, row.repetition), None)
        if old is None:
            counts["only_new"] += 1
            continue
        paired.append((old, row))
        kind = "regression" if old.verdict == "pass" and row.verdict != "pass" else "improvement" if old.verdict != "pass" and row.verdict == "pass" else "same"
        counts["regressions" if kind == "regression" else "improvements" if kind == "improvement" else "unchanged"] += 1
        items.append({"case_id": row.case_id, "cell": row.cell, "old": old, "new": row, "kind": kind, "delta": row.score - old.score})
    counts["only_old"] = len(old_rows)
    for old in old_rows.values():  # passed in BASE and missing from NEW: also a regression, as `agenteval compare` counts it
        if old.verdict == "pass":
            counts["regressions"] += 1
            items.append({"case_id": old.case_id, "cell": old.cell, "old": old, "new": None, "kind": "regression", "delta": None})
    order = {"regression": 0, "improvement": 1, "same": 2}
    items.sort(key=lambda item: (order[item["kind"]], item["delta"] is None,
                                 (item["delta"] or 0.0) if item["kind"] != "improvement" else -item["delta"]))
    line = None
    if paired:
        from agenteval.statistics import compare_cells

        found = compare_cells(
            base.key, new.key, [float(a.verdict == "pass") for a, _ in paired], [float(b.verdict == "pass") for _, b in paired],
            [a.score for a, _ in paired], [b.score for _, b in paired], repeated=False,
        )
        line = str(found.get("text", ""))
    return items, counts, line


def _first_miss(index: RunIndex, row: Row) -> str:
    try:
        result = index.result(row)
    except LineError as exc:
        return str(exc)
    for evaluator in result.evaluator_results:
        if evaluator.verdict != "pass":
            return f"{evaluator.name}: " + (evaluator.misses[0] if evaluator.misses else evaluator.error or evaluator.verdict)
    return ""


def _int(value: str | None, default: Any) -> Any:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def case_path(run_key: str, case_id: str) -> str:
    """A case page's address: `/runs/RUN/cases/` and the id percent-encoded (`HumanEval/0` ->
    `HumanEval%2F0`). An id with a part `.` or `..` (also written `%2e`), such as `.` or `a/../b`,
    which a browser, or a proxy reading `%2F` as `/`, would resolve away, and an id starting with
    `~` are written `~` and the id with all but letters, digits, `_` and `-` escaped `~XX` as
    --export names files (`.` -> `~~2E`). `_case_id` reads the id back."""
    from urllib.parse import unquote

    if case_id.startswith("~") or any(unquote(part) in (".", "..") for part in case_id.split("/")):
        return f"/runs/{run_key}/cases/~{_quote(_SEGMENT_UNSAFE.sub(_escaped_bytes, case_id))}"
    return f"/runs/{run_key}/cases/{_quote(case_id)}"


def _case_id(part: str) -> str:
    """The case id of `case_path`'s last part (as the server decoded it); a part not read back is
    taken as it is (no such case)."""
    if not part.startswith("~"):
        return part
    try:
        return _ESCAPED.sub(lambda found: bytes.fromhex(found.group(0).replace("~", "")).decode("utf-8", "surrogatepass"), part[1:])
    except UnicodeDecodeError:
        return part


def _static_name(path: str, query: dict[str, Any]) -> str:
    """The file --export writes for a page, all in one folder so links stay relative:
    `/runs/x/cases/c1` -> `runs~x~cases~c1.html`, `/assets/view.css` -> `assets~view.css`. Each
    part is its text (a case id as `case_path` writes it), with what a file name should not hold
    written `~XX` (its UTF-8 bytes: `HumanEval/0` -> `HumanEval~2F0`); a name past 200 bytes is
    cut and ends in a hash of the whole. A link to it is `_static_link` of the same path."""
    from urllib.parse import unquote

    name = "~".join(_FILE_UNSAFE.sub(_escaped_bytes, unquote(part)) for part in path.strip("/").split("/")) or "index"
    if query.get("page") not in (None, 1, "1"):
        name += f"~page{query['page']}"
    if len(name.encode()) > _NAME_BYTES:
        import hashlib

        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        name = name.encode()[: _NAME_BYTES - 17].decode(errors="ignore") + "~" + digest
    return name if name.startswith("assets~") else name + ".html"


def _static_link(path: str, query: dict[str, Any]) -> str:
    """The href of `_static_name`'s file: the browser reads it back to that very name."""
    from urllib.parse import quote

    return quote(_static_name(path, query), safe="~")


_FILE_UNSAFE = re.compile(r"[^\w.\-]")  # (\w keeps letters and digits of any script; `~` is the parts' separator)
_SEGMENT_UNSAFE = re.compile(r"[^\w\-]")  # (and `.`, for a case's address)
_ESCAPED = re.compile(r"(?:~[0-9A-F]{2})+")
_NAME_BYTES = 200


def _escaped_bytes(match: re.Match[str]) -> str:
    return "".join(f"~{byte:02X}" for byte in match.group(0).encode("utf-8", "surrogatepass"))
