"""apimachinery's checks of names and labels, with its error texts.

Kubernetes words a bad name or label value the same way everywhere (the API
server, ``kubectl``, OCM's hub); the hub's owner-label check and the agent's
CEL named formats repeat those words, so they come from here. Every check
takes a Go string: one character per byte (:func:`~ocmkit.govalues.go_bytes`),
so that lengths are Go's ``len``. Two generations of wording live in
apimachinery: ``util/validation`` (the DNS names) says ``must be no more than
63 characters``, ``api/validate/content`` (label keys and values) ``... bytes``.
"""

from __future__ import annotations

import re
from typing import Final

_DNS1123_LABEL: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN: Final = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_DNS1035_LABEL: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE: Final = "(" + _LABEL_KEY + ")?"

_DNS1123_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_LABEL_KEY_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_KEY_EXAMPLES: Final = ("MyName", "my.name", "123-abc")

_DNS_LABEL_MAX: Final = 63
_DNS_SUBDOMAIN_MAX: Final = 253
_LABEL_MAX: Final = 63


def _matches(pattern: str, raw: str) -> bool:
    return re.fullmatch(pattern, raw) is not None


def _regex_error(msg: str, pattern: str, *examples: str) -> str:
    """apimachinery's ``RegexError``: every example is followed by ``', '`` (hence ``',  or``)."""
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{pattern}')"


def _max_len_error(limit: int, unit: str) -> str:
    return f"must be no more than {limit} {unit}"


def dns1123_label(raw: str) -> list[str]:
    """``validation.IsDNS1123Label`` of a Go byte string."""
    errors = [_max_len_error(_DNS_LABEL_MAX, "characters")] if len(raw) > _DNS_LABEL_MAX else []
    if not _matches(_DNS1123_LABEL, raw):
        if _matches(_DNS1123_SUBDOMAIN, raw):
            errors.append("must not contain dots")
        else:
            errors.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL, "my-name", "123-abc"))
    return errors


def dns1123_subdomain(raw: str, unit: str = "characters") -> list[str]:
    """``IsDNS1123Subdomain``; ``unit`` words the length error (``bytes`` in package content)."""
    too_long = len(raw) > _DNS_SUBDOMAIN_MAX
    errors = [_max_len_error(_DNS_SUBDOMAIN_MAX, unit)] if too_long else []
    if not _matches(_DNS1123_SUBDOMAIN, raw):
        errors.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN, "example.com"))
    return errors


def dns1035_label(raw: str) -> list[str]:
    """``validation.IsDNS1035Label`` of a Go byte string."""
    errors = [_max_len_error(_DNS_LABEL_MAX, "characters")] if len(raw) > _DNS_LABEL_MAX else []
    if not _matches(_DNS1035_LABEL, raw):
        errors.append(_regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL, "my-name", "abc-123"))
    return errors


def qualified_name(raw: str) -> list[str]:
    """``content.IsLabelKey``: an optional DNS subdomain prefix and ``/``, then a name."""
    parts = raw.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY, *_LABEL_KEY_EXAMPLES)
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        problems = dns1123_subdomain(prefix, "bytes") if prefix else ["must be non-empty"]
        errors += [f"prefix part {problem}" for problem in problems]
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > _LABEL_MAX:
        errors.append("name part " + _max_len_error(_LABEL_MAX, "bytes"))
    if not _matches(_LABEL_KEY, name):
        errors.append("name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY, *_LABEL_KEY_EXAMPLES))
    return errors


def label_value(raw: str) -> list[str]:
    """``content.IsLabelValue`` of a Go byte string."""
    errors = [_max_len_error(_LABEL_MAX, "bytes")] if len(raw) > _LABEL_MAX else []
    if not _matches(_LABEL_VALUE, raw):
        examples = ("MyValue", "my_value", "12345")
        errors.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE, *examples))
    return errors
