"""Retrieval metrics: equal, bit for bit, to trec_eval's (through pytrec_eval) on generated rankings;
and the `retrieval` evaluator that reads them from answers."""

import random
from pathlib import Path

import pytest
import pytrec_eval  # trec_eval itself, from the dev extra (pytrec-eval-terrier)

from agenteval import retrieval
from agenteval.evaluators import EvalContext
from agenteval.evaluators.retrieval import Retrieval

CUTOFFS = (1, 2, 3, 5, 10, 20, 50)
MEASURES = {
    "P." + ",".join(map(str, CUTOFFS)), "recall." + ",".join(map(str, CUTOFFS)), "success." + ",".join(map(str, CUTOFFS)),
    "map_cut." + ",".join(map(str, CUTOFFS)), "ndcg_cut." + ",".join(map(str, CUTOFFS)),
    "recip_rank", "map", "ndcg", "Rprec",
}


def generated_queries(seed, count):
    """(judgments, ranked ids with repeats, scores with ties or None) for `count` queries: graded and
    binary judgments, ids nobody judged, empty rankings, queries with nothing relevant."""
    rng = random.Random(seed)
    queries = []
    for _ in range(count):
        pool = [f"d{i}" for i in range(rng.randint(1, 40))]
        graded = rng.random() < 0.5
        judged = rng.sample(pool, rng.randint(1, len(pool)))
        judgments = {doc: (rng.choice((0, 0, 1, 2, 3)) if graded else rng.choice((0, 1))) for doc in judged}
        length = 0 if rng.random() < 0.05 else rng.randint(1, 60)
        ids = [rng.choice(pool + ["unjudged-" + str(rng.randint(0, 9))]) for _ in range(length)]
        scores = [float(rng.randint(0, 5)) for _ in ids] if rng.random() < 0.4 else None  # many ties
        queries.append((judgments, ids, scores))
    return queries


def as_trec_run(ids, scores):
    """What trec_eval is given: each id once (trec_eval refuses repeats) with a score; a list's order as
    descending scores; of an id's scores, the best (the rank agenteval keeps)."""
    run = {}
    if scores is None:
        for rank, doc in enumerate(ids):
            run.setdefault(doc, float(len(ids) - rank))
    else:
        for doc, score in zip(ids, scores):
            run[doc] = max(score, run.get(doc, score))
    return run


def ours(judgments, ids, scores):
    ranking = retrieval.ranked_ids(ids, scores)
    grades = retrieval.ranked_grades(ranking, judgments)
    relevant = retrieval.relevant_count(judgments)
    values = {"recip_rank": retrieval.reciprocal_rank(grades), "map": retrieval.average_precision(grades, relevant),
              "ndcg": retrieval.ndcg(grades, judgments), "Rprec": retrieval.r_precision(grades, relevant)}
    for k in CUTOFFS:
        values[f"P_{k}"] = retrieval.precision(grades, k)
        values[f"recall_{k}"] = retrieval.recall(grades, k, relevant)
        values[f"success_{k}"] = retrieval.hit_rate(grades, k)
        values[f"map_cut_{k}"] = retrieval.average_precision(grades, relevant, k)
        values[f"ndcg_cut_{k}"] = retrieval.ndcg(grades, judgments, k)
    return values


def test_every_metric_equals_trec_eval_exactly_on_4000_generated_rankings():
    queries = generated_queries(7, 4000)
    qrels = {str(i): judgments for i, (judgments, _, _) in enumerate(queries)}
    run = {str(i): as_trec_run(ids, scores) for i, (_, ids, scores) in enumerate(queries)}
    reference = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)
    compared = 0
    for i, query in enumerate(queries):
        expected = reference.get(str(i))
        mine = ours(*query)
        if expected is None:  # pytrec_eval leaves out a query with an empty run: trec_eval -c gives it 0s
            assert not query[1] and set(mine.values()) == {0.0}
            continue
        for measure, value in expected.items():
            assert mine[measure] == value, (i, measure, query)
            compared += 1
    assert compared > 4000 * 30


def test_reciprocal_rank_at_k_is_trec_eval_on_the_first_k():
    queries = generated_queries(11, 1500)
    for k in (1, 3, 10):
        qrels = {str(i): judgments for i, (judgments, _, _) in enumerate(queries)}
        run = {str(i): as_trec_run(retrieval.ranked_ids(ids, scores)[:k], None) for i, (_, ids, scores) in enumerate(queries)}
        reference = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
        for i, (judgments, ids, scores) in enumerate(queries):
            grades = retrieval.ranked_grades(retrieval.ranked_ids(ids, scores), judgments)
            assert retrieval.reciprocal_rank(grades, k) == reference.get(str(i), {"recip_rank": 0.0})["recip_rank"]


