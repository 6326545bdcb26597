"""Measured what-ifs (see :mod:`fxtui.core.what_if_catalogue` for the names and the parser)."""
