"""safejson: every text gives a value or an UnsafeJSONError naming its rule, in linear time."""

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchrm import safejson
from orchrm.safejson import Limits, UnsafeJSONError, _scan, find_objects, loads

# JSON values safejson must accept unchanged: finite floats, bounded ints, text without lone surrogates.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=8), children, max_size=5),
    max_leaves=30,
)

# Pieces of hostile text: brackets, quotes, escapes, surrogates, long numbers, non-finite constants.
FRAGMENTS = [
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    ":",
    ",",
    " ",
    "\n",
    "x",
    "1",
    "-",
    ".",
    "e",
    "NaN",
    "Infinity",
    "1e999",
    "\ud800",
    "\\ud800",
    "\\udc00",
    "\\ud83d\\ude00",
    "\x00",
    '{"a":',
    '{"agents":',
    '"answer"',
    "9" * 150,
    "true",
    "nul",
    "${a1}",
    "```json\n",
    "```",
    "\u0430",
    "\u200b",
    '{"k": [1, 2]}',
]
hostile_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=60).map("".join)


def _old_objects(text):
    """main's finder: raw_decode retried from every brace (quadratic; the reference for what is found)."""
    found, decoder, i = [], json.JSONDecoder(), text.find("{")
    while i != -1:
        try:
            value, end = decoder.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError, ValueError):
            i = text.find("{", i + 1)
            continue
        found.append(value)
        i = text.find("{", end)
    return found


@given(json_values)
def test_safe_values_round_trip(value):
    assert loads(json.dumps(value)) == value
    assert loads(json.dumps(value).encode()) == value


@given(
    st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=8), json_values, max_size=4),
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="{"), max_size=30),
)
def test_an_object_in_prose_is_found(obj, prose):
    assert find_objects(f"{prose} {json.dumps(obj)} {prose}").objects[:1] == [obj]


@settings(max_examples=300)
@given(hostile_text)
def test_any_text_gives_a_value_or_a_named_rule(text):
    try:
        value = loads(text)
    except UnsafeJSONError as exc:
        assert exc.rule in safejson.RULES
    else:
        json.dumps(value, allow_nan=False).encode("utf-8")  # finite, encodable
    found = find_objects(text)
    for obj in found.objects:
        json.dumps(obj, allow_nan=False).encode("utf-8")
    assert found.refused is None or found.refused.rule in safejson.RULES


@settings(max_examples=300)
@given(hostile_text)
def test_what_is_found_in_prose_is_json(text):
    """Each object found decodes from the text by json itself (soundness against main's finder)."""
    old = _old_objects(text)
    for obj in find_objects(text).objects:
        assert obj in old or any(_contains(o, obj) for o in old)


def _contains(outer, obj):
    todo = [outer]
    while todo:
        v = todo.pop()
        if v == obj:
            return True
        todo.extend(v.values() if isinstance(v, dict) else v if isinstance(v, list) else [])
    return False


@given(st.binary(max_size=40))
def test_any_bytes_give_a_value_or_a_named_rule(data):
    try:
        loads(data)
    except UnsafeJSONError as exc:
        assert exc.rule in safejson.RULES


@pytest.mark.parametrize(
    "text, rule",
    [
        ("[" * 100_000 + "]" * 100_000, "depth"),
        ('{"a": ' * 100 + "1" + "}" * 100, "depth"),
        ("9" * 5000, "digits"),
        ('{"n": -' + "1" * 101 + "}", "digits"),
        ('{"n": 1.' + "0" * 200 + "}", "digits"),
        ('"\\ud800"', "surrogate"),
        ('{"\\udfff": 1}', "surrogate"),
        ('["a", "\\ud800x"]', "surrogate"),
        ('"\ud800"', "surrogate"),
        ("NaN", "non_finite"),
        ("[-Infinity]", "non_finite"),
        ("[1e999]", "non_finite"),
        ('{"a" 1}', "syntax"),
        ("", "syntax"),
        (b"\xff\xfe", "encoding"),
        (b'"\xed\xa0\x80"', "encoding"),  # a surrogate encoded as UTF-8 bytes
    ],
)
def test_hostile_documents_name_their_rule(text, rule):
    with pytest.raises(UnsafeJSONError) as exc:
        loads(text)
    assert exc.value.rule == rule


