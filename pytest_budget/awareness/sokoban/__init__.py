"""The Sokoban environment of the awareness suite: puzzles, rollouts and the reference
actor (the boards themselves are shared with triage: ``pytest_budget._environments``).
"""

from typing import TYPE_CHECKING

from pytest_budget._core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # resolved on first use (see pytest_budget._core.lazy_exports)
    from pytest_budget.awareness.sokoban._env import (
        ACTION_SEPARATOR,
        ENV_NAME,
        SOKOBAN_PRESETS,
        ParsedReply,
        SokobanPreset,
        SokobanReferenceActor,
        generate_puzzles,
        generate_rollouts,
        grid_from_prompt,
        make_rollout_id,
        parse_reply,
        puzzle_seed,
        run_rollout,
        sokoban_prompt,
    )

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "ACTION_SEPARATOR",
    "ENV_NAME",
    "SOKOBAN_PRESETS",
    "ParsedReply",
    "SokobanPreset",
    "SokobanReferenceActor",
    "generate_puzzles",
    "generate_rollouts",
    "grid_from_prompt",
    "make_rollout_id",
    "parse_reply",
    "puzzle_seed",
    "run_rollout",
    "sokoban_prompt",
]
