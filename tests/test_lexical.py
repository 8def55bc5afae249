"""The lexical suite: text_similarity, keyword_coverage, sentiment and toxicity."""

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from afinn import Afinn
from pydantic import TypeAdapter, ValidationError
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler, Levenshtein
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from agenteval.evaluators import EvalContext, EvaluatorSpec
from agenteval.evaluators.text.keywords import finder
from agenteval.evaluators.text.similarity import sorensen_dice
from agenteval.evaluators.text.toxicity import DEFAULT_LIST_FILE, mask, read_terms, trie_pattern
from agenteval.extras import package_folder
from agenteval.suite.loader import SuiteInvalid, load_suite

from conftest import write

SPEC = TypeAdapter(EvaluatorSpec)
HUGE = "The refund policy is clear and the team was helpful. " * 20_000  # about 1 million characters


def make(kind, **config):
    return SPEC.validate_python({"type": kind, **config})


def ctx(output, expected=None, input=None, metadata=None):
    return EvalContext("c", input, expected, output, metadata or {}, Path("."))


def check(kind, answer, expected=None, /, **config):
    return make(kind, **config).evaluate(ctx(answer, expected))


# --- text_similarity -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "value"),
    [
        ("night", "nacht", 0.25),        # ni ig gh ht / na ac ch ht: one shared bigram of 8
        ("context", "contact", 0.5),     # co on nt share; te ex xt vs ta ac ct: 2 x 3 / 12
        ("aaaa", "aa", 0.5),             # repeats count: aa x3 vs aa x1
        ("café", "cafe", 2 * 2 / 6),     # ca af shared; fé vs fe differ
        ("", "", 1.0),                   # equal texts, even empty
        ("a", "a", 1.0),
        ("a", "b", 0.0),                 # no bigrams
        ("ab", "", 0.0),
        ("abc", "abc", 1.0),
    ],
)
def test_sorensen_dice_on_character_bigrams(a, b, value):
    assert sorensen_dice(a, b) == pytest.approx(value)
    assert sorensen_dice(b, a) == pytest.approx(value)


@pytest.mark.parametrize(
    ("algorithm", "library"),
    [
        ("levenshtein", Levenshtein.normalized_similarity),
        ("jaro_winkler", JaroWinkler.normalized_similarity),
        ("token_set", lambda a, b: fuzz.token_set_ratio(a, b) / 100),
    ],
)
def test_rapidfuzz_algorithms_score_what_rapidfuzz_says(algorithm, library):
    candidate, reference = "The  Refund takes five business days", "refund takes 5 business days"
    result = check("text_similarity", candidate, reference=reference, algorithm=algorithm, threshold=0.5)
    normalized = "the refund takes five business days"  # default: case folded, whitespace folded
    assert result.score == pytest.approx(library(normalized, reference))
    assert result.details["similarity"] == result.score
    assert result.details["algorithm"] == algorithm
    exact = check("text_similarity", candidate, reference=reference, algorithm=algorithm, case_sensitive=True, normalize_whitespace=False)
    assert exact.score == pytest.approx(library(candidate, reference))


def test_similarity_defaults_to_dice_ignoring_case_and_whitespace():
    result = check("text_similarity", "Hello   WORLD", reference="hello world")
    assert (result.score, result.verdict, result.hits) == (1.0, "pass", ["answer (1.000)"])
    assert check("text_similarity", "Hello   WORLD", reference="hello world", case_sensitive=True).score < 1.0
    assert check("text_similarity", "Hello   WORLD", reference="hello world", normalize_whitespace=False).score < 1.0


def test_similarity_passes_at_the_threshold():
    value = sorensen_dice("night", "nacht")
    assert check("text_similarity", "night", reference="nacht", threshold=0.25).verdict == "pass"
    result = check("text_similarity", "night", reference="nacht", threshold=0.26)
    assert (result.score, result.verdict, result.misses) == (value, "fail", ["answer (0.250 < 0.26)"])
    assert check("text_similarity", "night", reference="nacht").verdict == "fail"  # default threshold 0.8


