"""JSON from untrusted hands (model replies, HTTP bodies, user files) read in bounded, linear time.

Python's `json` recurses once per nesting level (deep input raises `RecursionError`), turns a 5,000-digit
integer into a `ValueError`, accepts `NaN`, `Infinity` and lone UTF-16 surrogates (`"\\ud800"`, which later
fail to encode anywhere), and computes the line of every error from the start of the text, so retrying
`raw_decode` from each brace of a long reply is quadratic. Every model-written or user-written JSON text in
orchrm goes through here instead; whatever the input, the answer is a value or an `UnsafeJSONError` naming
the rule broken:

    size        the text is longer than `Limits.max_chars`
    encoding    bytes that are not UTF-8
    surrogate   a lone UTF-16 surrogate, raw or escaped, anywhere in a string
    depth       more than `Limits.max_depth` nested arrays and objects
    digits      a number written with more than `Limits.max_number_chars` characters
    non_finite  NaN, Infinity, or a float that overflows to infinity (1e999)
    syntax      not JSON

`loads` reads one whole document at C speed after linear pre-checks; `read` is `loads` of a file (RM and
adapter cards, run.json, manifests, seals: files a user may edit, copy or damage), and `read_model` validates
one as a pydantic model, any failure an `InvalidFile` with a one-line reason; `find_objects` finds the
JSON objects written inside prose (a model's reply) with one left-to-right scan. `bounded_int` is the one
parse of an integer that comes from outside (a query parameter, a header): decimal digits within bounds, or
None.

Inside: `_document.py` (the rules, `Limits`, `loads`, `read`, `bounded_int`), `_model.py` (`read_model`),
`_scan.py` (`find_objects`' token scan) and `_shortcuts.py` (the regex-speed paths that scan takes).
"""

from ._document import DEFAULT, FILE, RULES, Limits, UnsafeJSONError, bounded_int, loads, read
from ._model import InvalidFile, read_model
from ._scan import Found, find_objects

__all__ = [
    "DEFAULT",
    "FILE",
    "RULES",
    "Found",
    "InvalidFile",
    "Limits",
    "UnsafeJSONError",
    "bounded_int",
    "find_objects",
    "loads",
    "read",
    "read_model",
]
