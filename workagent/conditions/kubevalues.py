"""Values of the Kubernetes CEL URL, IP, CIDR and semver libraries, with Go's semantics.

Kubernetes builds them on Go's ``net/url``, ``net/netip`` and
``github.com/blang/semver/v4``; Python's ``urllib.parse`` and ``ipaddress``
accept and print differently (leading zeros, zones, opaque URLs), so the
parsers here follow Go's rules and error texts instead. URLs are parsed as
Go byte strings: each character of the internal strings is one byte
(latin-1 over UTF-8), which is what Go's byte-wise escaping needs.

Plain Python (no celpy): :mod:`workagent.conditions.celfunctions` binds these
to CEL names. A bad input raises :class:`KubeValueError` with Kubernetes' text.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field, replace
from typing import Final

from ocmkit import govalues
from ocmkit.govalues import go_bytes


class KubeValueError(ValueError):
    """A string the Kubernetes library rejects; the message is what cel-go reports."""


def text_of(raw: str) -> str:
    """A Go byte string as text (invalid UTF-8 replaced)."""
    return raw.encode("latin-1").decode("utf-8", "replace")


def go_quote(raw: str) -> str:
    """``strconv.Quote`` of a Go byte string (undecodable bytes as ``\\xNN``)."""
    return govalues.go_quote(raw.encode("latin-1").decode("utf-8", "surrogateescape"))


# --------------------------------------------------------------------------
# IP addresses (netip.Addr)
# --------------------------------------------------------------------------


class _AddrError(ValueError):
    """``netip.ParseAddr``'s error; ``str()`` is Go's text."""

    def __init__(self, raw: str, msg: str, at: str = "") -> None:
        where = f" (at {go_quote(at)})" if at else ""
        super().__init__(f"ParseAddr({go_quote(raw)}): {msg}{where}")


@dataclass(frozen=True, slots=True)
class IP:
    """An IPv4 or IPv6 address (never zoned, never IPv4-mapped: ``ip()`` rejects both)."""

    version: int
    value: int

    @property
    def bits(self) -> int:
        return 32 if self.version == 4 else 128

    def __str__(self) -> str:
        if self.version == 4:
            return str(ipaddress.IPv4Address(self.value))
        return ipaddress.IPv6Address(self.value).compressed

    def _top(self, width: int) -> int:
        return self.value >> (self.bits - width)

    def is_loopback(self) -> bool:
        return self._top(8) == 127 if self.version == 4 else self.value == 1

    def is_multicast(self) -> bool:
        return self._top(4) == 0xE if self.version == 4 else self._top(8) == 0xFF

    def is_link_local_multicast(self) -> bool:
        return self._top(24) == 0xE00000 if self.version == 4 else self._top(16) & 0xFF0F == 0xFF02

    def is_link_local_unicast(self) -> bool:
        return self._top(16) == 0xA9FE if self.version == 4 else self._top(16) & 0xFFC0 == 0xFE80

    def is_global_unicast(self) -> bool:
        if self.version == 4 and self.value == 0xFFFFFFFF:
            return False
        return not (
            self.value == 0
            or self.is_loopback()
            or self.is_multicast()
            or self.is_link_local_unicast()
        )


def _ipv4_fields(raw: str, s: str) -> int:
    """The 32 bits of a dotted quad ``s`` (a part of ``raw``), by netip's rules."""
    fields: list[int] = []
    value = digits = 0
    for i, char in enumerate(s):
        if "0" <= char <= "9":
            if digits == 1 and value == 0:
                raise _AddrError(raw, "IPv4 field has octet with leading zero")
            value, digits = value * 10 + int(char), digits + 1
            if value > 255:
                raise _AddrError(raw, "IPv4 field has value >255")
        elif char == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                raise _AddrError(raw, "IPv4 field must have at least one digit", s[i:])
            if len(fields) == 3:
                raise _AddrError(raw, "IPv4 address too long")
            fields.append(value)
            value = digits = 0
        else:
            raise _AddrError(raw, "unexpected character", s[i:])
    if len(fields) < 3:
        raise _AddrError(raw, "IPv4 address too short")
    return int.from_bytes(bytes([*fields, value]))