def test_ties_are_broken_by_id_in_reverse_order_and_repeats_keep_their_best_rank():
    assert retrieval.ranked_ids(["b", "a", "c", "a"], [1.0, 1.0, 2.0, 3.0]) == ["a", "c", "b"]
    assert retrieval.ranked_ids(["x", "y", "x", "z"]) == ["x", "y", "z"]


def test_k_beyond_the_ranking_counts_the_rest_as_not_relevant():
    grades = retrieval.ranked_grades(["a", "b"], {"a": 1, "c": 1})
    assert retrieval.precision(grades, 10) == 0.1
    assert retrieval.recall(grades, 10, 2) == 0.5
    assert retrieval.r_precision(grades, 2) == 0.5


def test_a_query_with_nothing_relevant_is_zero_everywhere():
    judgments = {"a": 0}
    grades = retrieval.ranked_grades(["a", "b"], judgments)
    values = [retrieval.metric(name, grades, judgments, 0, 3 if name in retrieval.TAKES_K else None) for name in retrieval.METRICS]
    assert values == [0.0] * 7


def evaluator(**keys):
    return Retrieval.model_validate({"type": "retrieval", **keys})


def ctx(output, expected):
    return EvalContext("q1", "question", expected, output, {}, Path("."))


METRICS = [{"metric": "ndcg", "k": 3, "min": 0.9}, {"metric": "recall", "k": 2, "min": 0.5}, {"metric": "reciprocal_rank"}]


def test_the_evaluator_reports_each_metric_as_a_criterion_and_gates_on_min():
    result = evaluator(metrics=METRICS, relevant_path="relevant").evaluate(
        ctx({"retrieved": [{"id": "d3"}, {"id": "d7"}, {"id": "d3"}, {"id": 9}]}, {"relevant": {"d7": 2, "9": 1, "d1": 0}})
    )
    grades = [0, 2, 1]
    ndcg = (2 / retrieval.log2(3) + 1 / retrieval.log2(4)) / (2 / retrieval.log2(2) + 1 / retrieval.log2(3))
    assert result.details["criteria"] == {
        "ndcg@3": {"score": ndcg, "verdict": "fail", "min": 0.9},
        "recall@2": {"score": 0.5, "verdict": "pass", "min": 0.5},
        "reciprocal_rank": {"score": 0.5},
    }
    assert ndcg == retrieval.ndcg(grades, {"d7": 2, "9": 1, "d1": 0}, 3)
    assert result.verdict == "fail" and result.score == pytest.approx((ndcg + 0.5 + 0.5) / 3)
    assert result.misses == [f"ndcg@3 {ndcg:.4g} < 0.9"] and result.hits == ["recall@2 0.5 >= 0.5"]
    assert result.details["duplicates"] == 1 and result.details["unjudged"] == 1
    assert result.details["ranking"] == [["d3", None], ["d7", 2], ["9", 1]]


def test_scores_rank_the_list_when_score_key_is_given():
    result = evaluator(metrics=[{"metric": "reciprocal_rank", "min": 1}], score_key="s").evaluate(
        ctx({"retrieved": [{"id": "a", "s": 0.1}, {"id": "b", "s": 0.9}]}, ["b"])
    )
    assert result.verdict == "pass" and result.details["ranking"] == [["b", 1], ["a", None]]


@pytest.mark.parametrize(("output", "expected", "error"), [
    ({"retrieved": "d1"}, ["d1"], "retrieved is str, not a list of ids"),
    ({"retrieved": [1.5]}, ["d1"], "retrieved[0] is 1.5, not an id (a string or an integer)"),
    ({"retrieved": [{"doc": "a"}]}, ["d1"], "retrieved[0].id is missing, not an id (a string or an integer)"),
    ({"retrieved": ["a"]}, {"a": 1.5}, "the grade of 'a' in `expected` is 1.5: a grade is an integer from 0 to 1,000,000"),
    ({"retrieved": ["a"]}, {"a": -1}, "the grade of 'a' in `expected` is -1: a grade is an integer from 0 to 1,000,000"),
    ({"retrieved": ["a"]}, "a", "`expected` holds str: relevant ids are a list of ids or a mapping id: grade"),
    ({"retrieved": ["a"]}, {"relevant": ["a"], "answer": "x"}, "the grade of 'relevant' in `expected` is ['a']: a grade is an integer "
     "from 0 to 1,000,000 (if the relevant ids are under a key of `expected`, name it with `relevant_path`)"),
])
def test_malformed_rankings_and_judgments_are_errors_naming_the_place(output, expected, error):
    result = evaluator(metrics=METRICS).evaluate(ctx(output, expected))
    assert result.verdict == "error" and result.error == error