def test_similarity_takes_the_best_of_several_references_and_reads_them_from_expected():
    expected = {"answers": ["Paris", "Paris, France"], "capital": "Paris"}
    result = check("text_similarity", {"a": "paris france"}, expected, path="a", reference_path="answers")
    assert result.details["reference"] == "Paris, France"
    assert result.score == pytest.approx(sorensen_dice("paris france", "paris, france"))
    assert check("text_similarity", {"capital": "Pariss"}, expected, path="capital").score == pytest.approx(sorensen_dice("pariss", "paris"))
    assert check("text_similarity", {"capital": "x"}, {}, path="capital").misses == ["expected capital (no reference: missing)"]


def test_similarity_of_unicode_empty_and_huge_texts():
    assert check("text_similarity", "Ünïcödé", reference="ünïcödé").score == 1.0
    assert check("text_similarity", "", reference="").score == 1.0
    assert check("text_similarity", "", reference="something").verdict == "fail"
    assert check("text_similarity", 3, reference="3").misses == ["answer (type mismatch: number, not a string)"]
    assert check("text_similarity", HUGE, reference=HUGE + " Thanks.").score > 0.99
    assert check("text_similarity", HUGE, reference=HUGE[::-1], algorithm="token_set", threshold=0).score == pytest.approx(
        fuzz.token_set_ratio(HUGE.lower().strip(), HUGE[::-1].lower().strip()) / 100
    )


# --- keyword_coverage ----------------------------------------------------------------------------------------


def test_keyword_coverage_scores_the_share_found_and_names_hits_and_misses():
    result = check("keyword_coverage", "We issued a Refund; it arrives within 5 days.", keywords=["refund", "5 days", "apology"])
    assert (result.score, result.verdict) == (pytest.approx(2 / 3), "partial")
    assert (result.hits, result.misses) == (["refund", "5 days"], ["apology"])
    assert result.details == {"found": 2, "total": 3}
    assert result.reasoning == "2/3 keywords found"


def test_a_keyword_given_as_a_list_is_found_through_any_synonym():
    result = check("keyword_coverage", "Your reimbursement is on its way", keywords=[["refund", "reimbursement"], ["sorry", "apologize"]])
    assert (result.hits, result.misses, result.score) == (["reimbursement"], ["sorry | apologize"], 0.5)


def test_keyword_options_whole_word_case_and_whitespace():
    text = "The category of CAT food, next\n  day"
    assert check("keyword_coverage", text, keywords=["cat"]).score == 1.0              # inside "category" and "CAT"
    assert check("keyword_coverage", text, keywords=["cat"], whole_word=True).score == 1.0  # "CAT" as a word
    assert check("keyword_coverage", text, keywords=["cat"], whole_word=True, case_sensitive=True).score == 0.0
    assert check("keyword_coverage", text, keywords=["next day"]).score == 1.0          # whitespace folded by default
    assert check("keyword_coverage", text, keywords=["next day"], normalize_whitespace=False).score == 0.0
    assert check("keyword_coverage", "we use C++ and C#", keywords=["c++", "c#", "c"], whole_word=True).score == 1.0
    assert check("keyword_coverage", "Grüße aus Zürich", keywords=["GRÜSSE", "zürich"], whole_word=True).score == 1.0


def test_whole_word_finder_agrees_with_the_regular_expression_it_replaces():
    rng = random.Random(11)
    alphabet = "ab_ -+é1."
    for _ in range(3000):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3)))
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        expected = re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text) is not None
        assert finder(word, True)(text) == expected, (word, text)


@pytest.mark.parametrize(
    ("keywords_path", "where"),
    [("expected.keywords", "expected"), ("input.topics", "input"), ("metadata.must_mention", "metadata")],
)
def test_keywords_come_from_the_expected_answer_the_input_or_metadata(keywords_path, where):
    data = {"expected": {"keywords": ["refund", ["days", "weeks"]]}, "input": {"topics": ["refund", ["days", "weeks"]]},
            "metadata": {"must_mention": ["refund", ["days", "weeks"]]}}
    evaluator = make("keyword_coverage", keywords_path=keywords_path)
    result = evaluator.evaluate(ctx("refund in 2 weeks", data["expected"], data["input"], data["metadata"]))
    assert (result.score, result.hits) == (1.0, ["refund", "weeks"])
    other = {k: {} for k in data}
    other[where] = data[where]
    assert evaluator.evaluate(ctx("nothing", other["expected"], other["input"], other["metadata"])).misses == ["refund", "days | weeks"]


