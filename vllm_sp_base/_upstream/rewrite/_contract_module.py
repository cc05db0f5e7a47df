"""The contract module the patch adds to vLLM, rendered from ``vllm_sp_base``.

There is no second, hand-kept copy: the flags, their defaults and the mixin's
docstring all come from :mod:`vllm_sp_base._contract`.
"""

from __future__ import annotations

import inspect
import textwrap

from vllm_sp_base._contract import SEQUENCE_PARALLEL_DEFAULTS, SequenceParallelDefaults
from vllm_sp_base._upstream._names import MIXIN, SPDX_HEADER


def render() -> str:
    """The source of ``vllm/models/common/sequence_parallel_defaults.py``."""
    docstring = textwrap.indent(inspect.cleandoc(SequenceParallelDefaults.__doc__ or ""), "    ")
    fields = "\n".join(
        f"    {flag}: bool = {default!r}" for flag, default in SEQUENCE_PARALLEL_DEFAULTS.items()
    )
    return (
        f'{SPDX_HEADER}"""Class-level defaults for the sequence-parallel flags of model classes."""\n'
        f"\n\nclass {MIXIN}:\n"
        f'    """{docstring.lstrip()}\n    """\n'
        f"\n{fields}\n"
    )
