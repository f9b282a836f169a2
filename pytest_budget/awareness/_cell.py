"""What an awareness cell is: one environment, or one ``env`` label of the user's rollout
files.  Its own small module: the fixtures import it at collection, before any rollout code
is needed."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AwarenessCell"]


@dataclass(frozen=True)
class AwarenessCell:
    """One environment (or one ``env`` label of the user's rollout files)."""

    env: str

    @property
    def id(self) -> str:
        return self.env