def test_keywords_missing_or_malformed_in_the_case_fail_with_the_reason():
    evaluator = make("keyword_coverage", keywords_path="expected.keywords")
    for expected, reason in [
        ({}, "missing"), ({"keywords": []}, "an empty list"), ({"keywords": 3}, "number, not a list"),
        ({"keywords": ["a", 3]}, "number in the list, not a keyword or a list of synonyms"), ({"keywords": [""]}, "an empty keyword in the list"),
    ]:
        result = evaluator.evaluate(ctx("text", expected))
        assert (result.score, result.verdict, result.misses) == (0.0, "fail", [f"expected.keywords (no keywords: {reason})"])
    assert evaluator.evaluate(ctx("a refund", {"keywords": "refund"})).score == 1.0  # one string is one keyword


def test_keyword_config_errors():
    for config, message in [
        ({}, "give `keywords` or `keywords_path`, one of them"),
        ({"keywords": ["a"], "keywords_path": "expected.k"}, "give `keywords` or `keywords_path`, one of them"),
        ({"keywords": []}, "must not be empty"),
        ({"keywords": [["a", ""]]}, "must not be empty"),
        ({"keywords_path": "output.words"}, "must start with expected, input or metadata"),
    ]:
        with pytest.raises(ValidationError, match=re.escape(message)):
            make("keyword_coverage", **config)


def test_keywords_in_empty_unicode_and_huge_texts():
    assert check("keyword_coverage", "", keywords=["a"]).verdict == "fail"
    assert check("keyword_coverage", "naïve café ☕", keywords=["CAFÉ", "☕"]).score == 1.0
    assert check("keyword_coverage", HUGE + " zebra", keywords=["zebra", "helpful", "absent"], whole_word=True).score == pytest.approx(2 / 3)


# --- sentiment -------------------------------------------------------------------------------------------------

VADER = SentimentIntensityAnalyzer()
TEXTS = {
    "positive": "The support team was wonderful and fixed my problem quickly. Thank you!",
    "negative": "This is terrible, the worst service I have ever had. I am furious.",
    "neutral": "The package ships on Tuesday from the warehouse in Leeds.",
}


@pytest.mark.parametrize("tone", list(TEXTS))
def test_vader_figures_are_the_library_s(tone):
    text = TEXTS[tone]
    direct = VADER.polarity_scores(text)
    result = check("sentiment", text)
    assert result.details["compound"] == direct["compound"]
    assert {k: result.details[k] for k in ("pos", "neu", "neg")} == {k: direct[k] for k in ("pos", "neu", "neg")}
    assert result.score == pytest.approx((direct["compound"] + 1) / 2)
    assert result.details["category"] == tone
    assert (result.verdict, result.hits) == ("pass", [f"answer is {tone}"])  # a measurement without `expect`


def test_afinn_figures_are_the_library_s():
    afinn = Afinn(language="en")
    text = TEXTS["negative"]
    result = check("sentiment", text, analyzer="afinn")
    words = len(afinn.split(text))
    assert result.details["afinn_score"] == afinn.score(text) == -9.0
    assert result.details["words"] == words == 13
    assert result.details["comparative"] == pytest.approx(-9 / 13)
    assert result.details["polarity"] == pytest.approx(-9 / 13 / 5)
    assert result.score == pytest.approx((1 - 9 / 13 / 5) / 2)
    assert result.details["category"] == "negative"


