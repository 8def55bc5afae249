"""SQL stores: `sqlite:///runs.db` (a file, no server) and `postgresql://...`, one table layout.

What goes in comes back: text through one reversible NUL mapping (agenteval.stores.tables), JSON
as its text, runs read back in code point order whatever the database's collation. Every
database error becomes a one-line StoreError (exit 2), with the URL's password hidden.

Saved cases are committed in small batches: as soon as they hold 0.2 s of case work (their
summed durations), 0.2 s after the last commit, or 500 cases. A killed run so loses at most the
last 0.2 s of work, which `--resume` redoes, while fast in-process scoring does not pay a commit
per case. History is read as SQL aggregates, never as whole results.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from agenteval.evaluators.base import EvaluatorResult
from agenteval.extras import MissingDependency, require
from agenteval.results import CaseResult, ResultsWriteError
from agenteval.stores.base import RunStart, Store, StoreError
from agenteval.stores.text_mapping import ESCAPE, REPLACEMENT, json_from_column, json_to_column

JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
SQLITE_BUSY_MS = 30_000  # shards writing one SQLite file wait for each other's commits
FETCH_ROWS = 500  # rows fetched at a time when streaming a run back
COMMIT_AFTER_S = 0.2  # of case work pending, or of time since the last commit
COMMIT_AFTER_CASES = 500
RECENT_S = 5.0  # how far before the newest result a viewer has it looks for new ones first (`results_except`)


class SqlStore(Store):
    def __init__(self, url: str, base_dir: Path | None = None, environ: Any = None) -> None:
        try:
            require("sqlalchemy", "a SQL store (--store)")
        except MissingDependency as exc:
            raise StoreError(str(exc)) from None
        from sqlalchemy.exc import SQLAlchemyError

        self._engine, self.url = _engine(url, base_dir or Path.cwd(), environ)
        self._pending_cases: list[dict[str, Any]] = []
        self._pending_evaluators: list[dict[str, Any]] = []
        self._pending_work_s = 0.0
        self._last_commit = time.monotonic()
        from agenteval.stores.tables import CORE_TABLES, METADATA, add_missing_columns, cells_in_key

        try:
            METADATA.create_all(self._engine, tables=list(CORE_TABLES))
        except SQLAlchemyError as first:
            try:  # another shard may have created the tables between the check and the create
                METADATA.create_all(self._engine, tables=list(CORE_TABLES))
            except SQLAlchemyError:
                self._engine.dispose()
                raise StoreError(f"cannot open store {self.url}: {_explained(first)}") from None
        try:  # a file made before a column was added (case_results.expected, cell) gains it
            self._absent = set(add_missing_columns(self._engine))  # (table, column) of a read-only older file
            self._cells_in_key = cells_in_key(self._engine)  # False: tables made before cells, one cell per run
            self._reviews_table = self._open_reviews()  # False: a read-only file made before the reviews table
        except SQLAlchemyError as exc:
            self._engine.dispose()
            raise StoreError(f"cannot open store {self.url}: {_explained(exc)}") from None

    # -- the run loop ------------------------------------------------------------------------
    def open_run(self, run: RunStart, resume: bool = False) -> str:
        from sqlalchemy import insert, select

        from agenteval.stores.tables import RUNS

        with self._failing("cannot start a run in"), self._connect() as conn:
            if resume:
                found = conn.execute(
                    select(RUNS.c.run_id).where(RUNS.c.suite == run.suite).order_by(RUNS.c.started_at.desc()).limit(1)
                ).scalar()
                if found is None:
                    raise StoreError(f"--resume found no earlier run of {run.suite!r} in {self.url}")
                self._check_cells(conn, run.cells, str(found))
                return str(found)
            self._check_cells(conn, run.cells, None)
            recorded = {} if ("runs", "fingerprint") in self._absent else {"fingerprint": run.fingerprint}
            conn.execute(insert(RUNS).values(
                run_id=run.run_id, suite=run.suite, started_at=_utc(run.started_at),
                agenteval_version=run.agenteval_version, config=run.config, **recorded,
            ))
            conn.commit()
        return run.run_id

    def recorded_fingerprint(self, run_id: str) -> Any:
        if ("runs", "fingerprint") in self._absent:
            return None
        from sqlalchemy import select

        from agenteval.stores.tables import RUNS

        with self._failing("cannot read"), self._connect() as conn:
            return conn.execute(select(RUNS.c.fingerprint).where(RUNS.c.run_id == run_id)).scalar()

    def _check_cells(self, conn: Any, cells: Iterable[tuple[str | None, str | None]], resumed: str | None) -> None:
        """Tables made before cells keep one result per (run, case, repetition): refuse, before
        anything runs, a run of several cells there (with --resume, counting those already saved)."""
        if self._cells_in_key:
            return
        from sqlalchemy import select

        from agenteval.stores.tables import CASE_RESULTS

        wanted = {cell_column(target, prompt) for target, prompt in cells} or {""}
        if resumed is not None and ("case_results", "cell") not in self._absent:
            saved = conn.execute(select(CASE_RESULTS.c.cell).where(CASE_RESULTS.c.run_id == resumed).distinct())
            wanted.update(saved.scalars())
        if len(wanted) > 1:
            raise StoreError(
                f"{self.url} was made before runs had cells and keeps one result per case and repetition, so a run of "
                f"{len(wanted)} cells (targets x prompts) cannot be saved there: use a new store "
                "(another SQLite file, or a new PostgreSQL database), or choose one cell with --target and --prompt"
            )

    def save(self, result: CaseResult) -> None:
        self._pending_cases.append(case_row(result))
        self._pending_evaluators += evaluator_rows(
            result.run_id, result.case_id, result.repetition, enumerate(result.evaluator_results),
            cell_column(result.target, result.prompt),
        )
        self._pending_work_s += result.duration_ms / 1000
        if (
            self._pending_work_s >= COMMIT_AFTER_S
            or len(self._pending_cases) >= COMMIT_AFTER_CASES
            or time.monotonic() - self._last_commit >= COMMIT_AFTER_S
        ):
            self.flush()

    def flush(self) -> None:
        """Commit the saved cases not yet committed. Raises ResultsWriteError."""
        from sqlalchemy import insert
        from sqlalchemy.exc import SQLAlchemyError

        from agenteval.stores.tables import CASE_RESULTS, EVALUATOR_RESULTS

        cases, evaluators = self._pending_cases, self._pending_evaluators
        self._pending_cases, self._pending_evaluators, self._pending_work_s = [], [], 0.0
        self._last_commit = time.monotonic()
        if not cases:
            return
        try:
            with self._engine.begin() as conn:
                conn.execute(insert(CASE_RESULTS), cases)
                if evaluators:
                    conn.execute(insert(EVALUATOR_RESULTS), evaluators)
        except SQLAlchemyError as exc:
            first = cases[0]["case_id"] if len(cases) == 1 else f"{len(cases)} cases from {cases[0]['case_id']!r}"
            raise ResultsWriteError(f"cannot save {first} to {self.url}: {_explained(exc)}") from None

    def close_run(self, run_id: str, summary: dict[str, Any]) -> None:
        from sqlalchemy.exc import SQLAlchemyError

        self.flush()
        finished = summary.get("finished_at")
        try:
            with self._engine.begin() as conn:
                _write_summary(conn, run_id, summary, _parse_time(finished) if finished else datetime.now(UTC))
        except SQLAlchemyError as exc:
            raise ResultsWriteError(f"cannot save the summary of run {run_id} to {self.url}: {reason(exc)}") from None

    def read_run(self, run_id: str) -> Iterator[CaseResult]:
        """The run's cases in case id order, each with its evaluator results (two ordered streams, merged)."""
        from sqlalchemy import select

        from agenteval.stores.tables import CASE_RESULTS, EVALUATOR_RESULTS, RUNS

        with self._failing("cannot read"), self._connect() as conn:
            suite = conn.execute(select(RUNS.c.suite).where(RUNS.c.run_id == run_id)).scalar()
            if suite is None:
                raise StoreError(f"{self.url} has no run {run_id!r} (see `agenteval history --store ...`)")
            streamed = conn.execution_options(stream_results=True, yield_per=FETCH_ROWS)
            case_key, evaluator_key = self._byte_order(CASE_RESULTS.c.case_id), self._byte_order(EVALUATOR_RESULTS.c.case_id)
            case_cell, evaluator_cell = self._cell_order(CASE_RESULTS), self._cell_order(EVALUATOR_RESULTS)
            columns = [column for column in CASE_RESULTS.c if ("case_results", column.name) not in self._absent]  # a read-only older file
            cases = streamed.execute(
                select(*columns, case_key, case_cell).where(CASE_RESULTS.c.run_id == run_id)
                .order_by(case_key, case_cell, CASE_RESULTS.c.repetition)
            )
            columns = [column for column in EVALUATOR_RESULTS.c if ("evaluator_results", column.name) not in self._absent]
            evaluators = streamed.execute(
                select(*columns, evaluator_key, evaluator_cell).where(EVALUATOR_RESULTS.c.run_id == run_id)
                .order_by(evaluator_key, evaluator_cell, EVALUATOR_RESULTS.c.repetition, EVALUATOR_RESULTS.c.position)
            )
            pending = next(evaluators, None)
            for row in cases:
                key = (row.stored_case_id, row.stored_cell, row.repetition)
                own: list[EvaluatorResult] = []
                while pending is not None and (pending.stored_case_id, pending.stored_cell, pending.repetition) <= key:
                    if (pending.stored_case_id, pending.stored_cell, pending.repetition) == key:
                        own.append(_evaluator_result(pending))
                    pending = next(evaluators, None)
                yield _case_result(row, str(suite), own)

    def _byte_order(self, column: Any, label: str = "stored_case_id") -> Any:
        """A text key column as stored, sorted by code point: both streams of `read_run` come in
        this order and are merged in it. A database's linguistic collation (ICU `en-US`, or the
        `en_US.UTF-8` default of many servers) sorts `a` before `B`, which Python does not."""
        from sqlalchemy import String, type_coerce

        ordered = column.collate("C") if self._engine.dialect.name == "postgresql" else column  # SQLite: BINARY
        return type_coerce(ordered, String).label(label)

    def _cell_order(self, table: Any) -> Any:
        """The table's `cell` as `_byte_order` sorts it; "" for a read-only file made before cells."""
        from sqlalchemy import String, literal

        if (table.name, "cell") in self._absent:
            return literal("", String).label("stored_cell")
        return self._byte_order(table.c.cell, "stored_cell")

    def results_except(self, run_id: str, known: set[tuple[str, str, int]], since: datetime | None = None) -> list[CaseResult]:
        """The run's results whose (case id, cell, repetition) is not in `known`, with their
        evaluator results: how a viewer follows a run still being written. The rows are counted
        first (nothing new: done); then the keys of the rows that finished from RECENT_S before
        `since` (the newest the caller has) are read, and every key only when those do not account
        for the count (a result committed long after it finished); then only the new rows, by case
        id, FETCH_ROWS ids at a time."""
        from datetime import timedelta

        from sqlalchemy import func, or_, select

        from agenteval.stores.tables import CASE_RESULTS as C
        from agenteval.stores.tables import EVALUATOR_RESULTS as E
        from agenteval.stores.tables import RUNS

        found: list[CaseResult] = []
        with self._failing("cannot read"), self._connect() as conn:
            suite = conn.execute(select(RUNS.c.suite).where(RUNS.c.run_id == run_id)).scalar()
            if suite is None:
                raise StoreError(f"{self.url} has no run {run_id!r}")
            total = conn.execute(select(func.count()).select_from(C).where(C.c.run_id == run_id)).scalar() or 0
            if total <= len(known):
                return []
            keys = select(C.c.case_id, self._cell_order(C), C.c.repetition).where(C.c.run_id == run_id)
            wanted: set[tuple[str, str, int]] = set()
            if since is not None:
                recent = keys.where(or_(C.c.timestamp >= _utc(since) - timedelta(seconds=RECENT_S), C.c.timestamp.is_(None)))
                wanted = {(row[0], row[1] or "", row[2]) for row in conn.execute(recent)} - known
            if len(known) + len(wanted) < total:
                wanted = {(row[0], row[1] or "", row[2]) for row in conn.execute(keys)} - known
            case_ids = sorted({key[0] for key in wanted})
            case_columns = [column for column in C.c if ("case_results", column.name) not in self._absent]
            evaluator_columns = [column for column in E.c if ("evaluator_results", column.name) not in self._absent]
            for start in range(0, len(case_ids), FETCH_ROWS):
                chunk = case_ids[start: start + FETCH_ROWS]
                own: dict[tuple[str, str, int], list[EvaluatorResult]] = {}
                for row in conn.execute(select(*evaluator_columns).where(E.c.run_id == run_id, E.c.case_id.in_(chunk)).order_by(E.c.position)):
                    own.setdefault((row.case_id, row._mapping.get("cell") or "", row.repetition), []).append(_evaluator_result(row))
                for row in conn.execute(select(*case_columns).where(C.c.run_id == run_id, C.c.case_id.in_(chunk))):
                    key = (row.case_id, row._mapping.get("cell") or "", row.repetition)
                    if key in wanted:
                        found.append(_case_result(row, str(suite), own.get(key, [])))
        found.sort(key=lambda result: result.timestamp or "")  # about the order they finished in
        return found

    def close(self) -> None:
        """Commit what is pending (the run may have stopped before close_run), then disconnect."""
        try:
            self.flush()
        finally:
            self._engine.dispose()

    # -- people's reviews (agenteval view) ---------------------------------------------------
    def _open_reviews(self) -> bool:
        """Create the reviews table when missing and move the reviews an older version kept in
        `human:review` evaluator results into it; False when it cannot be created (read-only)."""
        from sqlalchemy import inspect
        from sqlalchemy.exc import SQLAlchemyError

        from agenteval.stores.tables import REVIEWS

        if inspect(self._engine).has_table("reviews"):
            return True
        try:
            REVIEWS.create(self._engine, checkfirst=True)
        except SQLAlchemyError:
            return inspect(self._engine).has_table("reviews")  # read-only, or made by another process meanwhile
        self._move_reviews()
        return True

    def _move_reviews(self) -> None:
        from sqlalchemy import delete, insert, select

        from agenteval.stores.tables import EVALUATOR_RESULTS as E
        from agenteval.stores.tables import REVIEWS

        with self._engine.begin() as conn:
            rows = conn.execute(select(E.c.run_id, E.c.details).where(E.c.name == REVIEW_RESULT)).all()
            if not rows:
                return
            seen: set[tuple[str, bytes]] = set()
            moved = []
            for row in rows:  # the same reviews were copied into every cell of the case: kept once
                for item in _legacy_reviews(row.details):
                    key = (row.run_id, orjson.dumps(item, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))
                    if key not in seen:
                        seen.add(key)
                        moved.append(review_row(row.run_id, item))
            moved.sort(key=lambda found: found["time"] or "")  # appended in time order: a later review wins
            if moved:
                conn.execute(insert(REVIEWS), moved)
            conn.execute(delete(E).where(E.c.name == REVIEW_RESULT))

    def add_review(self, run_id: str, review: dict[str, Any]) -> None:
        """Append one (checked) review of a case's cell. Raises StoreError."""
        from sqlalchemy import insert

        from agenteval.stores.tables import REVIEWS

        if not self._reviews_table:
            raise StoreError(f"cannot save a review to {self.url}: the store is read-only here")
        with self._failing("cannot save a review to"), self._engine.begin() as conn:
            conn.execute(insert(REVIEWS).values(**review_row(run_id, review)))

    def reviews(self, run_id: str) -> list[tuple[str, Any]]:
        """Every review of a run as kept, oldest first, each with where it is (for a message): unchecked,
        agenteval.stores.reviews checks them. Those an older version kept in `human:review` results come first."""
        from sqlalchemy import select

        from agenteval.stores.tables import EVALUATOR_RESULTS as E
        from agenteval.stores.tables import REVIEWS

        found: list[tuple[str, Any]] = []
        with self._failing("cannot read"), self._connect() as conn:
            legacy = conn.execute(select(E.c.case_id, E.c.details).where(E.c.run_id == run_id, E.c.name == REVIEW_RESULT).order_by(self._cell_order(E)))
            for row in legacy:
                items = [item for _, item in found]
                found += [(f"the {REVIEW_RESULT} result of case {row.case_id!r}", item) for item in _legacy_reviews(row.details) if item not in items]
            if self._reviews_table:
                rows = conn.execute(select(REVIEWS.c.id, REVIEWS.c.review).where(REVIEWS.c.run_id == run_id).order_by(REVIEWS.c.id))
                found += [(f"reviews row {row.id}", row.review) for row in rows]
        return found

    # -- beyond the run loop: reports, history, feedback ------------------------------------
    def find_run(self, reference: str, suite: str | None = None) -> str:
        """A run id as given, or `latest` (the newest run, of `suite` if given). Raises StoreError."""
        from sqlalchemy import select

        from agenteval.stores.tables import RUNS

        query = select(RUNS.c.run_id)
        if reference == "latest":
            if suite is not None:
                query = query.where(RUNS.c.suite == suite)
            query = query.order_by(RUNS.c.started_at.desc()).limit(1)
        else:
            query = query.where(RUNS.c.run_id == reference)
        with self._failing("cannot read"), self._connect() as conn:
            found = conn.execute(query).scalar()
        if found is None:
            what = f"no run {reference!r}" if reference != "latest" else "no run" + (f" of suite {suite!r}" if suite else "")
            raise StoreError(f"{self.url} has {what}")
        return str(found)

    def summary(self, run_id: str) -> dict[str, Any] | None:
        from sqlalchemy import select

        from agenteval.stores.tables import RUNS

        with self._failing("cannot read"), self._connect() as conn:
            return conn.execute(select(RUNS.c.summary).where(RUNS.c.run_id == run_id)).scalar()

    def refresh_summary(self, run_id: str, summary: dict[str, Any]) -> None:
        """Replace a finished run's summary figures (after human feedback was folded in)."""
        with self._failing("cannot update the summary in"), self._engine.begin() as conn:
            _write_summary(conn, run_id, summary, None)

    def case_keys(self, run_id: str, case_ids: Iterable[str]) -> set[tuple[str, int]]:
        """(case id, repetition) of the given cases that the run holds."""
        from sqlalchemy import select

        from agenteval.stores.tables import CASE_RESULTS

        wanted = list(case_ids)
        found: set[tuple[str, int]] = set()
        with self._failing("cannot read"), self._connect() as conn:
            for start in range(0, len(wanted), FETCH_ROWS):
                rows = conn.execute(
                    select(CASE_RESULTS.c.case_id, CASE_RESULTS.c.repetition)
                    .where(CASE_RESULTS.c.run_id == run_id, CASE_RESULTS.c.case_id.in_(wanted[start : start + FETCH_ROWS]))
                )
                found.update((row.case_id, row.repetition) for row in rows)
        return found

    def evaluator_result(self, run_id: str, case_id: str, repetition: int, name: str) -> EvaluatorResult | None:
        """The named result of a case, in its first cell (feedback names no cell, and is folded
        into every cell the case ran in, as into every such line of a results file)."""
        from sqlalchemy import select

        from agenteval.stores.tables import EVALUATOR_RESULTS as E

        with self._failing("cannot read"), self._connect() as conn:
            columns = [column for column in E.c if ("evaluator_results", column.name) not in self._absent]
            query = select(*columns).where(E.c.run_id == run_id, E.c.case_id == case_id, E.c.repetition == repetition, E.c.name == name)
            query = query.order_by(self._cell_order(E))
            row = conn.execute(query).first()
        return None if row is None else _evaluator_result(row)

    def put_evaluator_results(self, run_id: str, results: Iterable[tuple[str, int, EvaluatorResult]]) -> int:
        """Add or replace (same case, cell and name) evaluator results in every cell the case ran
        in, in one transaction; how many (one per case and result, whatever the cells)."""
        from sqlalchemy import delete, func, insert, select

        from agenteval.stores.tables import CASE_RESULTS as C
        from agenteval.stores.tables import EVALUATOR_RESULTS as E

        count = 0
        with self._failing("cannot save feedback to"), self._engine.begin() as conn:
            for case_id, repetition, result in results:
                cells = conn.execute(select(C.c.cell).where(
                    C.c.run_id == run_id, C.c.case_id == case_id, C.c.repetition == repetition
                ).order_by(self._cell_order(C))).scalars().all()
                for cell in cells:
                    same_case = (E.c.run_id == run_id, E.c.case_id == case_id, E.c.cell == cell, E.c.repetition == repetition)
                    position = conn.execute(select(E.c.position).where(*same_case, E.c.name == result.name)).scalar()
                    if position is None:
                        last = conn.execute(select(func.max(E.c.position)).where(*same_case)).scalar()
                        position = -1 if last is None else last
                        position += 1
                    else:
                        conn.execute(delete(E).where(*same_case, E.c.name == result.name))
                    conn.execute(insert(E), evaluator_rows(run_id, case_id, repetition, [(position, result)], cell))
                count += 1
        return count

    def history_rows(self, suite: str | None, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` runs (of `suite`), oldest first, with counts and means computed in SQL."""
        from sqlalchemy import case, func, select

        from agenteval.stores.tables import CASE_RESULTS as C
        from agenteval.stores.tables import DATASET_METRICS as D
        from agenteval.stores.tables import EVALUATOR_RESULTS as E
        from agenteval.stores.tables import RUNS as R

        passed = func.sum(case((C.c.verdict == "pass", 1), else_=0))
        errored = func.sum(case((C.c.verdict == "error", 1), else_=0))
        query = (
            select(R.c.run_id, R.c.suite, R.c.started_at, R.c.finished_at, R.c.interrupted,
                   func.count(C.c.case_id).label("total"), passed.label("passed"), errored.label("errored"),
                   func.avg(C.c.score).label("mean_score"))
            .select_from(R.outerjoin(C, C.c.run_id == R.c.run_id))
            .group_by(R.c.run_id, R.c.suite, R.c.started_at, R.c.finished_at, R.c.interrupted)
            .order_by(R.c.started_at.desc(), R.c.run_id.desc()).limit(limit)
        )
        if suite is not None:
            query = query.where(R.c.suite == suite)
        with self._failing("cannot read"), self._connect() as conn:
            runs = [
                {
                    "run_id": row.run_id, "suite": row.suite, "started_at": _iso(row.started_at),
                    "finished_at": _iso(row.finished_at), "interrupted": row.interrupted, "total": row.total,
                    "passed": int(row.passed or 0), "errored": int(row.errored or 0),
                    "pass_rate": (row.passed or 0) / row.total if row.total else None,
                    "mean_score": row.mean_score, "evaluators": {}, "fields": {},
                }
                for row in conn.execute(query)
            ][::-1]
            by_id = {run["run_id"]: run for run in runs}
            if not by_id:
                return runs
            evaluator_query = (
                select(E.c.run_id, E.c.name, func.min(E.c.type).label("type"), func.count().label("count"),
                       func.avg(E.c.score).label("mean_score"), func.sum(case((E.c.verdict == "pass", 1), else_=0)).label("passed"))
                .where(E.c.run_id.in_(list(by_id))).group_by(E.c.run_id, E.c.name).order_by(E.c.run_id, func.min(E.c.position))
            )
            from agenteval.stores.history import criteria_figures, shard_of

            fingerprint = () if ("runs", "fingerprint") in self._absent else (R.c.fingerprint,)
            summaries = {}  # each evaluator's criteria, as the run's summary counted them
            for row in conn.execute(select(R.c.run_id, R.c.summary, *fingerprint).where(R.c.run_id.in_(list(by_id)))):
                summaries[row.run_id] = row.summary
                if fingerprint:  # a shard (`--shard 1/2`), as a results folder's summary says it
                    by_id[row.run_id].update(shard_of(row.fingerprint))
            for row in conn.execute(evaluator_query):
                summary = summaries.get(row.run_id)
                counted = (summary.get("evaluators") or {}).get(row.name) if isinstance(summary, dict) else None
                by_id[row.run_id]["evaluators"][row.name] = {
                    "type": row.type, "count": row.count, "mean_score": row.mean_score, "pass_rate": (row.passed or 0) / row.count,
                    **(criteria_figures(counted) if isinstance(counted, dict) else {}),
                }
            if self._reviews_table:  # each reviewer's latest review of a case's cell counts once, as in a reviews file
                from agenteval.stores.tables import REVIEWS as V

                latest = select(V.c.run_id, V.c.case_id, V.c.cell, V.c.repetition, V.c.reviewer).where(
                    V.c.run_id.in_(list(by_id))).distinct().subquery()
                for row in conn.execute(select(latest.c.run_id, func.count()).group_by(latest.c.run_id)):
                    by_id[row[0]]["reviews"] = row[1]
            field_query = (
                select(D.c.run_id, D.c.evaluator, D.c.key, D.c.value)
                .where(D.c.run_id.in_(list(by_id)), D.c.kind == "field", D.c.metric == "accuracy")
                .order_by(D.c.run_id, D.c.evaluator, D.c.key)
            )
            for row in conn.execute(field_query):
                by_id[row.run_id]["fields"].setdefault(row.evaluator, {})[row.key] = row.value
        return runs

    def _connect(self) -> Any:
        from sqlalchemy.exc import SQLAlchemyError

        try:
            return self._engine.connect()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot connect to {self.url}: {reason(exc)}") from None

    @contextmanager
    def _failing(self, doing: str) -> Iterator[None]:
        """A database error (a damaged file, a lock held past the busy timeout, a lost server) as
        the one-line StoreError every command turns into exit 2."""
        from sqlalchemy.exc import SQLAlchemyError

        try:
            yield
        except SQLAlchemyError as exc:
            raise StoreError(f"{doing} {self.url}: {_explained(exc)}") from None


def _engine(url: str, base_dir: Path, environ: Any = None) -> tuple[Any, str]:
    """An engine for a sqlite or postgresql URL (a relative SQLite file is relative to `base_dir`),
    and the URL as messages show it: as given, with the password hidden."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    url = _expanded(url, environ)
    try:
        parsed = make_url(url)
        backend = parsed.get_backend_name()
    except (ArgumentError, ValueError):  # ValueError: e.g. an unclosed IPv6 bracket, `[::1/db`
        raise StoreError(
            f"not a store URL: {hide_password(url)!r} (use sqlite:///runs.db or postgresql://USER:PASSWORD@HOST:5432/DB)"
        ) from None
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise StoreError("a sqlite store needs a file: sqlite:///runs.db (relative) or sqlite:////abs/path/runs.db")
        path = Path(parsed.database).expanduser()
        path = path if path.is_absolute() else base_dir / path
        shown = parsed.set(database=str(path)).render_as_string(hide_password=True)
        if not path.parent.is_dir():
            raise StoreError(f"cannot open store {shown}: the folder {path.parent} does not exist")
        if path.is_dir():
            raise StoreError(f"cannot open store {shown}: {path} is a folder")
        if _read_only(path):
            engine = create_engine("sqlite://", creator=_read_only_connection(path), **_JSON)
            event.listen(engine, "connect", _sqlite_read_settings)
        else:
            engine = create_engine(parsed.set(drivername="sqlite", database=str(path)), **_JSON)
            event.listen(engine, "connect", _sqlite_settings)
        return engine, shown
    if backend == "postgresql":
        try:
            require("psycopg", "a postgresql store (--store)")
        except MissingDependency as exc:
            raise StoreError(str(exc)) from None
        try:
            engine = create_engine(parsed.set(drivername="postgresql+psycopg"), pool_pre_ping=True, **_JSON)
        except (ArgumentError, ValueError) as exc:  # e.g. a port that is not a number
            raise StoreError(f"not a store URL: {hide_password(url)!r}: {exc}") from None
        return engine, parsed.render_as_string(hide_password=True)
    raise StoreError(f"unknown store {parsed.render_as_string(hide_password=True)!r}: use sqlite:///FILE.db or postgresql://USER@HOST/DB")


_ENV_REFERENCE = re.compile(r"\$\{")
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\[\]]*:)([^\s@]*)@")


def _expanded(url: str, environ: Any = None) -> str:
    """`${NAME}` (or `${NAME:-default}`) read from the environment (the run's, when given), so a
    suite's `store:` can name its password without holding it (`postgresql://evals:${PGPASSWORD}@db/evals`)."""
    if not _ENV_REFERENCE.search(url):
        return url
    from agenteval.endpoints.settings import MissingEnvironment, substitute_env

    try:
        return substitute_env(url, environ)
    except MissingEnvironment as exc:
        raise StoreError(f"store URL {hide_password(url)!r}: {exc}") from None


def hide_password(url: str) -> str:
    """The URL with its password, if any, as `***` (for a URL SQLAlchemy cannot parse)."""
    return _URL_PASSWORD.sub(r"\1***@", url)


def _read_only(path: Path) -> bool:
    """A store file that cannot be written where it is (read-only media, an archived CI artifact):
    read-only commands can still read it."""
    return path.is_file() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _read_only_connection(path: Path) -> Any:
    """Opens the file read-only; where no `-shm` file can be made (a read-only folder, and no
    write-ahead log left to read), as immutable, which takes no locks."""
    import sqlite3

    folder_writable = os.access(path.parent, os.W_OK)
    mode = "mode=ro" if folder_writable or Path(f"{path}-wal").exists() else "immutable=1"
    uri = f"file:{quote(str(path))}?{mode}"
    return lambda: sqlite3.connect(uri, uri=True, check_same_thread=False)


def _json_dumps(value: Any) -> str:
    """JSON for a column; strings holding NUL, U+FFFD or U+FFFF are mapped (agenteval.stores.tables),
    a walk only done when the JSON shows one."""
    text = orjson.dumps(value, option=JSON_OPTIONS).decode()
    if "\\u0000" in text or REPLACEMENT in text or ESCAPE in text:
        text = orjson.dumps(json_to_column(value), option=JSON_OPTIONS).decode()
    return text


_MAPPED_BYTES = (REPLACEMENT.encode(), ESCAPE.encode())


def _json_loads(text: Any) -> Any:
    """A JSON column's value. A SQLite file made before columns were declared `JSON_TEXT` may hand
    back a bare number as a number, which is that value."""
    if isinstance(text, (int, float)):
        return text
    value = orjson.loads(text)
    if isinstance(text, str):
        mapped = REPLACEMENT in text or ESCAPE in text
    else:
        mapped = any(marker in text for marker in _MAPPED_BYTES)
    return json_from_column(value) if mapped else value


_JSON: dict[str, Any] = {"json_serializer": _json_dumps, "json_deserializer": _json_loads}


def _sqlite_settings(connection: Any, record: Any) -> None:
    """WAL: readers never block the writer; NORMAL: a commit survives a killed process (not a power cut)."""
    cursor = connection.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", f"busy_timeout={SQLITE_BUSY_MS}", "foreign_keys=ON"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _sqlite_read_settings(connection: Any, record: Any) -> None:
    """A read-only file keeps its journal mode (setting WAL would be a write)."""
    cursor = connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
    cursor.close()


def _explained(exc: BaseException) -> str:
    """`reason`, with what the common SQLite errors mean for the user."""
    text = reason(exc)
    if text == "database is locked":
        return f"database is locked (another process has held it for more than {SQLITE_BUSY_MS / 1000:g} s)"
    if text == "attempt to write a readonly database":
        return "the store is read-only here (read-only commands such as `report` and `history` can read it)"
    return text


def reason(exc: BaseException) -> str:
    """The driver's own first line, not SQLAlchemy's statement dump."""
    original = getattr(exc, "orig", None) or exc
    text = str(original).strip().splitlines()
    return text[0] if text else type(original).__name__


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return _utc(datetime.fromisoformat(text))
    except ValueError:
        return None


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else _utc(moment).isoformat(timespec="microseconds")


def cell_column(target: str | None, prompt: str | None) -> str:
    """A cell as the `cell` key column holds it: "" for the one unnamed cell, else
    `target/prompt` with an empty side for a missing name (`gpt-a/terse`, `gpt-a/`, `/terse`,
    `openai/gpt-4.1/terse`). A target name may hold "/", a prompt name never does, so the last "/"
    splits it back. Raises ResultsWriteError for a name that could not be read back (empty, or a
    prompt holding "/"): a suite's names cannot be (agenteval.suite.models.CELL_NAME)."""
    if target is None and prompt is None:
        return ""
    for kind, name in (("target", target), ("prompt", prompt)):
        if name is not None and (not name or (kind == "prompt" and "/" in name)):
            raise ResultsWriteError(f"a {kind} name {name!r} cannot be stored: cell names are not empty and a prompt's holds no '/'")
    return f"{target or ''}/{prompt or ''}"


def cell_names(cell: str | None) -> tuple[str | None, str | None]:
    """(target, prompt) of a `cell` column value (None, as in a file made before cells: the unnamed cell)."""
    if not cell:
        return None, None
    target, _, prompt = cell.rpartition("/")
    return target or None, prompt or None


def case_row(result: CaseResult) -> dict[str, Any]:
    return {
        "run_id": result.run_id, "case_id": result.case_id, "cell": cell_column(result.target, result.prompt),
        "repetition": result.repetition,
        "timestamp": _parse_time(result.timestamp), "score": result.score, "verdict": result.verdict,
        "error": result.error, "duration_ms": result.duration_ms, "agent_id": result.agent_id,
        "session_id": result.session_id, "tags": result.tags, "metadata": result.metadata,
        "input": result.input, "output": result.output, "usage": result.usage, "expected": result.expected,
        "trace_id": result.trace_id,
    }


def evaluator_rows(
    run_id: str, case_id: str, repetition: int, results: Iterable[tuple[int, EvaluatorResult]], cell: str = ""
) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run_id, "case_id": case_id, "cell": cell, "repetition": repetition, "name": result.name, "position": position,
            "type": result.type, "score": result.score, "verdict": result.verdict, "error": result.error,
            "duration_ms": result.duration_ms, "reasoning": result.reasoning, "hits": result.hits,
            "misses": result.misses, "details": result.details, "criterion": result.criterion,
        }
        for position, result in results
    ]


