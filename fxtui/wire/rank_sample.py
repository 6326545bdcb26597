"""Which ranks of a large job have their ops timed: a rule the agent and its collector share, never said on the wire.

A collector compares at most :data:`MAX_COMPARED` ranks node by node (each rank's snapshot is ~25 ms and ~1 MB of
statistics for a model of 1,000 ops). Above that it compares a sample: every :func:`stride`-th rank of the job. A
rank outside the sample is still watched (its steps' wall time, phases and wait for a CPU go to the collector, so
its pace and phases stand beside every other rank's), but its agent times no op: it never samples a step, so its
program pays nothing for a per-op timer whose records the collector would only throw away, and its collector
decodes a few hundred bytes a step instead of ~25 kB.

Both sides know the rank (``RANK``) and the job's size (``WORLD_SIZE``) from torchrun's environment, so each
computes the sample alone; nothing is asked or answered, and a collector that is gone or late changes nothing.
"""

from __future__ import annotations

#: Ranks compared (and their ops timed) at most; a larger job compares every :func:`stride`-th rank.
MAX_COMPARED = 256


def stride(world: int) -> int:
    """1 up to :data:`MAX_COMPARED` ranks; above, the step between the ranks whose ops are timed and compared."""
    return max(1, -(-world // MAX_COMPARED))


def times_ops(rank: int | None, world: int) -> bool:
    """Whether ``rank`` of a job of ``world`` ranks has its sampled steps' ops timed (None: not a rank of a
    distributed job, always timed)."""
    return rank is None or rank % stride(world) == 0


def sample_sentence(compared: int, world: int) -> str:
    """What the view says of a job larger than :data:`MAX_COMPARED` ranks ("" when every rank is compared)."""
    every = stride(world)
    if every == 1:
        return ""
    nth = _nth(every)
    return (
        f"comparing {compared} of the {world} ranks: above {MAX_COMPARED} ranks only every {nth} rank's ops are "
        f"timed (ranks 0, {every}, {2 * every}, …); the others send their steps' times only"
    )


def untimed_sentence(rank: int, world: int) -> str:
    """What the view of a rank outside the sample, shown alone (its own collector's), says of its missing ops."""
    return (
        f"rank {rank} of {world} times no op: above {MAX_COMPARED} ranks only every {_nth(stride(world))} rank's ops "
        "are timed; its steps' wall time and phases are shown"
    )


def _nth(every: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(every, f"{every}th")