def _ipv6(raw: str) -> tuple[int, str]:
    """(the 128 bits, the zone) of an IPv6 address, by netip's rules."""
    s, _, zone = raw.partition("%")
    if "%" in raw and not zone:
        raise _AddrError(raw, "zone must be a non-empty string")
    groups: list[int] = []  # 16-bit groups, an embedded IPv4 address as two
    ellipsis = -1
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return 0, zone
    while len(groups) < 8:
        hexdigits = re.match(r"[0-9a-fA-F]*", s)
        count = len(hexdigits.group()) if hexdigits else 0
        if count > 4:
            raise _AddrError(raw, "each group must have 4 or less digits", s)
        if count == 0:
            raise _AddrError(raw, "each colon-separated field must have at least one digit", s)
        if count < len(s) and s[count] == ".":
            if ellipsis < 0 and len(groups) != 6:
                raise _AddrError(
                    raw, "embedded IPv4 address must replace the final 2 fields of the address", s
                )
            if len(groups) > 6:
                raise _AddrError(
                    raw,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    s,
                )
            v4 = _ipv4_fields(raw, s)
            groups += [v4 >> 16, v4 & 0xFFFF]
            s = ""
            break
        groups.append(int(s[:count], 16))
        s = s[count:]
        if not s:
            break
        if s[0] != ":":
            raise _AddrError(raw, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _AddrError(raw, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _AddrError(raw, "multiple :: in address", s)
            ellipsis, s = len(groups), s[1:]
            if not s:
                break
    if s:
        raise _AddrError(raw, "trailing garbage after address", s)
    if len(groups) < 8:
        if ellipsis < 0:
            raise _AddrError(raw, "address string too short")
        groups[ellipsis:ellipsis] = [0] * (8 - len(groups))
    elif ellipsis >= 0:
        raise _AddrError(raw, "the :: must expand to at least one field of zeros")
    return int.from_bytes(b"".join(g.to_bytes(2) for g in groups)), zone


def _parse_addr(raw: str) -> tuple[IP, str]:
    """``netip.ParseAddr``: the address and its zone."""
    for char in raw:
        if char == ".":
            return IP(4, _ipv4_fields(raw, raw)), ""
        if char == ":":
            value, zone = _ipv6(raw)
            return IP(6, value), zone
        if char == "%":
            raise _AddrError(raw, "missing IPv6 address")
    raise _AddrError(raw, "unable to parse IP")


def _is_4in6(ip: IP) -> bool:
    return ip.version == 6 and ip.value >> 32 == 0xFFFF


def parse_ip(text: str) -> IP:
    """``ip(s)``: an address without zone that is not IPv4-mapped IPv6."""
    raw = go_bytes(text)
    try:
        ip, zone = _parse_addr(raw)
    except _AddrError as exc:
        raise KubeValueError(
            f"IP Address {go_quote(raw)} parse error during conversion from string: {exc}"
        ) from None
    if zone:
        raise KubeValueError(f"IP address {go_quote(raw)} with zone value is not allowed")
    if _is_4in6(ip):
        raise KubeValueError(f"IPv4-mapped IPv6 address {go_quote(raw)} is not allowed")
    return ip


# --------------------------------------------------------------------------
# CIDR (netip.Prefix)
# --------------------------------------------------------------------------

_CIDR_ERROR: Final = "network address parse error during conversion from string: "


@dataclass(frozen=True, slots=True)
class CIDR:
    """An address and a prefix length; the address keeps its host bits (``masked()`` drops them)."""

    ip: IP
    prefix: int

    def _network(self, ip: IP) -> int | None:
        """The first ``prefix`` bits of ``ip``, None for the other family."""
        return ip.value >> (ip.bits - self.prefix) if ip.version == self.ip.version else None

    def masked(self) -> CIDR:
        shift = self.ip.bits - self.prefix
        return CIDR(IP(self.ip.version, self.ip.value >> shift << shift), self.prefix)

    def contains_ip(self, ip: IP) -> bool:
        return self._network(ip) == self._network(self.ip)

    def __str__(self) -> str:
        return f"{self.ip}/{self.prefix}"

    def contains_cidr(self, other: CIDR) -> bool:
        # Kubernetes: netip's Overlaps, and no shorter than this prefix.
        return self.prefix <= other.prefix and self.contains_ip(other.ip)


def parse_cidr(text: str) -> CIDR:
    """``cidr(s)``: ``netip.ParsePrefix`` without IPv4-mapped IPv6 addresses."""
    raw = go_bytes(text)
    address, slash, bits = raw.rpartition("/")

    def fail(msg: str) -> KubeValueError:
        # Kubernetes adds its prefix twice to netip's errors.
        prefix = f"{_CIDR_ERROR}{_CIDR_ERROR}netip.ParsePrefix({go_quote(raw)})"
        return KubeValueError(f"{prefix}: {msg}")

    if not slash:
        raise fail("no '/'")
    try:
        ip, zone = _parse_addr(address)
    except _AddrError as exc:
        raise fail(str(exc)) from None
    if zone:
        raise fail("IPv6 zones cannot be present in a prefix")
    if not re.fullmatch(r"0|[1-9][0-9]*", bits) or int(bits) >= 1 << 63:  # strconv.Atoi
        raise fail(f"bad bits after slash: {go_quote(bits)}")
    if int(bits) > ip.bits:
        raise fail("prefix length out of range")
    if _is_4in6(ip):
        raise KubeValueError(
            f"{_CIDR_ERROR}IPv4-mapped IPv6 address {go_quote(raw)} is not allowed"
        )
    return CIDR(ip, int(bits))


# --------------------------------------------------------------------------
# URLs (net/url)
# --------------------------------------------------------------------------

# Go's shouldEscape per mode: the characters besides ASCII letters and digits left as they are.
_UNRESERVED: Final = "-_.~"
_KEEP: Final = {
    "path": _UNRESERVED + "$&+,/:;=@",
    "host": _UNRESERVED + "!$&'()*+,;=:[]<>\"",
    "user": _UNRESERVED + "$&+,;=",
    "query": _UNRESERVED,
    "fragment": _UNRESERVED + "$&+,/:;=?@!()*",
}
_MAX_QUERY_PARAMS: Final = 10_000
_ALNUM: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_HEX: Final = frozenset("0123456789abcdefABCDEF")


def _keeps(char: str, mode: str) -> bool:
    return char in _ALNUM or char in _KEEP[mode]


class _URLError(ValueError):
    """A ``net/url`` parse failure, worded as Go words it (without the ``parse "..."``)."""


def _escape_error(sequence: str) -> _URLError:
    return _URLError(f"invalid URL escape {go_quote(sequence)}")


def _unescape(s: str, mode: str) -> str:
    i = 0
    while i < len(s):
        char = s[i]
        if char == "%":
            if i + 2 >= len(s) or s[i + 1] not in _HEX or s[i + 2] not in _HEX:
                raise _escape_error(s[i : i + 3])
            if mode == "host" and int(s[i + 1], 16) < 8 and s[i : i + 3] != "%25":
                raise _escape_error(s[i : i + 3])
            if mode == "zone":
                byte = chr(int(s[i + 1 : i + 3], 16))
                if s[i : i + 3] != "%25" and byte != " " and not _keeps(byte, "host"):
                    raise _escape_error(s[i : i + 3])
            i += 3
            continue
        if mode in ("host", "zone") and char < "\x80" and not _keeps(char, "host"):
            raise _URLError(f"invalid character {go_quote(char)} in host name")
        i += 1
    plus = " " if mode == "query" else "+"
    return re.sub(
        r"%([0-9a-fA-F]{2})|\+", lambda m: chr(int(m.group(1), 16)) if m.group(1) else plus, s
    )


def _escape(s: str, mode: str) -> str:
    return "".join(
        char
        if _keeps(char, mode)
        else "+"
        if char == " " and mode == "query"
        else f"%{ord(char):02X}"
        for char in s
    )


def _split_host_port(host: str) -> tuple[str, str]:
    name, colon, port = host.rpartition(":")
    if not colon or not _valid_optional_port(colon + port):
        name, port = host, ""
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    return name, port


def _valid_optional_port(port: str) -> bool:
    return port == "" or (port[0] == ":" and all("0" <= c <= "9" for c in port[1:]))


@dataclass(frozen=True, slots=True, eq=False)
class URL:
    """A parsed URL; equal when their Go ``String()`` forms are."""

    scheme: str = ""
    opaque: str = ""
    user: str | None = None  # escaped, as String() writes it
    host: str = ""
    path: str = ""
    raw_path: str = ""
    raw_query: str = ""
    force_query: bool = False
    omit_host: bool = False
    fragment: str = ""
    raw_fragment: str = ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, URL) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def escaped_path(self) -> str:
        return _escaped(self.raw_path, self.path, "path")

    def hostname(self) -> str:
        return text_of(_split_host_port(self.host)[0])

    def port(self) -> str:
        return _split_host_port(self.host)[1]

    def query(self) -> dict[str, list[str]]:
        """``URL.Query()``: malformed pairs are dropped."""
        values: dict[str, list[str]] = {}
        if self.raw_query.count("&") >= _MAX_QUERY_PARAMS:
            return values  # Go refuses the whole query
        for pair in self.raw_query.split("&"):
            if ";" in pair or not pair:
                continue
            key, _, value = pair.partition("=")
            try:
                key, value = _unescape(key, "query"), _unescape(value, "query")
            except _URLError:
                continue
            values.setdefault(text_of(key), []).append(text_of(value))
        return values

    def __str__(self) -> str:
        out = f"{self.scheme}:" if self.scheme else ""
        if self.opaque:
            out += self.opaque
        else:
            if (self.scheme or self.host or self.user is not None) and not (
                self.omit_host and not self.host and self.user is None
            ):
                if self.host or self.path or self.user is not None:
                    out += "//"
                if self.user is not None:
                    out += self.user + "@"
                out += _escape(self.host, "host")
            path = self.escaped_path()
            if path and path[0] != "/" and self.host:
                out += "/"
            if not out and ":" in path.partition("/")[0]:
                out += "./"
            out += path
        if self.force_query or self.raw_query:
            out += "?" + self.raw_query
        if self.fragment:
            out += "#" + _escaped(self.raw_fragment, self.fragment, "fragment")
        return text_of(out)


def _escaped(raw: str, value: str, mode: str) -> str:
    """Go's EscapedPath/EscapedFragment: the original escaping when it is a valid one."""
    if raw and all(c in "!$&'()*+,;=:@[]%" or _keeps(c, mode) for c in raw):
        try:
            if _unescape(raw, mode) == value:
                return raw
        except _URLError:
            pass
    if mode == "path" and value == "*":
        return "*"
    return _escape(value, mode)


def _parse_host(scheme: str, host: str) -> str:
    bracket = host.rfind("[")
    if bracket > 0:
        raise _URLError("invalid IP-literal")
    if bracket == 0:
        close = host.rfind("]")
        if close < 0:
            raise _URLError("missing ']' in host")
        colon_port = host[close + 1 :]
        if not _valid_optional_port(colon_port):
            raise _URLError(f"invalid port {go_quote(colon_port)} after host")
        colon_port = _unescape(colon_port, "host")
        name = host[1:close]
        zone_at = name.find("%25")
        if zone_at >= 0:
            name = _unescape(name[:zone_at], "host") + _unescape(name[zone_at:], "zone")
        else:
            name = _unescape(name, "host")
        try:
            ip, _ = _parse_addr(name)
        except _AddrError as exc:
            raise _URLError(f"invalid host: {exc}") from None
        if ip.version == 4:
            raise _URLError("invalid IP-literal")
        return f"[{name}]{colon_port}"
    first = host.find(":")
    if first >= 0:
        # Go 1.26 allows several colons (host lists) except for http and https.
        at = first if scheme in ("http", "https") else host.rfind(":")
        if not _valid_optional_port(host[at:]):
            raise _URLError(f"invalid port {go_quote(host[at:])} after host")
    return _unescape(host, "host")


_USERINFO: Final = frozenset("-._:~!$&'()*+,;=%@")
_SCHEME: Final = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):")