REVIEW_RESULT = "human:review"
"""Where an older version kept a case's reviews (agenteval.stores.reviews.review_result)."""


def _legacy_reviews(details: Any) -> list[dict[str, Any]]:
    found = details.get("reviews") if isinstance(details, dict) else None
    return [item for item in found if isinstance(item, dict) and isinstance(item.get("reviewer"), str)] if isinstance(found, list) else []


def review_row(run_id: str, review: dict[str, Any]) -> dict[str, Any]:
    """The reviews table's row of one review: its key columns, and the review whole."""
    target, prompt = review.get("target"), review.get("prompt")
    try:
        cell = cell_column(target if isinstance(target, str) else None, prompt if isinstance(prompt, str) else None)
    except ResultsWriteError:
        cell = ""  # a name no suite can give: the review still reads back whole from `review`
    repetition = review.get("repetition")
    return {
        "run_id": run_id, "case_id": str(review.get("case_id")), "cell": cell,
        "repetition": repetition if type(repetition) is int else 0, "reviewer": str(review.get("reviewer")),
        "time": review.get("time") if isinstance(review.get("time"), str) else None, "review": review,
    }


def _evaluator_result(row: Any) -> EvaluatorResult:
    return EvaluatorResult(
        row.name, row.type, row.score, row.verdict, row.hits or [], row.misses or [], row.reasoning, row.details,
        row.error, row.duration_ms or 0.0, row.criterion,
    )


