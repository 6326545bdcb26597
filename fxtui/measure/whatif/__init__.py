"""Measured what-ifs (see :mod:`fxtui.core.what_ifs` for the names and the parser)."""