def _parse(raw: str, *, via_request: bool) -> URL:
    """Go's ``url.parse``: ``via_request`` for ParseRequestURI (absolute URL or path)."""
    if any(c < " " or c == "\x7f" for c in raw):
        raise _URLError("net/url: invalid control character in URL")
    if raw == "" and via_request:
        raise _URLError("empty url")
    if raw == "*":
        return URL(path="*")
    if raw.startswith(":"):
        raise _URLError("missing protocol scheme")
    scheme_match = _SCHEME.match(raw)
    scheme = scheme_match.group(1).lower() if scheme_match else ""
    rest = raw[scheme_match.end() :] if scheme_match else raw
    force_query = rest.endswith("?") and rest.count("?") == 1
    rest, _, query = rest[:-1].partition("?") if force_query else rest.partition("?")
    if not rest.startswith("/"):
        if scheme:
            return URL(scheme=scheme, opaque=rest, raw_query=query, force_query=force_query)
        if via_request:
            raise _URLError("invalid URI for request")
        if ":" in rest.partition("/")[0]:
            raise _URLError("first path segment in URL cannot contain colon")
    user, host, omit_host = None, "", False
    if (scheme or (not via_request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        userinfo, at, hostport = authority.rpartition("@")
        host = _parse_host(scheme, hostport)
        if at:
            if not all(c in _ALNUM or c in _USERINFO for c in userinfo):
                raise _URLError("net/url: invalid userinfo")
            name, colon, password = userinfo.partition(":")
            user = _escape(_unescape(name, "user"), "user")
            if colon:
                user += ":" + _escape(_unescape(password, "user"), "user")
    elif scheme and rest.startswith("/"):
        omit_host = True
    path = _unescape(rest, "path")
    return URL(
        scheme=scheme,
        user=user,
        host=host,
        path=path,
        raw_path="" if _escape(path, "path") == rest else rest,
        raw_query=query,
        force_query=force_query,
        omit_host=omit_host,
    )


def parse_url(text: str) -> URL:
    """``url(s)``: valid for ``url.ParseRequestURI``, and the value ``url.Parse`` gives."""
    raw = where = go_bytes(text)
    before, _, fragment = raw.partition("#")
    try:
        _parse(raw, via_request=True)
        where = before
        parsed = _parse(before, via_request=False)
        where = raw
        if fragment:
            value = _unescape(fragment, "fragment")
            raw_fragment = "" if _escape(value, "fragment") == fragment else fragment
            parsed = replace(parsed, fragment=value, raw_fragment=raw_fragment)
    except _URLError as exc:
        raise KubeValueError(
            f"URL parse error during conversion from string: parse {go_quote(where)}: {exc}"
        ) from None
    return parsed


def request_uri_error(text: str) -> str | None:
    """Go's ``url.ParseRequestURI(text)`` error text (``parse "...": ...``); None if it accepts."""
    raw = go_bytes(text)
    try:
        _parse(raw, via_request=True)
    except _URLError as exc:
        return f"parse {go_quote(raw)}: {exc}"
    return None


def is_url(text: str) -> bool:
    """``isURL(s)``: ``url.ParseRequestURI`` accepts it."""
    return request_uri_error(text) is None


# --------------------------------------------------------------------------
# Semantic versions (blang/semver v4)
# --------------------------------------------------------------------------

_UINT64: Final = 1 << 64
_ALPHANUM_DASH: Final = re.compile(r"[0-9A-Za-z-]*")


@dataclass(frozen=True, slots=True)
class Semver:
    """A semantic version; equality and order ignore build metadata."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()
    build: tuple[str, ...] = field(default=(), compare=False)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(map(str, self.pre))
        return text + ("+" + ".".join(self.build) if self.build else "")

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1: numbers first, a pre-release below the release, then its identifiers."""
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre, strict=False):
            if a != b:
                if isinstance(a, int) != isinstance(b, int):
                    return -1 if isinstance(a, int) else 1
                return -1 if a < b else 1  # type: ignore[operator]
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))


