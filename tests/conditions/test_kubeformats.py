"""The Kubernetes named-format validators: Go's rules and error texts.

The expected strings are cel-go's answers (tests/conditions/celoracle,
k8s.io/apiserver v0.35.4) to ``format.<name>().validate(<value>)``;
:func:`test_matches_the_go_library` asks the oracle itself, for a corpus and
every value of the unit cases.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conditions.test_cel_oracle import ask_oracle
from workagent.conditions.kubeformats import FORMAT_NAMES, validate

# The error texts, verbatim from the Go library.
LABEL_1123 = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_1123 = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
KEY_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
NAME_PART = "name part " + KEY_RULE
TOO_MANY_SLASHES = (
    "a valid label key " + KEY_RULE + " with an optional DNS subdomain prefix and '/' "
    "(e.g. 'example.com/MyName')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
DOTS = "must not contain dots"
MAX_63_CHARS = "must be no more than 63 characters"
MAX_253_CHARS = "must be no more than 253 characters"
MAX_63_BYTES = "must be no more than 63 bytes"

A63 = "a" * 63
# 253 bytes: three 63-byte labels and one of 61, dot-separated.
SUBDOMAIN_253 = f"{A63}.{A63}.{A63}.{'a' * 61}"

CASES = [
    # dns1123Label
    ("dns1123Label", "my-name", []),
    ("dns1123Label", "123-abc", []),
    ("dns1123Label", "a", []),
    ("dns1123Label", A63, []),
    ("dns1123Label", "a" * 64, [MAX_63_CHARS]),
    ("dns1123Label", "a" * 64 + ".b", [MAX_63_CHARS, DOTS]),
    ("dns1123Label", "A" * 64, [MAX_63_CHARS, LABEL_1123]),
    ("dns1123Label", "", [LABEL_1123]),
    ("dns1123Label", "a.b", [DOTS]),
    ("dns1123Label", "a..b", [LABEL_1123]),
    ("dns1123Label", "-a", [LABEL_1123]),
    ("dns1123Label", "a-", [LABEL_1123]),
    ("dns1123Label", "My-Name", [LABEL_1123]),
    ("dns1123Label", "é", [LABEL_1123]),
    ("dns1123Label", "a\n", [LABEL_1123]),
    # 32 two-byte characters are 64 bytes: Go counts bytes.
    ("dns1123Label", "é" * 32, [MAX_63_CHARS, LABEL_1123]),
    # dns1123Subdomain
    ("dns1123Subdomain", "example.com", []),
    ("dns1123Subdomain", "a", []),
    ("dns1123Subdomain", SUBDOMAIN_253, []),
    ("dns1123Subdomain", SUBDOMAIN_253 + "a", [MAX_253_CHARS]),
    ("dns1123Subdomain", "", [SUBDOMAIN_1123]),
    ("dns1123Subdomain", "Example.com", [SUBDOMAIN_1123]),
    ("dns1123Subdomain", "a..b", [SUBDOMAIN_1123]),
    ("dns1123Subdomain", ".a", [SUBDOMAIN_1123]),
    ("dns1123Subdomain", "a.", [SUBDOMAIN_1123]),
    ("dns1123Subdomain", "a" * 254 + "-", [MAX_253_CHARS, SUBDOMAIN_1123]),
    # dns1035Label
    ("dns1035Label", "my-name", []),
    ("dns1035Label", "a" + "0" * 62, []),
    ("dns1035Label", "a" + "0" * 63, [MAX_63_CHARS]),
    ("dns1035Label", "123-abc", [LABEL_1035]),
    ("dns1035Label", "a.b", [LABEL_1035]),
    ("dns1035Label", "", [LABEL_1035]),
    ("dns1035Label", "0" * 64, [MAX_63_CHARS, LABEL_1035]),
    # qualifiedName (content.IsLabelKey: lengths in bytes)
    ("qualifiedName", "MyName", []),
    ("qualifiedName", "my.name_x-1", []),
    ("qualifiedName", "example.com/MyName", []),
    ("qualifiedName", f"{SUBDOMAIN_253}/{A63}", []),
    ("qualifiedName", "", ["name part must be non-empty", NAME_PART]),
    ("qualifiedName", "a/", ["name part must be non-empty", NAME_PART]),
    ("qualifiedName", "/b", ["prefix part must be non-empty"]),
    (
        "qualifiedName",
        "/",
        ["prefix part must be non-empty", "name part must be non-empty", NAME_PART],
    ),
    ("qualifiedName", "a/b/c", [TOO_MANY_SLASHES]),
    ("qualifiedName", "Ex.com/n", ["prefix part " + SUBDOMAIN_1123]),
    ("qualifiedName", "a" * 254 + "/b", ["prefix part must be no more than 253 bytes"]),
    ("qualifiedName", "a" * 64, ["name part " + MAX_63_BYTES]),
    ("qualifiedName", "-" * 64, ["name part " + MAX_63_BYTES, NAME_PART]),
    ("qualifiedName", "_a", [NAME_PART]),
    ("qualifiedName", "ü", [NAME_PART]),
    # dns1123LabelPrefix: a trailing dash is masked -- Go drops two bytes and adds "a".
    ("dns1123LabelPrefix", "my-prefix-", []),
    ("dns1123LabelPrefix", "a-", []),
    ("dns1123LabelPrefix", "-", [LABEL_1123]),
    ("dns1123LabelPrefix", "--", []),
    ("dns1123LabelPrefix", "a" * 63 + "-", []),
    ("dns1123LabelPrefix", "a" * 64 + "-", [MAX_63_CHARS]),
    ("dns1123LabelPrefix", "a.-", []),  # checked as "aa": the dot goes with the dash
    ("dns1123LabelPrefix", "é-", [LABEL_1123]),
    ("dns1123LabelPrefix", "a.b-", [DOTS]),
    # dns1123SubdomainPrefix
    ("dns1123SubdomainPrefix", "mysubdomain.prefix.-", []),
    ("dns1123SubdomainPrefix", "a.-", []),
    ("dns1123SubdomainPrefix", SUBDOMAIN_253 + "-", []),
    ("dns1123SubdomainPrefix", SUBDOMAIN_253 + "a-", [MAX_253_CHARS]),
    ("dns1123SubdomainPrefix", "Ab-", [SUBDOMAIN_1123]),
    # dns1035LabelPrefix
    ("dns1035LabelPrefix", "my-label-prefix-", []),
    ("dns1035LabelPrefix", "1a-", [LABEL_1035]),
    ("dns1035LabelPrefix", "a" * 64 + "-", [MAX_63_CHARS]),
    # labelValue (content.IsLabelValue: lengths in bytes)
    ("labelValue", "", []),
    ("labelValue", "MyValue", []),
    ("labelValue", "my_value.1-x", []),
    ("labelValue", A63, []),
    ("labelValue", "a" * 64, [MAX_63_BYTES]),
    ("labelValue", "é" * 32, [MAX_63_BYTES, LABEL_VALUE]),
    ("labelValue", "_a", [LABEL_VALUE]),
    ("labelValue", "a b", [LABEL_VALUE]),
    ("labelValue", "a/b", [LABEL_VALUE]),
    # uri (url.ParseRequestURI)
    ("uri", "http://example.com", []),
    ("uri", "/path", []),
    ("uri", "*", []),
    ("uri", "mailto:x@y", []),
    ("uri", "http://[::1]:80/", []),
    ("uri", "", ['parse "": empty url']),
    ("uri", "a b", ['parse "a b": invalid URI for request']),
    ("uri", "http://%zz", ['parse "http://%zz": invalid URL escape "%zz"']),
    ("uri", "http://a b", ['parse "http://a b": invalid character " " in host name']),
    ("uri", "http://[fe80::1", ["parse \"http://[fe80::1\": missing ']' in host"]),
    ("uri", "https://h:port/", ['parse "https://h:port/": invalid port ":port" after host']),
    ("uri", "http://[1.2.3.4]/", ['parse "http://[1.2.3.4]/": invalid IP-literal']),
    (
        "uri",
        "http://é b/\t",
        ['parse "http://é b/\\t": net/url: invalid control character in URL'],
    ),
    # uuid
    ("uuid", "123e4567-e89b-12d3-a456-426614174000", []),
    ("uuid", "123E4567E89B12D3A456426614174000", []),
    ("uuid", "123e4567-e89b-12d3-a456-42661417400", ["does not match the UUID format"]),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000\n", ["does not match the UUID format"]),
    ("uuid", "g23e4567-e89b-12d3-a456-426614174000", ["does not match the UUID format"]),
    ("uuid", "", ["does not match the UUID format"]),
    # byte (base64, standard alphabet, padded)
    ("byte", "aGVsbG8=", []),
    ("byte", "aGVsbA==", []),
    ("byte", "a+/=", []),
    ("byte", "aGVsbG8", ["invalid base64"]),
    ("byte", "YQ", ["invalid base64"]),
    ("byte", "aGVsbG8=\n", ["invalid base64"]),
    ("byte", "a-_=", ["invalid base64"]),
    ("byte", "", ["invalid base64"]),
    # date (time.Parse 2006-01-02)
    ("date", "2021-01-01", []),
    ("date", "2020-02-29", []),
    ("date", "0000-02-29", []),
    ("date", "2021-02-29", ["invalid date"]),
    ("date", "1900-02-29", ["invalid date"]),
    ("date", "2021-04-31", ["invalid date"]),
    ("date", "2021-13-01", ["invalid date"]),
    ("date", "2021-00-10", ["invalid date"]),
    ("date", "2021-1-01", ["invalid date"]),
    ("date", "+021-01-01", ["invalid date"]),
    ("date", "2021-01-01x", ["invalid date"]),
    ("date", "", ["invalid date"]),
    # datetime (strfmt IsDateTime: lowercased, split at every "t")
    ("datetime", "2021-01-01T00:00:00Z", []),
    ("datetime", "2021-01-01t23:59:59.123+05:30", []),
    ("datetime", "2021-01-01T00:00:00+99:99", []),
    ("datetime", "2021-01-01T00:00:00ZTjunk", []),
    ("datetime", "2021-01-01T00:00:00é5Z", []),
    ("datetime", "2021-01-01T00:00:00\u01305Z", []),
    ("datetime", "2021-01-01T24:00:00Z", ["invalid datetime"]),
    ("datetime", "2021-01-01T00:00:60Z", ["invalid datetime"]),
    ("datetime", "2021-01-01T00:00:00", ["invalid datetime"]),
    ("datetime", "2021-01-01 00:00:00Z", ["invalid datetime"]),
    ("datetime", "2021-01-01T00:00:00\n5Z", ["invalid datetime"]),
    ("datetime", "2021-02-30T00:00:00Z", ["invalid datetime"]),
    ("datetime", "T", ["invalid datetime"]),
    ("datetime", "", ["invalid datetime"]),
]


@pytest.mark.parametrize(("name", "value", "errors"), CASES)
def test_validate(name: str, value: str, errors: list[str]) -> None:
    assert validate(name, value) == errors


def test_every_format_is_tested_valid_and_invalid() -> None:
    for name in FORMAT_NAMES:
        outcomes = {bool(errors) for case, _, errors in CASES if case == name}
        assert outcomes == {True, False}, name


def test_names_are_the_librarys_in_its_order() -> None:
    assert FORMAT_NAMES == (
        "dns1123Label",
        "dns1123Subdomain",
        "dns1035Label",
        "qualifiedName",
        "dns1123LabelPrefix",
        "dns1123SubdomainPrefix",
        "dns1035LabelPrefix",
        "labelValue",
        "uri",
        "uuid",
        "byte",
        "date",
        "datetime",
    )


@pytest.mark.parametrize("name", ["", "DNS1123Label", "dns1123label", "email", "format"])
def test_an_unknown_name_is_a_key_error(name: str) -> None:
    with pytest.raises(KeyError):
        validate(name, "x")


def test_a_long_value_is_answered() -> None:
    # Go's regexes are linear; ours must not blow up on a megabyte either.
    big = "a-" * 500_000 + "!"
    assert validate("dns1123Subdomain", big) == [
        "must be no more than 253 characters",
        SUBDOMAIN_1123,
    ]
    assert validate("byte", "QUJD" * 250_000 + "=") == ["invalid base64"]


# --------------------------------------------------------------------------
# Against cel-go itself
# --------------------------------------------------------------------------

CORPUS = [
    "",
    "a",
    "A",
    "-",
    "--",
    "a-",
    "a.-",
    "1-",
    "A-",
    "ab-",
    "-a",
    "my-name",
    "a.b",
    "a..b",
    "example.com",
    "Example.com/Name",
    "a/b/c",
    "/b",
    "a/",
    "My_Value",
    A63,
    "a" * 64,
    "a" * 63 + "-",
    SUBDOMAIN_253,
    SUBDOMAIN_253 + "a",
    f"{SUBDOMAIN_253}/{'b' * 64}",
    "é",
    "é-",
    "é" * 32,
    "ab\u0130-",
    "\U0001d7d9",
    "a\n",
    "a\x7fb",
    "http://example.com/p?q=1#f",
    "https://a:b:80/x",
    "http://[fe80::1%25en0]:8080/",
    "//host/path",
    "a b",
    "123e4567-e89b-12d3-a456-426614174000",
    "123E4567E89B12D3A456426614174000",
    "aGVsbG8=",
    "aGVsbG8",
    "0000-02-29",
    "2021-02-29",
    "2021-01-01T00:00:00Z",
    "2021-01-01t23:59:59.5-07:00",
    "2021-01-01T00:00:00ZTjunk",
    "2021-01-01T00:00:00\u01305Z",
    "2021-01-01T24:00:00Z",
]

#: Where ours differs from cel-go on purpose, and why.
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {}


def _go_errors(answer: dict[str, Any]) -> list[str] | str | None:
    """The oracle's optional: None when empty, else its errors (or their fmt.Sprint text)."""
    assert list(answer) == ["value"], answer
    kind, inner = answer["value"]
    assert kind == "optional_type", answer
    if inner is None or isinstance(inner, str):
        return inner  # none, or the older oracle's fmt.Sprint of the []string
    list_kind, items = inner
    assert list_kind == "list", answer
    return [text for _, text in items]


