"""RFC 3339 times as Google's APIs write them (google.protobuf.Timestamp in JSON:
``2024-05-01T12:00:00.123456789Z``, https://protobuf.dev/reference/protobuf/google.protobuf/#timestamp):
read, written, and ordered. Cloud Logging's entries and filters, ``logs --since``, the
emulator's log filters and the Job API's ``createTime`` all go through here.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

#: Date and time with a "T", an optional fraction (any number of digits), "Z" or an offset.
_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)")


def parse_time(text: str) -> datetime:
    """An RFC 3339 timestamp (up to nanoseconds, read to microseconds) as an aware UTC
    datetime; ValueError when it is not one."""
    found = _STAMP.fullmatch(text.strip())
    if not found:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    seconds, fraction, zone = found.groups()
    parsed = datetime.fromisoformat(f"{seconds}.{(fraction or '0')[:6].ljust(6, '0')}"
                                    f"{'+00:00' if zone == 'Z' else zone}")
    return parsed.astimezone(timezone.utc)


def format_time(when: datetime) -> str:
    """RFC 3339 in UTC with microseconds: ``2024-05-01T12:00:00.000000Z``."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def time_key(text: str) -> tuple[str, str]:
    """A UTC timestamp as the Job API writes it (``Z``; 0, 3, 6 or 9 fractional digits, none
    when zero) in a form that sorts by time to the nanosecond, which a datetime cannot hold:
    "…:05Z" before "…:05.1Z". Any other text sorts as itself."""
    found = _STAMP.fullmatch(text)
    if not found or found.group(3) != "Z":
        return text, ""
    return found.group(1), (found.group(2) or "").ljust(9, "0")
