"""The table layout of SQL stores, one for SQLite and PostgreSQL (SQLAlchemy Core).

runs                one row per run: suite, times, counts, the resolved suite and the summary
case_results        one row per case (and repetition): score, verdict, input, output, agent/session
evaluator_results   one row per evaluator per case, human feedback included (type `human`)
dataset_metrics     run-level figures in long form: per-field accuracy, confusion counts, F1...

Tables are created when missing; nothing is ever dropped. JSON columns hold the same JSON as a
result line (NaN and infinities become null).
"""

from __future__ import annotations

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
    String,
    Table,
    Text,
)

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
    Column("config", JSON),  # the resolved suite, secrets redacted (the evaluation config snapshot)
    Column("summary", JSON),  # what `<results>.summary.json` holds for a file run
    Index("runs_by_suite", "suite", "started_at"),
)

CASE_RESULTS = Table(
    "case_results", METADATA,
    Column("run_id", String, primary_key=True),
    Column("case_id", String, primary_key=True),
    Column("repetition", Integer, primary_key=True),
    Column("timestamp", DateTime(timezone=True)),
    Column("score", Float, nullable=False),
    Column("verdict", String, nullable=False),
    Column("error", Text),
    Column("duration_ms", Float),
    Column("agent_id", String),
    Column("session_id", String),
    Column("tags", JSON),
    Column("metadata", JSON),
    Column("input", JSON),
    Column("output", JSON),
    Column("usage", JSON),
    ForeignKeyConstraint(["run_id"], ["runs.run_id"]),
    Index("case_results_by_agent", "agent_id"),
    Index("case_results_by_session", "session_id"),
)

EVALUATOR_RESULTS = Table(
    "evaluator_results", METADATA,
    Column("run_id", String, primary_key=True),
    Column("case_id", String, primary_key=True),
    Column("repetition", Integer, primary_key=True),
    Column("name", String, primary_key=True),
    Column("position", Integer, nullable=False),  # order within the case
    Column("type", String, nullable=False),
    Column("score", Float, nullable=False),
    Column("verdict", String, nullable=False),
    Column("error", Text),
    Column("duration_ms", Float),
    Column("reasoning", Text),
    Column("hits", JSON),
    Column("misses", JSON),
    Column("details", JSON),
    Column("criterion", JSON),
    ForeignKeyConstraint(["run_id", "case_id", "repetition"], ["case_results.run_id", "case_results.case_id", "case_results.repetition"]),
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