@pytest.mark.parametrize(
    "text, rule",
    [
        ('{"a": [' * 100 + "1" + "]}" * 100, "depth"),
        ('{"n": ' + "9" * 5000 + "}", "digits"),
        ('prose {"s": "\\ud800"} more', "surrogate"),
        ('{"x": NaN}', "non_finite"),
    ],
)
def test_hostile_objects_in_prose_are_reported(text, rule):
    found = find_objects(text)
    assert found.refused.rule == rule
    # The scan resumes where the attempt broke: past a depth limit, what closes there is an object in its own
    # right (and within the limit); the refused outer one is never returned.
    assert all(len(json.dumps(o)) < len(text) / 2 for o in found.objects)


def test_a_valid_surrogate_pair_is_kept():
    assert loads('"\\ud83d\\ude00"') == "\U0001f600"
    assert find_objects('{"e": "\\ud83d\\ude00"}').objects == [{"e": "\U0001f600"}]


def test_size_is_bounded():
    with pytest.raises(UnsafeJSONError) as exc:
        loads("[" + "1," * 100 + "1]", Limits(max_chars=50))
    assert exc.value.rule == "size"
    with pytest.raises(UnsafeJSONError):
        find_objects("x" * 51, Limits(max_chars=50))


def test_objects_inside_a_broken_wrapper_are_found():
    assert find_objects('{"w": [{"agents": [1]}, oops').objects == [{"agents": [1]}]


@pytest.mark.parametrize(
    "text",
    [
        "{" * 1_000_000,
        "Let {x} be the set {1, 2} and ${a1} the input; " * 21_000,
        '{"a": ' * 200_000,
        '{"y" z} ' * 130_000,
    ],
    ids=["braces", "prose", "deep", "quoted-prose"],
)
def test_a_megabyte_is_read_in_linear_time(text):
    # A quadratic finder once stalled on the first; it cannot pass even this loose bound on a loaded machine.
    start = time.perf_counter()
    find_objects(text)
    with pytest.raises(UnsafeJSONError):
        loads(text)
    assert time.perf_counter() - start < 2.5


def test_objects_inside_a_whole_object_are_not_found_again_after_a_later_broken_one():
    found = find_objects('{"a": {"b": 1}} then {"c": 2, oops')
    assert found.objects == [{"a": {"b": 1}}]


def test_first_keys_with_escapes_and_surrogates_are_decoded_and_checked():
    assert find_objects(r'x {"\u0041": 1} y').objects == [{"A": 1}]
    found = find_objects(r'x {"\ud800": 1} y')
    assert found.objects == [] and found.refused is not None and found.refused.rule == "surrogate"
    assert find_objects('{"n": 012}').objects == [] and find_objects('{"n": 0}').objects == [{"n": 0}]


def test_a_file_is_read_under_the_file_limits(tmp_path):
    path = tmp_path / "card.json"
    path.write_bytes(b'{"a": [1, 2.5, "x"]}')
    assert safejson.read(path) == {"a": [1, 2.5, "x"]}
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(UnsafeJSONError) as err:
        safejson.read(path)
    assert err.value.rule == "depth"


@pytest.mark.parametrize(
    "text, high, expected",
    [
        ("0", 10, 0),
        ("10", 10, 10),
        ("007", 10, 7),
        ("11", 10, None),
        ("-1", 10, None),
        ("", 10, None),
        (None, 10, None),
        ("1e3", 10_000, None),
        ("\u00b2", 10, None),
        ("\u0661", 10, None),
        ("9" * 5000, 10**6, None),
        (b"42", 100, 42),
    ],
)
def test_bounded_int_takes_plain_digits_within_bounds(text, high, expected):
    assert safejson.bounded_int(text, high=high) == expected


_PIECES = [
    '{"a": 1}',
    '{"a": "x", "b": [1]}',
    '{"": 1,',
    '{"k": {"n": 2}}',
    '{"s": "\\ud800"}',
    '{"f": 1e999}',
    '{"n": ' + "9" * 30 + "}",
    '{"e": "a\\nb"}',
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    '"',
    " ",
    "prose ",
    "true",
    '{"d": 1, "d": 2}',
    '{"u": "\\u00e9"}',
    '{"":1',
    '{"{":[1, 2]',
    '{"a":{"b":1}',
    '{"":{}',
    "1e999",
    "0",
    '{"t": true',
    "x",
    " ",
    "\u00a0",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=25).map("".join))
def test_the_shortcuts_find_what_the_token_scan_finds(text):
    import unittest.mock

    fast = find_objects(text)
    with (
        unittest.mock.patch.object(_scan, "flat_object", lambda text, at: None),
        unittest.mock.patch.object(_scan, "doomed", lambda text, start: None),
    ):
        slow = find_objects(text)
    assert fast.objects == slow.objects
    assert (fast.refused and fast.refused.rule) == (slow.refused and slow.refused.rule)
