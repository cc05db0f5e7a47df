"""``audit --fix``: the fix a maintainer would write for each finding,
planned from source (``_plan``, reading names with ``_names``), rendered with
libcst (``_render``) and written all or nothing (``_apply``)."""
