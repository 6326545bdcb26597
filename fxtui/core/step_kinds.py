"""The kinds of step a program's figures are of, apart from the figures themselves.

``fxtui run`` and ``fxtui attach`` offer them as ``--kind``'s choices while parsing their options: before a program
starts, where :mod:`fxtui.core.program_run` (its figures, statistics and all) would be time spent before the
program's first line. :mod:`fxtui.core.program_run` names them from here.
"""

from __future__ import annotations

#: The kinds of step the agent tells apart, in the order the figures lead with them: training steps (an
#: iteration: its forwards, backwards and optimizer steps), evaluation calls (a root module called without
#: gradients, or in eval() mode once trained) and transformers' generate() calls.
STEP_KINDS = ("train", "eval", "generate")
