"""Weekday and month names, read by the text stage's vocabulary and the concept generators alike."""

from __future__ import annotations

__all__ = ["MONTHS", "WEEKDAYS"]

WEEKDAYS: tuple[str, ...] = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS: tuple[str, ...] = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
                           "October", "November", "December")
