"""The environment variables that tell a program's agent where to report (set by the collector, read by the agent).

Their own module, free of imports: the boot reads them before the program has imported anything.
"""

#: Where the collector listens for agents (a unix socket path, or ``HOST:PORT``).
AGENT_ADDRESS = "FXTUI_AGENT"
#: The key an agent proves itself with (hex).
AGENT_KEY = "FXTUI_AGENT_KEY"
#: The agent's options (sampling, warm-up), encoded.
AGENT_OPTIONS = "FXTUI_AGENT_OPTIONS"