def _same(ours: list[str], theirs: list[str] | str | None) -> bool:
    if theirs is None:
        return not ours
    if isinstance(theirs, str):
        return bool(ours) and theirs == "[" + " ".join(ours) + "]"
    return ours == theirs


@pytest.mark.parametrize(
    ("answer", "errors", "same"),
    [
        ({"value": ["optional_type", None]}, [], True),
        ({"value": ["optional_type", None]}, ["x"], False),
        ({"value": ["optional_type", "[a b c]"]}, ["a b", "c"], True),
        ({"value": ["optional_type", "[a b]"]}, ["a"], False),
        (
            {"value": ["optional_type", ["list", [["string", "a b"], ["string", "c"]]]]},
            ["a b", "c"],
            True,
        ),
        (
            {"value": ["optional_type", ["list", [["string", "a b"], ["string", "c"]]]]},
            ["a b c"],
            False,
        ),
    ],
)
def test_reads_both_shapes_of_the_oracles_answer(
    answer: dict[str, Any], errors: list[str], same: bool
) -> None:
    assert _same(errors, _go_errors(answer)) is same


@pytest.mark.realkube
def test_matches_the_go_library() -> None:
    values = dict.fromkeys(CORPUS + [value for _, value, _ in CASES])  # the unit cases' too
    cases = [(name, value) for name in FORMAT_NAMES for value in values]
    # A JSON string is a CEL string literal (same escapes; the rest is left as it is).
    calls = [
        f"format.{name}().validate({json.dumps(value, ensure_ascii=False)})"
        for name, value in cases
    ]
    answers = ask_oracle(calls, {})
    mismatches, agreed_known = [], []
    for (name, value), answer in zip(cases, answers, strict=True):
        theirs, ours = _go_errors(answer), validate(name, value)
        same = _same(ours, theirs)
        if (name, value) in KNOWN_DIFFERENCES:
            if same:
                agreed_known.append((name, value))
        elif not same:
            mismatches.append(f"{name} {value!r}\n  ours:   {ours}\n  cel-go: {theirs}")
    assert not mismatches, f"{len(mismatches)} differences:\n" + "\n".join(mismatches)
    assert not agreed_known, f"no longer different, remove from KNOWN_DIFFERENCES: {agreed_known}"
    # The corpus reaches both outcomes of every format.
    for name in FORMAT_NAMES:
        outcomes = {bool(validate(name, value)) for value in CORPUS}
        assert outcomes == {True, False}, name
