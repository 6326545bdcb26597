"""What a collector tells the agent in the program it starts: where to report, the key, how to sample.

Set by the collector (:mod:`fxtui.jobs.launch`) in the program's environment, read by the agent
(:mod:`fxtui.agent`). Free of heavy imports: the boot reads them before the program has imported anything.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Where the collector listens for agents (a unix socket path, or ``HOST:PORT``).
AGENT_ADDRESS = "FXTUI_AGENT"
#: The key an agent proves itself with (hex).
AGENT_KEY = "FXTUI_AGENT_KEY"
#: The agent's options (sampling, warm-up), encoded.
AGENT_OPTIONS = "FXTUI_AGENT_OPTIONS"

#: Share of the program's time the sampled steps may cost it.
BUDGET = 0.02
#: Steps at the start never sampled and left out of the figures.
WARMUP = 5


@dataclass(frozen=True)
class AgentOptions:
    """How the agent samples (the collector passes them in the environment)."""

    warmup: int = WARMUP
    every: int = 0
    """Sample one step in ``every`` (0: adapt to the budget)."""
    budget: float = BUDGET

    def encode(self) -> str:
        return f"{self.warmup},{self.every},{self.budget}"

    @classmethod
    def decode(cls, text: str) -> AgentOptions:
        try:
            warmup, every, budget = text.split(",")
            return cls(int(warmup), int(every), float(budget))
        except ValueError:
            return cls()
