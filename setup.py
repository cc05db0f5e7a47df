"""Only the C part of the build; everything else is in pyproject.toml."""

from setuptools import Extension, setup

LEXER = "vllm_sp_base/_audit/lexer/"

setup(
    ext_modules=[
        # The audit's compiled passes (pre-scan, body cutter, code digest). Optional: where it
        # cannot be compiled the audit uses its pure-Python paths, slower, same findings.
        Extension(
            "vllm_sp_base._audit._lexer",
            sources=[LEXER + name for name in ("module.c", "lex.c", "bodies.c", "scan.c", "inits.c", "read.c", "digest.c", "spells.c")],
            depends=[LEXER + "lex.h", LEXER + "scan.h"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
