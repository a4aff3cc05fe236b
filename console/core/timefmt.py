"""Times written by producers, read into one form: ISO-8601 UTC, ``YYYY-MM-DDTHH:MM:SSZ``.

Producers write times as they like: ``2026-11-28T14:30:00+09:00``, ``...Z``, with or without
fractions, with a space instead of ``T``, or as epoch seconds or milliseconds (a number or a
string of digits). Kept as written they would sort as text, ``14:30+09:00`` above ``06:00Z``;
read here they compare as the instants they are. A time without an offset is taken as UTC.
Anything else is not a time (``None``): the caller falls back to the file's modification
time and says so.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone

_ISO = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d{1,9}))?)?)?"
    r"\s*(Z|z|UTC|[+-]\d\d(?::?\d\d)?)?\Z"
)
_EPOCH_MIN = 946_684_800  # 2000-01-01: smaller numbers are not epoch times of runs
_EPOCH_MAX = 4_102_444_800  # 2100-01-01


def _from_epoch(seconds: float) -> str | None:
    if not math.isfinite(seconds):
        return None
    if seconds > _EPOCH_MAX * 100:  # milliseconds (or finer)
        for scale in (1e3, 1e6, 1e9):
            if _EPOCH_MIN <= seconds / scale < _EPOCH_MAX:
                seconds /= scale
                break
    if not _EPOCH_MIN <= seconds < _EPOCH_MAX:
        return None
    return datetime.fromtimestamp(int(seconds), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: object) -> str | None:
    """``value`` as ISO-8601 UTC to the second, or None if it is not a time."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return _from_epoch(float(value))
    if not isinstance(value, str) or not 4 <= len(value) <= 64:
        return None
    text = value.strip()
    if text.isdigit() or (text[:1] == "-" and text[1:].isdigit()) or re.fullmatch(r"\d+\.\d+", text):
        return _from_epoch(float(text))
    m = _ISO.match(text)
    if m is None:
        return None
    year, month, day, hour, minute, second, _fraction, zone = m.groups()
    try:
        t = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                     tzinfo=timezone.utc)
    except ValueError:  # month 13, day 32, hour 24...
        return None
    if zone and zone not in ("Z", "z", "UTC"):
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:] or 0)
        if hours > 23 or minutes > 59:
            return None
        try:
            t -= sign * timedelta(hours=hours, minutes=minutes)
        except OverflowError:  # the first or last hours datetime can hold
            return None
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def is_epoch(value: object) -> bool:
    """Whether ``value`` was written as epoch seconds (a number, or a string of digits)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and bool(re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", value))