@pytest.mark.parametrize(
    "text",
    [
        "I can't stand this. NOT good at all!!",
        "A once-in-a-lifetime, game-changing   self-confident\nwell-being retreat",
        "Good good GOOD; bad.",
        "nothing scored here",
        "Cover-up? short-sightedness, son-of-a-bitch, self abuse and self-abuse",
        "Ünïcode naïve wonderful café",
    ],
)
def test_afinn_scores_words_and_phrases_as_the_library_does(text):
    afinn = Afinn(language="en")
    details = check("sentiment", text, analyzer="afinn").details
    assert (details["afinn_score"], details["words"]) == (afinn.score(text), len(afinn.split(text)))


def test_output_picks_the_reported_value():
    text = TEXTS["positive"]
    compound = VADER.polarity_scores(text)["compound"]
    assert check("sentiment", text, output="raw").details["value"] == compound
    assert check("sentiment", text, output="normalized").details["value"] == pytest.approx((compound + 1) / 2)
    category = check("sentiment", text, output="category")
    assert (category.details["value"], category.score) == ("positive", 1.0)
    assert check("sentiment", TEXTS["neutral"], output="category").score == 0.5
    assert check("sentiment", TEXTS["negative"], output="category").score == 0.0
    assert check("sentiment", TEXTS["negative"], analyzer="afinn", output="raw").details["value"] == -9.0


def test_thresholds_decide_the_category():
    text = "It is okay."
    compound = VADER.polarity_scores(text)["compound"]
    assert 0.05 < compound < 0.5
    assert check("sentiment", text).details["category"] == "positive"
    assert check("sentiment", text, positive_above=0.5).details["category"] == "neutral"
    assert check("sentiment", text, positive_above=0.9, negative_below=0.5).details["category"] == "negative"
    with pytest.raises(ValidationError, match=r"`negative_below` \(0.5\) is above `positive_above` \(0.1\)"):
        make("sentiment", positive_above=0.1, negative_below=0.5)


@pytest.mark.parametrize(
    ("expect", "passes"),
    [
        ("positive", {"positive"}), ("negative", {"negative"}), ("neutral", {"neutral"}),
        ("not_negative", {"positive", "neutral"}),
    ],
)
def test_expect_makes_it_a_pass_fail_check(expect, passes):
    for tone, text in TEXTS.items():
        result = check("sentiment", text, expect=expect)
        wanted = expect.replace("_", " ")
        if tone in passes:
            assert (result.score, result.verdict, result.hits) == (1.0, "pass", [f"answer is {tone} (expected {wanted})"])
        else:
            assert (result.score, result.verdict, result.misses) == (0.0, "fail", [f"answer is {tone} (expected {wanted})"])


def test_sentiment_of_empty_unicode_non_string_and_long_texts():
    assert check("sentiment", "").details["compound"] == 0.0
    assert check("sentiment", "", analyzer="afinn").details == {
        "analyzer": "afinn", "value": 0.5, "category": "neutral", "normalized": 0.5,
        "afinn_score": 0.0, "words": 0, "comparative": 0.0, "polarity": 0.0,
    }
    assert check("sentiment", "I love it 😍").details["compound"] == VADER.polarity_scores("I love it 😍")["compound"]
    assert check("sentiment", {"a": 1}).misses == ["answer (type mismatch: object, not a string)"]
    too_long = check("sentiment", "good " * 5000, max_chars=20_000)
    assert (too_long.verdict, too_long.error) == ("error", "answer has 25000 characters, more than max_chars (20000)")
    long_text = HUGE[:60_000]
    long_afinn = check("sentiment", long_text, analyzer="afinn", max_chars=len(long_text))
    assert long_afinn.details["afinn_score"] == Afinn().score(long_text)
    assert check("sentiment", HUGE, analyzer="afinn", max_chars=len(HUGE)).details["afinn_score"] == 3 * 20_000  # clear +1, helpful +2


# --- toxicity ---------------------------------------------------------------------------------------------------


