"""What crosses a process boundary (``fxtui.wire``): typed messages each way, one reader of snapshots, and the
socket's unpickler, which takes fxtui's messages and nothing that could act."""

from __future__ import annotations

import dataclasses
import io
import pickle

import pytest

from fxtui.core.snapshot import Snapshot, State
from fxtui.ui.demo.demo_source import make_snapshot, synthetic_graph
from fxtui.wire.agent_messages import Hello
from fxtui.wire.snapshot_packing import Publisher, SnapshotReader
from fxtui.wire.sockets import Refused, Unpickler
from fxtui.wire.viewer_commands import ShowKind
from fxtui.wire.viewer_messages import NewGraph, PackedSnapshot, ProgramEnded

pytestmark = pytest.mark.unit


class _Pipe:
    """A connection's sending end that keeps what it is sent, pickled as a pipe would."""

    def __init__(self) -> None:
        self.sent: list[object] = []

    def send(self, message: object) -> None:
        self.sent.append(pickle.loads(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)))


def test_the_publisher_sends_typed_messages_and_the_reader_puts_the_graph_back_on_each_snapshot() -> None:
    graph, medians = synthetic_graph(50)
    first = make_snapshot(graph, medians)
    pipe = _Pipe()
    publish = Publisher(pipe)  # type: ignore[arg-type]
    publish(first)
    publish(dataclasses.replace(first, seq=first.seq + 1))
    assert [type(m) for m in pipe.sent] == [NewGraph, PackedSnapshot, PackedSnapshot]  # the graph once

    reader = SnapshotReader()
    read = [reader.read(m) for m in pipe.sent]
    assert read[0] is None  # a graph is kept, not published
    assert all(s is not None and s.graph == graph for s in read[1:])
    assert [s.seq for s in read[1:] if s is not None] == [first.seq, first.seq + 1]
    assert dict(read[2].nodes) == dict(first.nodes)  # type: ignore[union-attr]
    assert reader.read(ProgramEnded(3)) is None  # not a snapshot: the caller reads it itself


def test_a_snapshot_before_any_graph_reads_without_one() -> None:
    reader = SnapshotReader()
    pipe = _Pipe()
    Publisher(pipe)(Snapshot(None, State.LOADING))  # type: ignore[arg-type]
    snapshot = reader.read(pipe.sent[0])
    assert snapshot is not None and snapshot.graph is None and snapshot.state is State.LOADING


def _load(data: bytes) -> object:
    return Unpickler(io.BytesIO(data)).load()


def test_the_sockets_unpickler_takes_fxtuis_messages_both_ways() -> None:
    hello = Hello(pid=7, argv=("train.py",), torch="2.x", threads=2, rank=1, world_size=2)
    assert _load(pickle.dumps(hello)) == hello
    assert _load(pickle.dumps(ShowKind("eval"))) == ShowKind("eval")


def test_a_message_of_an_fxtui_from_before_wire_reads_as_todays() -> None:
    hello = Hello(pid=7, argv=("train.py",), torch="2.x", threads=2)
    old = pickle.dumps(hello, protocol=4).replace(b"fxtui.wire.agent_messages", b"fxtui.core.agent_messages")
    assert b"fxtui.core.agent_messages" in old
    assert _load(old) == hello


def test_the_sockets_unpickler_refuses_what_is_not_a_message() -> None:
    from fxtui.wire.sockets import GuardedListener

    with pytest.raises(Refused):
        _load(pickle.dumps(GuardedListener))  # a class of wire/ that acts: not data
    with pytest.raises(Refused):
        _load(pickle.dumps(io.BytesIO))


def test_a_dead_collectors_socket_file_is_taken_over_even_when_it_goes_first(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os
    import socket

    from fxtui.wire import sockets

    path = str(tmp_path / "viewer.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # its file stays, and nobody listens on it
    taken = sockets._bound(path)
    taken.close()
    assert os.path.exists(path)

    real_unlink = os.unlink

    def gone_first(where: str) -> None:  # the dead collector's own end removes it between the probe and the unlink
        real_unlink(where)
        raise FileNotFoundError(where)

    monkeypatch.setattr(sockets.os, "unlink", gone_first)
    again = sockets._bound(path)
    try:
        again.listen(1)
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.connect(path)  # the new socket answers there
        probe.close()
    finally:
        again.close()


def test_a_socket_path_too_long_for_a_unix_socket_is_one_sentence(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fxtui.core.errors import FxtuiError
    from fxtui.wire import sockets

    deep = tmp_path / ("d" * 120) / "viewer.sock"
    with pytest.raises(FxtuiError, match="longer than a unix socket's path may be"):
        sockets._bound(str(deep))
