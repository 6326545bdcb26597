"""fxtui run of a torchrun job: every rank's agent reports, the ranks are compared, the straggler is named."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import DDP_PROGRAM, DDP_RUN_OPTIONS, NEEDS_GLOO, fxtui_run

pytestmark = [pytest.mark.e2e, pytest.mark.slow, NEEDS_GLOO]


def test_two_ranks_are_compared_and_the_one_with_four_times_the_batch_is_named(tmp_path: Path) -> None:
    (tmp_path / "ddp.py").write_text(DDP_PROGRAM)  # rank 1 gets four times the batch
    out = tmp_path / "run.json"
    command = fxtui_run("--once", *DDP_RUN_OPTIONS, "--json", str(out), "--chrome-trace", str(tmp_path / "trace.json"),
                        "-m", "torch.distributed.run", "--nproc-per-node", "2", "ddp.py")  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    saved = json.loads(out.read_text())
    ranks = saved["metadata"]["ranks"]
    assert [r["rank"] for r in ranks["ranks"]] == [0, 1] and ranks["shown"] == 0
    assert ranks["straggler"].startswith("rank 1 is ")  # four times the batch: the slow one
    assert ranks["ranks"][1]["compute_s"] > 1.3 * ranks["ranks"][0]["compute_s"]
    assert "straggler  rank 1 is" in done.stdout
    rows = {r["name"]: r for r in saved["rows"] if r["rank"] == 0}
    rank1 = {r["name"]: r for r in saved["rows"] if r["rank"] == 1}  # every rank's rows, each with its rank
    heavy = rows["2 · addmm"] if "2 · addmm" in rows else rows["0 · addmm"]
    assert heavy["rank"] == 0 and heavy["slowest_rank"] == 1 and heavy["rank_max_s"] > heavy["rank_min_s"] > 0
    assert rank1[heavy["name"]]["median_s"] == heavy["rank_max_s"]  # rank 1's own row holds the slowest median
    assert any(r["phase"] == "comm" and r["target"].startswith("c10d.") for r in saved["rows"])  # DDP's allreduce
    trace = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    names = [e["args"]["name"] for e in trace if e["ph"] == "M"]
    assert names == [f"fxtui {saved['metadata']['model']} rank 0", f"fxtui {saved['metadata']['model']} rank 1"]
    assert {e["pid"] for e in trace if e["ph"] == "X"} == {1, 2}  # one process per rank, on one clock
