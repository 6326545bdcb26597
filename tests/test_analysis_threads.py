"""Thread settings and their warnings."""

from __future__ import annotations

import os

import pytest
import torch

from fxtui.measure.analysis.cpu_setup import thread_info

pytestmark = pytest.mark.unit


def test_reports_the_current_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    info = thread_info()
    assert info.intra_op == torch.get_num_threads()
    assert info.inter_op == torch.get_num_interop_threads()
    assert dict(info.env) == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": ""}
    assert info.mkldnn == torch.backends.mkldnn.is_available()
    text = "\n".join(info.lines())
    assert f"{info.intra_op} intra-op" in text and "OMP_NUM_THREADS=1" in text


def test_warns_when_threads_exceed_available_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    info = thread_info()
    assert info.cores_available == 1
    assert any("4 intra-op threads but only 1 core" in w for w in info.warnings)
    assert any(w.startswith("OMP_NUM_THREADS=4") for w in info.warnings)
    assert any(line.startswith("warning: 4 intra-op") for line in info.lines())


def test_no_thread_warning_when_threads_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    info = thread_info()
    assert not any("thread" in w or "exceeds" in w for w in info.warnings)


def test_narrow_affinity_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 3}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    info = thread_info()
    assert info.affinity == (2, 3)
    assert any("2 of the machine's 8 CPUs" in w for w in info.warnings)
