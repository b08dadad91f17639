"""A fake clock and a recording push for the timing tests."""

from typing import Any


class FakeClock:
    """Time that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Moves time forward."""
        self.now += seconds


class Recorder:
    """A push that keeps every record."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def __call__(self, **record: Any) -> None:
        self.records.append(record)

    def rates(self) -> list[float]:
        """The reported rates, in order."""
        return [r["rate"] for r in self.records if "rate" in r]

    def with_key(self, key: str) -> list[dict[str, Any]]:
        """The records that have ``key``."""
        return [r for r in self.records if key in r]
