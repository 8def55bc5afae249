import pytest

from agenteval.paths import MISSING, compile_path, dotted_key, format_path, resolve


def test_dot_path_compiles_to_keys():
    assert compile_path("invoice.vendor.address.city") == ("invoice", "vendor", "address", "city")


def test_array_indexes_compile_to_ints():
    assert compile_path("invoice.line_items[0].amount") == ("invoice", "line_items", 0, "amount")
    assert compile_path("grid[1][2]") == ("grid", 1, 2)


def test_malformed_paths_do_not_compile():
    for bad in ("invoice..total", "", ".a", "a.", "a[x]", "a[", "a]b", " a", "[0]x", "[0].", "[0]..a", "[]"):
        assert compile_path(bad) is None, bad


def test_resolve_nested_object():
    data = {"invoice": {"vendor": {"address": {"city": "Seattle"}}}}
    assert resolve(data, compile_path("invoice.vendor.address.city")) == "Seattle"


def test_resolve_array_index():
    data = {"invoice": {"line_items": [{"amount": 50.00}, {"amount": 75.00}]}}
    assert resolve(data, compile_path("invoice.line_items[0].amount")) == 50.00
    assert resolve(data, compile_path("invoice.line_items[1].amount")) == 75.00


def test_absent_path_is_missing_not_an_error():
    data = {"invoice": {"total": 100}}
    assert resolve(data, compile_path("invoice.vendor.name")) is MISSING
    assert resolve(data, compile_path("invoice.total.cents")) is MISSING
    assert resolve(data, compile_path("invoice[0]")) is MISSING
    assert resolve({"items": [1]}, compile_path("items[5]")) is MISSING
    assert resolve(None, compile_path("a")) is MISSING
    assert resolve("text", compile_path("a")) is MISSING


def test_null_is_distinct_from_missing():
    assert resolve({"total": None}, ("total",)) is None
    assert resolve({}, ("total",)) is MISSING


def test_a_dotted_number_is_an_object_key_or_a_list_index():
    assert resolve({"a": {"0": "zero"}}, compile_path("a.0")) == "zero"
    assert resolve({"a": ["zero"]}, compile_path("a.0")) == "zero"
    assert resolve({"a": ["zero"]}, compile_path("a.1")) is MISSING
    assert resolve({"a": "text"}, compile_path("a.0")) is MISSING


def test_lodash_style_paths_resolve_like_bracket_paths():
    data = {"items": [{"amount": 50.0}, {"amount": 75.0}]}
    assert resolve(data, compile_path("items.1.amount")) == resolve(data, compile_path("items[1].amount")) == 75.0
    assert compile_path("[0].amount") == (0, "amount")
    assert resolve(data["items"], compile_path("[0].amount")) == 50.0
    assert resolve([[1, 2]], compile_path("[0][1]")) == 2
    assert resolve({"0": {"amount": 1}}, compile_path("[0].amount")) is MISSING  # a bracket index is never a key


def test_a_dotted_number_with_a_leading_zero_is_only_a_key():
    assert resolve({"a": {"01": "key"}}, compile_path("a.01")) == "key"
    assert resolve({"a": ["x", "y"]}, compile_path("a.01")) is MISSING


@pytest.mark.parametrize(
    ("path", "keys"),
    [
        ("['a.b']", ("a.b",)),
        ('["a.b"].c[0]', ("a.b", "c", 0)),
        ("invoice['net.amount']", ("invoice", "net.amount")),
        ("a['x\\'y']", ("a", "x'y")),
        ("['0']", ("0",)),
    ],
)
def test_a_quoted_bracket_segment_is_one_key_with_dots_in_it(path, keys):
    assert compile_path(path) == keys
    assert compile_path(format_path(keys)) == keys


@pytest.mark.parametrize("path", ["a.['b']", "['a'", "['a']x", "[\"a']", "a..b", "a.", "[0]x"])
def test_malformed_quoted_paths_are_refused(path):
    assert compile_path(path) is None


def test_a_quoted_number_is_a_key_never_an_index():
    assert resolve({"0": "key"}, compile_path("['0']")) == "key"
    assert resolve(["index"], compile_path("['0']")) is MISSING


def test_dotted_key_finds_the_literal_key_a_dotted_path_splits():
    assert dotted_key({"a.b": 1}, compile_path("a.b")) == ("a.b",)
    assert dotted_key({"x": {"a.b": {"c": [5]}}}, compile_path("x.a.b.c[0]")) == ("x", "a.b", "c", 0)
    assert dotted_key({"a": {"b": 1}}, compile_path("a.b")) is None
    assert dotted_key({"a.b": 1}, compile_path("a")) is None
    assert format_path(("x", "a.b", "c", 0)) == "x['a.b'].c[0]"
