"""The sequence-parallel attribute contract: one source of truth for the defaults."""

from __future__ import annotations

from typing import Final

#: Every flag of the contract and its default. False is always the non-SP path,
#: so a class that never decided about sequence parallelism takes the safe branch.
SEQUENCE_PARALLEL_DEFAULTS: Final[dict[str, bool]] = {
    "use_sequence_parallel": False,
    "use_sequence_parallel_moe": False,
}


class SequenceParallelDefaults:
    """Mixin giving a model class the sequence-parallel flags at class level.

    These are instance variables with class-level defaults, not ``ClassVar``: an
    ``__init__`` may still set them per instance, and a subclass whose
    ``__init__`` skips its parent's (``nn.Module.__init__(self)``) still reads
    ``False`` instead of raising ``AttributeError`` late in serving.
    """

    use_sequence_parallel: bool = SEQUENCE_PARALLEL_DEFAULTS["use_sequence_parallel"]
    use_sequence_parallel_moe: bool = SEQUENCE_PARALLEL_DEFAULTS[
        "use_sequence_parallel_moe"
    ]