def _number(text: str, what: str) -> int:
    if not text.isascii() or not (text == "" or text.isdigit()):
        raise KubeValueError(f"Invalid character(s) found in {what} {go_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise KubeValueError(
            f"{what.capitalize()} must not contain leading zeroes {go_quote(text)}"
        )
    if text == "" or int(text) >= _UINT64:
        reason = "invalid syntax" if text == "" else "value out of range"
        raise KubeValueError(f"strconv.ParseUint: parsing {go_quote(text)}: {reason}")
    return int(text)


def _prerelease(text: str) -> int | str:
    if not text:
        raise KubeValueError("Prerelease is empty")
    if text.isascii() and text.isdigit():
        if len(text) > 1 and text[0] == "0":
            raise KubeValueError(
                f"Numeric PreRelease version must not contain leading zeroes {go_quote(text)}"
            )
        return _number(text, "prerelease")
    if not _ALPHANUM_DASH.fullmatch(text):
        raise KubeValueError(f"Invalid character(s) found in prerelease {go_quote(text)}")
    return text


def parse_semver(text: str) -> Semver:
    """``semver(s)``: strict semver 2.0 (no ``v`` prefix, all three numbers)."""
    if not text:
        raise KubeValueError("Version string empty")
    parts = go_bytes(text).split(".", 2)  # quoted in errors as Go quotes bytes
    if len(parts) != 3:
        raise KubeValueError("No Major.Minor.Patch elements found")
    major, minor = _number(parts[0], "major number"), _number(parts[1], "minor number")
    rest, plus, build = parts[2].partition("+")
    patch, dash, pre = rest.partition("-")
    number = _number(patch, "patch number")
    prerelease = tuple(_prerelease(p) for p in pre.split(".")) if dash else ()
    identifiers = tuple(build.split(".")) if plus else ()
    for identifier in identifiers:
        if not identifier:
            raise KubeValueError("Build meta data is empty")
        if not _ALPHANUM_DASH.fullmatch(identifier):
            raise KubeValueError(
                f"Invalid character(s) found in build meta data {go_quote(identifier)}"
            )
    return Semver(major, minor, number, prerelease, identifiers)
