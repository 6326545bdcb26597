"""The names of the environment variables a collector sets for the agents of the program it watches.

Names only, and no import: the program's boot and every Python process the program starts (its ``sitecustomize``,
:mod:`fxtui.agent.site`) read them as the process starts, before its first line, where each import is time the
program waits for. :mod:`fxtui.wire.agent_contract` has what the variables hold, and names them from here.
"""

#: Where the collector listens for agents (a unix socket path, or ``HOST:PORT``).
AGENT_ADDRESS = "FXTUI_AGENT"
#: The key an agent proves itself with (hex).
AGENT_KEY = "FXTUI_AGENT_KEY"
#: The agent's options (sampling, warm-up), encoded.
AGENT_OPTIONS = "FXTUI_AGENT_OPTIONS"
#: The pid of the program's own process when a collector beside it prints the profile as the program ends
#: (``fxtui run --once``): that process, and no other it starts, says how it ended and waits for the profile.
PROGRAM_PID = "FXTUI_PROGRAM_PID"
