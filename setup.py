"""Only the C part of the build; everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        # The audit's body cutter (vllm_sp_base/_audit/_bodies.c). Optional: where
        # it cannot be compiled the audit parses whole files, slower, same findings.
        Extension(
            "vllm_sp_base._audit._bodies",
            sources=["vllm_sp_base/_audit/_bodies.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