def test_terms_match_whole_words_ignoring_case_by_default():
    result = check("toxicity", "You are an IDIOT, an idiot and a moron.", terms=["idiot", "moron", "jerk"])
    assert (result.score, result.verdict) == (0.0, "fail")
    assert result.misses == ["i**** (2x)", "m****"]
    assert result.details == {"terms_checked": 3, "matches": 3}
    assert check("toxicity", "a classic classroom", terms=["ass"]).verdict == "pass"
    clean = check("toxicity", "Thanks for asking!", terms=["idiot", "moron"])
    assert (clean.score, clean.verdict, clean.hits) == (1.0, "pass", ["answer: none of 2 terms found"])


def test_toxicity_options():
    assert check("toxicity", "a classic classroom", terms=["ass"], whole_word=False).misses == ["a** (2x)"]
    assert check("toxicity", "IDIOT", terms=["idiot"], case_sensitive=True).verdict == "pass"
    assert check("toxicity", "shut\n   up", terms=["shut up"]).misses == ["s******"]
    assert check("toxicity", "shut\n   up", terms=["shut up"], normalize_whitespace=False).verdict == "pass"
    assert check("toxicity", "you @$$!", terms=["@$$"]).misses == ["@**"]  # terms with non-word characters


def test_longest_term_wins_and_prefixes_still_match():
    assert check("toxicity", "dumbass", terms=["dumb", "dumbass", "ass"]).misses == ["d******"]
    assert check("toxicity", "dumb and dumber", terms=["dumb", "dumber"]).misses == ["d***", "d*****"]


def test_trie_pattern_matches_exactly_its_terms():
    rng = random.Random(7)
    alphabet = "ab c-é"
    for _ in range(200):
        terms = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 12))})
        pattern = re.compile(trie_pattern(terms))
        for term in terms:
            assert pattern.fullmatch(term), (terms, term)
        for _ in range(30):
            other = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
            assert bool(pattern.fullmatch(other)) == (other in terms), (terms, other)


def test_mask_keeps_the_first_letter():
    assert [mask("damn"), mask("a"), mask("2 girls")] == ["d***", "a", "2******"]


def test_default_list_is_better_profanity_s_word_list():
    listed = read_terms((package_folder("better_profanity", "test") / DEFAULT_LIST_FILE).read_text())
    assert len(listed) > 800
    evaluator = make("toxicity", default_list=True)
    assert evaluator.evaluate(ctx("Have a nice day, thank you.")).verdict == "pass"
    for term in listed[::50]:
        result = evaluator.evaluate(ctx(f"well {term.upper()} indeed"))
        assert result.misses == [mask(term)], term


def test_terms_file_next_to_the_suite_with_comments(tmp_path, monkeypatch):
    write(tmp_path, "lists/banned.txt", "# house rules\nidiot\n\n  moron  \n")
    suite = write(tmp_path, "suite.yaml", """
        name: t
        evaluators: [{type: toxicity, terms_file: lists/banned.txt, terms: [jerk]}]
        cases: [{id: c, expected: 1, output: x}]
    """)
    monkeypatch.chdir(tmp_path / "lists")
    evaluator = load_suite(suite).suite.evaluators[0]
    assert evaluator.evaluate(ctx("moron! jerk!")).misses == ["m****", "j***"]  # in order of appearance
    assert evaluator.evaluate(ctx("# house rules")).verdict == "pass"


def test_toxicity_config_errors_at_load(tmp_path):
    write(tmp_path, "empty.txt", "# nothing yet\n")
    suite = write(tmp_path, "suite.yaml", """
        name: t
        evaluators:
          - {name: a, type: toxicity}
          - {name: b, type: toxicity, terms_file: missing.txt}
          - {name: c, type: toxicity, terms_file: empty.txt}
          - {name: d, type: toxicity, terms: ["ok", " "]}
        cases: [{id: c, expected: 1, output: x}]
    """)
    with pytest.raises(SuiteInvalid) as caught:
        load_suite(suite)
    assert [p.render().replace(str(tmp_path), "<dir>") for p in caught.value.problems] == [
        "<dir>/suite.yaml:3: evaluators[0]: give `terms`, `terms_file` or `default_list: true`",
        "<dir>/suite.yaml:4: evaluators[1].terms_file: terms file not found: missing.txt (looked for <dir>/missing.txt)",
        "<dir>/suite.yaml:5: evaluators[2].terms_file: terms file empty.txt lists no terms",
        "<dir>/suite.yaml:6: evaluators[3].terms: terms must not be empty or blank",
    ]


