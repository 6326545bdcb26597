"""How the agent of ``fxtui run`` samples, as the collector passes it in the program's environment."""

from __future__ import annotations

from dataclasses import dataclass

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