def _case_result(row: Any, suite: str, evaluators: list[EvaluatorResult]) -> CaseResult:
    target, prompt = cell_names(row._mapping.get("cell"))
    return CaseResult(
        row.run_id, suite, row.case_id, row.score, row.verdict, row.output, evaluators, row.error,
        row.duration_ms or 0.0, row.tags or [], row.metadata or {}, usage=row.usage, repetition=row.repetition,
        timestamp=_iso(row.timestamp), input=row.input, agent_id=row.agent_id, session_id=row.session_id,
        expected=row._mapping.get("expected"), target=target, prompt=prompt, trace_id=row._mapping.get("trace_id"),
    )


def _write_summary(conn: Any, run_id: str, summary: dict[str, Any], finished_at: datetime | None) -> None:
    """The run row's figures and the run's dataset_metrics rows, replaced by those of `summary`."""
    from sqlalchemy import delete, insert, update

    from agenteval.stores.tables import DATASET_METRICS, RUNS

    counts = summary.get("counts") or {}
    values: dict[str, Any] = {
        "total": counts.get("total"), "passed": counts.get("passed"), "failed": counts.get("failed"),
        "errored": counts.get("errored"), "pass_rate": summary.get("pass_rate"), "mean_score": summary.get("mean_score"),
        "summary": summary,
    }
    if finished_at is not None:
        values |= {"finished_at": finished_at, "interrupted": bool(summary.get("interrupted"))}
    conn.execute(update(RUNS).where(RUNS.c.run_id == run_id).values(**values))
    conn.execute(delete(DATASET_METRICS).where(DATASET_METRICS.c.run_id == run_id))
    rows = metric_rows(run_id, summary)
    if rows:
        conn.execute(insert(DATASET_METRICS), rows)


def metric_rows(run_id: str, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-field figures and confusion metrics of a summary, one row per number (long form)."""
    rows = []
    for evaluator, paths in (summary.get("fields") or {}).items():
        for path, figures in paths.items():
            rows += [_metric(run_id, evaluator, "field", path, name, value) for name, value in figures.items()]
    for evaluator, metrics in (summary.get("dataset_metrics") or {}).items():
        for attribute, figures in (metrics.get("attributes") or {}).items():
            rows += [_metric(run_id, evaluator, "attribute", attribute, name, value) for name, value in figures.items()]
        rows += [
            _metric(run_id, evaluator, "dataset", "", name, value)
            for name, value in metrics.items() if name != "attributes"
        ]
    return [row for row in rows if row is not None]


def _metric(run_id: str, evaluator: str, kind: str, key: str, name: str, value: Any) -> dict[str, Any] | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return None  # only numbers are metrics
    return {"run_id": run_id, "evaluator": evaluator, "kind": kind, "key": key, "metric": name, "value": value}