def test_toxicity_on_empty_unicode_and_huge_texts():
    assert check("toxicity", "", terms=["x"]).verdict == "pass"
    assert check("toxicity", "Du Blödmann!", terms=["blödmann"]).misses == ["b*******"]
    evaluator = make("toxicity", default_list=True)
    assert evaluator.evaluate(ctx(HUGE)).verdict == "pass"
    assert evaluator.evaluate(ctx(HUGE + " bullshit")).misses == ["b*******"]


# --- without the `text` extra ------------------------------------------------------------------------------------


def test_without_the_text_extra_the_run_answers_error_with_the_install_hint(tmp_path):
    """With vaderSentiment, afinn and better-profanity unimportable: a load-time error naming each
    evaluator and the install (exit 2, no case runs); where the suite is built without the checks
    (as a Ray worker builds it), each evaluator's verdict is error with the same hint."""
    suite = write(tmp_path, "s.yaml", """
        name: t
        evaluators:
          - {name: tone, type: sentiment}
          - {name: tone_afinn, type: sentiment, analyzer: afinn}
          - {name: swearing, type: toxicity, default_list: true}
          - {name: mentions, type: keyword_coverage, keywords: [refund]}
        cases: [{id: a, expected: null, output: "a refund"}]
    """)
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nfor name in ('vaderSentiment', 'afinn', 'better_profanity'):\n    sys.modules[name] = None\n"
    )
    env = {**os.environ, "PYTHONPATH": str(blocker)}
    validated = subprocess.run([sys.executable, "-m", "agenteval", "validate", str(suite)], capture_output=True, text=True, env=env, timeout=60)
    assert validated.returncode == 2, validated.stderr
    errors = [line.split(": ", 1)[1] for line in validated.stderr.splitlines()]
    assert errors == [
        "evaluators[0].analyzer: evaluator 'tone' (sentiment): sentiment (analyzer: vader) needs vaderSentiment, which is not installed: pip install 'agenteval[text]'",
        "evaluators[1].analyzer: evaluator 'tone_afinn' (sentiment): sentiment (analyzer: afinn) needs afinn, which is not installed: pip install 'agenteval[text]'",
        "evaluators[2].default_list: evaluator 'swearing' (toxicity): toxicity (default_list) needs better-profanity, which is not installed: pip install 'agenteval[text]'",
        "3 errors",
    ]
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", str(suite), "-o", "-", "-q"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert [line.split(": ", 1)[1] for line in done.stderr.splitlines()][:3] == errors[:3]
    unchecked = (
        "import json, sys\nfrom pathlib import Path\nfrom agenteval.evaluators import EvalContext\n"
        "from agenteval.evaluators.base import run_evaluator\nfrom agenteval.suite.loader import load_definition\n"
        "loaded = load_definition(Path(sys.argv[1]))\nctx = EvalContext('a', None, None, 'a refund', {}, loaded.base_dir)\n"
        "print(json.dumps([{'name': e.label, **{k: getattr(r, k) for k in ('verdict', 'error')}} for e in loaded.suite.evaluators for r in [run_evaluator(e, ctx)]]))"
    )
    done = subprocess.run([sys.executable, "-c", unchecked, str(suite)], capture_output=True, text=True, env=env, timeout=60)
    results = {e["name"]: e for e in json.loads(done.stdout)}
    assert results["tone"]["error"] == "sentiment (analyzer: vader) needs vaderSentiment: pip install 'agenteval[text]'"
    assert results["tone_afinn"]["error"] == "sentiment (analyzer: afinn) needs afinn: pip install 'agenteval[text]'"
    assert results["swearing"]["error"] == "toxicity (default_list) needs better-profanity: pip install 'agenteval[text]'"
    assert results["mentions"]["verdict"] == "pass"
