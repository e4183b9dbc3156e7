"""Redaction and failing tests' messages: secrets hidden in a manifest's config and in every
message and transcript, control characters shown, long messages cut."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kbconform.report._verdicts import FAILED

REDACTED = "[redacted]"
_SECRET_KEY = re.compile(r"secret|token|passw(or)?d|api[-_]?key|credential|auth|private[-_]?key|dsn", re.I)


def redact(value: Any) -> Any:
    """``value`` with values under secret-looking keys and passwords inside URLs replaced."""
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if _SECRET_KEY.search(str(key)) and value[key] not in (None, "")
            else redact(value[key])
            for key in value
        }
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str) and "://" in value:
        parts = urlsplit(value)
        if parts.password:
            netloc = f"{parts.username}:{REDACTED}@{parts.hostname}" + (
                f":{parts.port}" if parts.port else ""
            )
            return urlunsplit(parts._replace(netloc=netloc))
    return value


#: The most characters of a failing test's ``message`` (report-v1's ``maxLength``).
MAX_MESSAGE = 2000
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]|[\ud800-\udfff]")
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/?#@:]*:)[^\s/?#@]+@", re.I)


def secrets_of(value: Any, hidden: bool = False) -> set[str]:
    """The strings :func:`redact` hides in ``value`` (a manifest's config): every string (and
    number) under a secret-looking key, and every password inside a URL."""
    found: set[str] = set()
    if isinstance(value, Mapping):
        for key, item in value.items():
            secret = bool(_SECRET_KEY.search(str(key))) and item not in (None, "")
            found |= secrets_of(item, hidden or secret)
    elif isinstance(value, list):
        for item in value:
            found |= secrets_of(item, hidden)
    elif isinstance(value, str):
        if hidden:
            found.add(value)
        elif "://" in value:
            password = urlsplit(value).password
            if password:
                found.add(password)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and hidden:
        found.add(str(value))
    return {secret for secret in found if secret}


def _escaped(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def message(text: str, hidden: Iterable[str] = ()) -> str | None:
    """A failing test's message as a report records it, or None when nothing is left: terminal
    colour sequences dropped, every ``hidden`` string (:func:`secrets_of` the config) and every
    password inside a URL replaced by ``[redacted]``, control characters other than newline and
    tab and lone surrogates shown as ``\\xNN`` / ``\\uNNNN``, blank space around it trimmed, and
    cut to :data:`MAX_MESSAGE` characters, the last of them saying how many more there were."""
    shown = _hide(_ANSI.sub("", text), sorted(set(hidden), key=len, reverse=True))
    shown = _UNPRINTABLE.sub(_escaped, shown).strip()
    if len(shown) > MAX_MESSAGE:
        room = MAX_MESSAGE - len(f" \u2026 ({len(shown):,} more characters)")
        shown = f"{shown[:room]} \u2026 ({len(shown) - room:,} more characters)"
    return shown or None


def _hide(text: str, hidden: list[str]) -> str:
    """``text`` with each ``hidden`` string (longest first) and every URL password replaced by
    ``[redacted]``."""
    for secret in hidden:
        text = text.replace(secret, REDACTED)
    return _URL_PASSWORD.sub(rf"\g<1>{REDACTED}@", text)


def _with_message(entry: Mapping[str, Any], hidden: Iterable[str]) -> dict[str, Any]:
    """A result as the report lists it: a failing or erroring test's ``message`` cleaned by
    :func:`message` and its ``transcript`` scrubbed by :func:`_scrubbed`; any other test
    carries neither."""
    kept = {key: value for key, value in entry.items() if key not in ("message", "transcript")}
    given = entry.get("message")
    if kept.get("status") in FAILED and isinstance(given, str):
        shown = message(given, hidden)
        if shown is not None:
            kept["message"] = shown
    recorded = entry.get("transcript")
    if kept.get("status") in FAILED and isinstance(recorded, list) and recorded:
        kept["transcript"] = _scrubbed(recorded, sorted(set(hidden), key=len, reverse=True))
    return kept


def _scrubbed(value: Any, hidden: list[str]) -> Any:
    """``value`` (a transcript) with every ``hidden`` string and URL password inside its string
    values replaced by ``[redacted]``; keys and structure as they are."""
    if isinstance(value, str):
        return _hide(value, hidden)
    if isinstance(value, Mapping):
        return {key: _scrubbed(item, hidden) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrubbed(item, hidden) for item in value]
    return value


#: The most characters of a failing test's message the Markdown summary shows (its first line).
SUMMARY_MESSAGE = 200


def first_line(test: Mapping[str, Any]) -> str:
    """The first non-empty line of a test's message, at most :data:`SUMMARY_MESSAGE`
    characters (empty when it has none)."""
    given = test.get("message")
    if not isinstance(given, str):
        return ""
    first = next((part.strip() for part in (message(given) or "").splitlines() if part.strip()), "")
    return first[: SUMMARY_MESSAGE - 1] + "\u2026" if len(first) > SUMMARY_MESSAGE else first
