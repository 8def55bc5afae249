"""The `format`s json_schema checks: every format of JSON Schema 2020-12, with code that ships with agenteval.

jsonschema checks most formats only when optional packages are installed, so the same schema
would pass or fail an answer depending on the machine. These checks need nothing but the
standard library, run in time linear in the string, and ignore values that are not strings
(as the specification says). A format not listed here is an annotation and is not checked.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from datetime import date
from typing import Any

from agenteval import patterns

# Fixed patterns, none with a repetition inside another that could match the same text: linear time.
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))", re.ASCII)
_DURATION = re.compile(
    r"P(?:(?:\d+Y(?:\d+M(?:\d+D)?)?|\d+M(?:\d+D)?|\d+D)(?:T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S))?"
    r"|T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)|\d+W)",
    re.ASCII,
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_DOT_ATOM = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*")
_IDN_DOT_ATOM = re.compile(r"(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]|[^\x00-\x7f])+(?:\.(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]|[^\x00-\x7f])+)*")
_QUOTED = re.compile(r'"(?:[^"\\\r\n]|\\.)*"')
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_URI_CHARS = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*")
_IRI_CHARS = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2}|[^\x00-\x7f])*")
_POINTER_TOKEN = re.compile(r"(?:[^~]|~[01])*")
_RELATIVE_PREFIX = re.compile(r"0|[1-9][0-9]*", re.ASCII)
_TEMPLATE_EXPRESSION = re.compile(
    r"[+#./;?&=,!@|]?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?"
    r"(?:,(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?)*"
)


def is_date(text: str) -> bool:
    """RFC 3339 full-date: YYYY-MM-DD, a real calendar day."""
    found = _DATE.fullmatch(text)
    if found is None:
        return False
    try:
        date(*map(int, found.groups()))
    except ValueError:
        return False
    return True


def is_time(text: str) -> bool:
    """RFC 3339 full-time: hh:mm:ss[.frac] then Z or an offset; second 60 (a leap second) allowed."""
    found = _TIME.fullmatch(text)
    if found is None:
        return False
    hour, minute, second, offset_hour, offset_minute = (int(part) if part else 0 for part in found.groups())
    return hour <= 23 and minute <= 59 and second <= 60 and offset_hour <= 23 and offset_minute <= 59


def is_date_time(text: str) -> bool:
    """RFC 3339 date-time: a full-date, `T` (or `t`), a full-time."""
    day, separator, moment = text[:10], text[10:11], text[11:]
    return separator in ("T", "t") and is_date(day) and is_time(moment)


def is_duration(text: str) -> bool:
    """ISO 8601 duration as RFC 3339 appendix A writes it: P1Y2M3DT4H5M6S, P2W, ..."""
    return _DURATION.fullmatch(text) is not None


def is_hostname(text: str) -> bool:
    """RFC 1123: dot-separated labels of letters, digits and inner hyphens, 1-63 each, 253 in all."""
    if not text or len(text) > 253:
        return False
    return all(_LABEL.fullmatch(label) for label in text.split("."))


def is_idn_hostname(text: str) -> bool:
    """A hostname whose labels may be Unicode (IDNA, the standard library's codec)."""
    if not text or text.isascii():
        return is_hostname(text)
    try:
        ascii_form = text.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    return is_hostname(ascii_form)


def is_ipv4(text: str) -> bool:
    """Dotted quad, no leading zeros."""
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def is_ipv6(text: str) -> bool:
    """RFC 4291 text form, without a zone index (`%eth0`)."""
    if "%" in text or not text.isascii():
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _domain_or_literal(domain: str, hostname: Callable[[str], bool]) -> bool:
    if domain.startswith("[") and domain.endswith("]"):
        literal = domain[1:-1]
        return is_ipv6(literal[5:]) if literal[:5].lower() == "ipv6:" else is_ipv4(literal)
    return hostname(domain)


def is_email(text: str) -> bool:
    """RFC 5321 mailbox: a dot-atom or quoted local part (64 at most), `@`, a hostname or [address literal]."""
    local, at, domain = text.rpartition("@")
    if not at or not 0 < len(local) <= 64:
        return False
    return bool(_DOT_ATOM.fullmatch(local) or _QUOTED.fullmatch(local)) and _domain_or_literal(domain, is_hostname)


def is_idn_email(text: str) -> bool:
    """RFC 6531: an email whose local part and domain may be Unicode."""
    local, at, domain = text.rpartition("@")
    if not at or not local:
        return False
    return bool(_IDN_DOT_ATOM.fullmatch(local) or _QUOTED.fullmatch(local)) and _domain_or_literal(domain, is_idn_hostname)


def _reference(text: str, chars: re.Pattern[str]) -> bool:
    """Only characters RFC 3986 (or 3987) allows, `%` only before two hex digits, at most one `#`."""
    return chars.fullmatch(text) is not None and text.count("#") <= 1


def is_uri(text: str) -> bool:
    """RFC 3986 absolute URI: a scheme, `:`, then only characters a URI may hold."""
    return _SCHEME.match(text) is not None and _reference(text, _URI_CHARS)


def is_uri_reference(text: str) -> bool:
    """RFC 3986 URI or relative reference."""
    return _reference(text, _URI_CHARS)


def is_iri(text: str) -> bool:
    """RFC 3987 absolute IRI: a URI that may also hold non-ASCII characters."""
    return _SCHEME.match(text) is not None and _reference(text, _IRI_CHARS)


def is_iri_reference(text: str) -> bool:
    """RFC 3987 IRI or relative reference."""
    return _reference(text, _IRI_CHARS)


def is_uuid(text: str) -> bool:
    """RFC 4122 hyphenated form: 8-4-4-4-12 hex digits."""
    return _UUID.fullmatch(text) is not None


def is_uri_template(text: str) -> bool:
    """RFC 6570: literal text and `{...}` expressions of an operator and variable names."""
    rest = text
    while rest:
        literal, brace, rest = rest.partition("{")
        if "}" in literal or any(char in literal for char in " \"'<>\\^`|"):
            return False
        if brace:
            expression, closed, rest = rest.partition("}")
            if not closed or _TEMPLATE_EXPRESSION.fullmatch(expression) is None:
                return False
    return True


def is_json_pointer(text: str) -> bool:
    """RFC 6901: empty, or `/`-separated tokens where `~` is only `~0` or `~1`."""
    if not text:
        return True
    return text.startswith("/") and all(_POINTER_TOKEN.fullmatch(token) for token in text[1:].split("/"))


def is_relative_json_pointer(text: str) -> bool:
    """A non-negative integer, then `#` or a JSON pointer."""
    found = _RELATIVE_PREFIX.match(text)
    if found is None:
        return False
    rest = text[found.end():]
    return rest == "#" or is_json_pointer(rest)


def is_regex(text: str) -> bool:
    """A regular expression agenteval's pattern engine compiles (not cached: the text comes from an answer)."""
    return patterns.is_valid(text)


FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": is_date_time,
    "date": is_date,
    "time": is_time,
    "duration": is_duration,
    "email": is_email,
    "idn-email": is_idn_email,
    "hostname": is_hostname,
    "idn-hostname": is_idn_hostname,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "uri": is_uri,
    "uri-reference": is_uri_reference,
    "iri": is_iri,
    "iri-reference": is_iri_reference,
    "uuid": is_uuid,
    "uri-template": is_uri_template,
    "json-pointer": is_json_pointer,
    "relative-json-pointer": is_relative_json_pointer,
    "regex": is_regex,
}
"""Every format json_schema checks (the README lists the same names; a test keeps them equal)."""


def format_checker() -> Any:
    """A jsonschema FormatChecker with exactly FORMATS, whatever else is installed."""
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    for name, check in FORMATS.items():
        checker.checks(name)(_strings_only(check))
    return checker


def _strings_only(check: Callable[[str], bool]) -> Callable[[Any], bool]:
    def checks(instance: Any) -> bool:
        return not isinstance(instance, str) or check(instance)

    checks.__doc__ = check.__doc__
    return checks