def test_a_nan_score_is_an_error():
    result = evaluator(metrics=METRICS, score_key="s").evaluate(ctx({"retrieved": [{"id": "a", "s": float("nan")}]}, ["a"]))
    assert result.error == "retrieved[0].s is nan, not a finite number"


def test_nothing_relevant_fails_and_says_why():
    result = evaluator(metrics=METRICS).evaluate(ctx({"retrieved": ["a"]}, []))
    assert result.verdict == "fail" and result.score == 0.0
    assert result.misses[0] == "no relevant id in `expected`: every metric is 0 (trec_eval's value for such a query)"


def test_a_missing_ranking_fails_and_a_case_without_expected_fails():
    assert evaluator(metrics=METRICS).evaluate(ctx({}, ["a"])).misses == ["retrieved (missing)"]
    assert evaluator(metrics=METRICS).evaluate(ctx({"retrieved": []}, None)).misses == ["the case has no `expected`"]


@pytest.mark.parametrize(("metrics", "message"), [
    ([{"metric": "precision", "min": 0.5}], "precision needs a cutoff `k`"),
    ([{"metric": "r_precision", "k": 3, "min": 0.5}], "r_precision takes no `k`"),
    ([{"metric": "ndcg", "k": 3}], "no metric has a `min`"),
    ([{"metric": "ndcg", "k": 3, "min": 0}], "greater than 0"),
    ([{"metric": "ndcg", "k": 3, "min": 0.5}, {"metric": "ndcg", "k": 3}], "ndcg@3 is listed twice"),
    ([{"metric": "mrr", "min": 0.5}], "reciprocal_rank"),
])
def test_config_mistakes_are_load_errors(metrics, message):
    with pytest.raises(ValueError, match=message):
        evaluator(metrics=metrics)


def test_evaluate_reads_only_the_ranks_it_needs_and_gives_the_same_numbers():
    rng = random.Random(5)
    choices = [(name, k) for name in retrieval.METRICS for k in ((None, 1, 3, 10) if name in retrieval.TAKES_K else (None,))
               if not (k is None and name in retrieval.NEEDS_K)]
    for judgments, ids, scores in generated_queries(9, 1500):
        chosen = rng.sample(choices, rng.randint(1, 4))
        ranking = retrieval.ranked_ids(ids, scores)
        grades = retrieval.ranked_grades(ranking, judgments)
        relevant = retrieval.relevant_count(judgments)
        assert retrieval.evaluate(ids, judgments, chosen, scores) == [
            retrieval.metric(name, grades, judgments, relevant, k) for name, k in chosen], (chosen, ids)


def test_each_metric_has_its_mean_per_run_and_per_cell_in_the_summary(tmp_path):
    import json

    from conftest import run_cli

    (tmp_path / "s.yaml").write_text(
        "name: cells-retrieval\ntargets:\n  bm25: {type: recorded}\n  dense: {type: recorded}\n"
        "evaluators:\n  - {type: retrieval, metrics: [{metric: ndcg, k: 3, min: 0.7}, {metric: reciprocal_rank}]}\n"
        "cases:\n  - {id: q1, expected: [a]}\n  - {id: q2, expected: [b]}\n"
    )
    answers = [("q1", "bm25", ["x", "a"]), ("q2", "bm25", ["b"]), ("q1", "dense", ["a"]), ("q2", "dense", ["b", "x"])]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"id": i, "target": t, "output": {"retrieved": r}}) + "\n" for i, t, r in answers))
    done = run_cli("run", "s.yaml", "--predictions", "p.jsonl", "-o", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    ndcg_bm25 = (1 / retrieval.log2(3) + 1.0) / 2
    assert {name: figures["mean_score"] for name, figures in summary["evaluators"]["retrieval"]["criteria"].items()} == {
        "ndcg@3": pytest.approx((ndcg_bm25 * 2 + 2) / 4), "reciprocal_rank": 0.875}
    cells = {cell["label"]: {k: v["mean_score"] for k, v in cell["evaluators"]["retrieval"]["criteria"].items()} for cell in summary["cells"]}
    assert cells == {"bm25": {"ndcg@3": pytest.approx(ndcg_bm25), "reciprocal_rank": 0.75}, "dense": {"ndcg@3": 1.0, "reciprocal_rank": 1.0}}
    assert "retrieval: reciprocal_rank" in done.stdout + done.stderr
