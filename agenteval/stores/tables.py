"""The table layout of SQL stores, one for SQLite and PostgreSQL (SQLAlchemy Core).

runs                one row per run: suite, times, counts, the resolved suite and the summary
case_results        one row per case, cell and repetition: score, verdict, input, output, agent/session
evaluator_results   one row per evaluator per case (cell, repetition), human feedback included (type `human`)
dataset_metrics     run-level figures in long form: per-field accuracy, confusion counts, F1...
reviews             people's reviews (`agenteval view`), appended: one row per review of a case's cell

Tables are created when missing; nothing is ever dropped. A column added in a later version
(`case_results.expected`) is added to an older file's table when the store opens it
(`add_missing_columns`); a file that cannot be written is read without it.

A cell (the `targets:` x `prompts:` pair a case ran in) is the key column `cell`: "" for the one
unnamed cell of an ordinary run, else `target/prompt` with an empty side for a missing name
(`gpt-a/terse`, `gpt-a/`, `/terse`, `openai/gpt-4.1/terse`); a prompt's name holds no "/"
(agenteval.suite.models.CELL_NAME), so the last "/" gives back exactly the target and prompt. A table made before cells gains the column (every
row "") but keeps its primary key (run_id, case_id, repetition): it holds one cell per run, and
the store refuses a run of several cells there (`cells_in_key`). JSON columns hold the same JSON as a
result line (NaN and infinities become null); on SQLite they are declared `JSON_TEXT`, so the
column has text affinity and a bare number (`42`, `1.0`) stays the JSON text it was.

Text gives back what it was given. PostgreSQL text cannot hold NUL, so every text value (key
columns such as `case_id`, evaluator `name` and `suite` included, and every string inside JSON)
is stored with one reversible mapping, the same on both databases: a NUL becomes U+FFFD, and a
U+FFFD or U+FFFF already in the text gets a U+FFFF before it. Reading undoes it, and a value
compared with a column (a case id on `--resume`, a run's suite) is mapped the same way.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    Table,
)
from sqlalchemy import String as _String
from sqlalchemy import Text as _Text
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.types import TypeDecorator

from agenteval.stores.text_mapping import from_column, to_column

class String(TypeDecorator[str]):
    """A text column (a key, a name, an id) that gives back exactly the text it was given."""

    impl = _String
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        return to_column(value) if isinstance(value, str) else value

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        return from_column(value) if isinstance(value, str) else value


class Text(String):
    """A long text column (an error, a judge's reasoning), mapped as `String`."""

    impl = _Text
    cache_ok = True


class StoredJson(TypeDecorator[Any]):
    """A JSON column; the engine's serializer maps its strings (agenteval.stores.sql)."""

    impl = JSON
    cache_ok = True


@compiles(StoredJson, "sqlite")
def _sqlite_json_text(type_: Any, compiler: Any, **kw: Any) -> str:
    """`JSON` gives a SQLite column numeric affinity, which turns the JSON text `1.0` into the
    integer 1; a declared type naming TEXT keeps the text as written."""
    return "JSON_TEXT"


METADATA = MetaData()

RUNS = Table(
    "runs", METADATA,
    Column("run_id", String, primary_key=True),
    Column("suite", String, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),  # null while running, or after a kill
    Column("agenteval_version", String),
    Column("interrupted", Boolean),
    Column("total", Integer),
    Column("passed", Integer),
    Column("failed", Integer),
    Column("errored", Integer),
    Column("pass_rate", Float),
    Column("mean_score", Float),
    Column("config", StoredJson),  # the resolved suite, secrets redacted (the evaluation config snapshot)
    Column("summary", StoredJson),  # what `<results>.summary.json` holds for a file run
    Column("fingerprint", StoredJson),  # what --resume compares (agenteval.resume); added to older files when opened
    Index("runs_by_suite", "suite", "started_at"),
)

CASE_RESULTS = Table(
    "case_results", METADATA,
    Column("run_id", String, primary_key=True),
    Column("case_id", String, primary_key=True),
    Column("cell", String, primary_key=True, nullable=False, server_default=""),  # see the module's docstring
    Column("repetition", Integer, primary_key=True),
    Column("timestamp", DateTime(timezone=True)),
    Column("score", Float, nullable=False),
    Column("verdict", String, nullable=False),
    Column("error", Text),
    Column("duration_ms", Float),
    Column("agent_id", String),
    Column("session_id", String),
    Column("tags", StoredJson),
    Column("metadata", StoredJson),
    Column("input", StoredJson),
    Column("output", StoredJson),
    Column("usage", StoredJson),
    Column("expected", StoredJson),  # the case's reference; added to older files when opened (see `add_missing_columns`)
    Column("trace_id", String),  # the W3C trace id the case's target was sent; added to older files when opened
    ForeignKeyConstraint(["run_id"], ["runs.run_id"]),
    Index("case_results_by_agent", "agent_id"),
    Index("case_results_by_session", "session_id"),
)

EVALUATOR_RESULTS = Table(
    "evaluator_results", METADATA,
    Column("run_id", String, primary_key=True),
    Column("case_id", String, primary_key=True),
    Column("cell", String, primary_key=True, nullable=False, server_default=""),
    Column("repetition", Integer, primary_key=True),
    Column("name", String, primary_key=True),
    Column("position", Integer, nullable=False),  # order within the case
    Column("type", String, nullable=False),
    Column("score", Float, nullable=False),
    Column("verdict", String, nullable=False),
    Column("error", Text),
    Column("duration_ms", Float),
    Column("reasoning", Text),
    Column("hits", StoredJson),
    Column("misses", StoredJson),
    Column("details", StoredJson),
    Column("criterion", StoredJson),
    ForeignKeyConstraint(
        ["run_id", "case_id", "cell", "repetition"],
        ["case_results.run_id", "case_results.case_id", "case_results.cell", "case_results.repetition"],
    ),
    Index("evaluator_results_by_name", "run_id", "name"),
)

DATASET_METRICS = Table(
    "dataset_metrics", METADATA,
    Column("run_id", String, primary_key=True),
    Column("evaluator", String, primary_key=True),
    Column("kind", String, primary_key=True),  # field | attribute | dataset
    Column("key", String, primary_key=True),  # the field path or attribute; "" for dataset-wide figures
    Column("metric", String, primary_key=True),  # accuracy, mean_score, scored, hits, tp, fp, fn, precision, f1...
    Column("value", Float),  # null where undefined (a ratio over nothing)
    ForeignKeyConstraint(["run_id"], ["runs.run_id"]),
)

REVIEWS = Table(
    "reviews", METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),  # append order: a reviewer's later review wins
    Column("run_id", String, nullable=False),
    Column("case_id", String, nullable=False),
    Column("cell", String, nullable=False, server_default=""),
    Column("repetition", Integer, nullable=False),
    Column("reviewer", String, nullable=False),
    Column("time", String),  # ISO 8601 text, as a reviews file holds it
    Column("review", StoredJson, nullable=False),  # the whole review, as one line of RUN.reviews.jsonl
    ForeignKeyConstraint(["run_id"], ["runs.run_id"]),
    Index("reviews_by_run", "run_id", "id"),
)
"""Reviews used to be kept inside each case's `human:review` evaluator result (copied into every
cell); a store opened for writing moves those into this table (`SqlStore._move_reviews`)."""

CORE_TABLES = (RUNS, CASE_RESULTS, EVALUATOR_RESULTS, DATASET_METRICS)


ADDED_COLUMNS = (("case_results", "expected"), ("case_results", "trace_id"), ("runs", "fingerprint"))
"""Columns newer than the first layout: an older database gains them when opened."""

ADDED_KEY_COLUMNS = (("case_results", "cell"), ("evaluator_results", "cell"))
"""Key columns newer than the first layout: an older table gains them (NOT NULL DEFAULT ''), but
its primary key cannot change (see `cells_in_key`)."""


def missing_columns(engine: Any) -> list[tuple[str, str]]:
    """The ADDED_COLUMNS and ADDED_KEY_COLUMNS the database's tables do not have yet."""
    from sqlalchemy import inspect

    inspector = inspect(engine)
    have: dict[str, set[str]] = {}
    missing = []
    for table, column in (*ADDED_COLUMNS, *ADDED_KEY_COLUMNS):
        if table not in have:
            have[table] = {found["name"] for found in inspector.get_columns(table)}
        if column not in have[table]:
            missing.append((table, column))
    return missing


def add_missing_columns(engine: Any) -> list[tuple[str, str]]:
    """Adds the ADDED_COLUMNS an older database lacks (`ALTER TABLE ... ADD COLUMN`, nullable, so
    existing rows read as null) and its ADDED_KEY_COLUMNS (NOT NULL DEFAULT '': existing rows are
    the unnamed cell); returns those still missing (a read-only file). Another process adding the
    same column at the same time is fine: the columns are looked up again."""
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    quote = engine.dialect.identifier_preparer.quote
    for table, column in missing_columns(engine):
        declared = METADATA.tables[table].c[column].type.compile(dialect=engine.dialect)
        if (table, column) in ADDED_KEY_COLUMNS:
            declared += " NOT NULL DEFAULT ''"
        try:
            with engine.begin() as conn:
                conn.execute(text(f"ALTER TABLE {quote(table)} ADD COLUMN {quote(column)} {declared}"))
        except SQLAlchemyError:
            pass  # read-only, or added by another process meanwhile: looked up again below
    return missing_columns(engine)


def cells_in_key(engine: Any) -> bool:
    """Whether the result tables' primary keys hold the `cell` column (tables made since cells
    existed), so one run can hold a case in several cells. Tables made before keep one result per
    (run, case, repetition) whatever their `cell` column says."""
    from sqlalchemy import inspect

    inspector = inspect(engine)
    return all(
        "cell" in (inspector.get_pk_constraint(table).get("constrained_columns") or ())
        for table in ("case_results", "evaluator_results")
    )
