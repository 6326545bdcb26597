"""The agent's sender never costs the program its life: a collector that dies, stops reading or comes back, and a
forked child, are each met without raising, blocking or holding a growing buffer."""

from __future__ import annotations

import os
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from fxtui.agent import sender as sender_module
from fxtui.agent.sender import QUEUE, Sender
from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.wire.agent_messages import Bye, Hello, Step
from fxtui.wire.sockets import AGENT_LIMIT, GuardedListener, receive, shutdown

pytestmark = pytest.mark.e2e

KEY = b"k" * 32


class FakeCollector:
    """A collector's socket: every message its agents send, in order."""

    def __init__(self, path: Path, *, read: bool = True) -> None:
        self.messages: list[object] = []
        self.connections: list[Connection] = []
        self.read = read
        self.arrived = threading.Condition()
        self.listener = GuardedListener(str(path), KEY, self._serve)
        self.listener.start()

    def _serve(self, connection: Connection) -> None:
        self.connections.append(connection)
        if not self.read:
            return  # takes the connection, never reads it: a collector that is stuck
        while True:
            try:
                message = receive(connection, AGENT_LIMIT)
            except (EOFError, OSError):
                return
            with self.arrived:
                assert isinstance(message, list), "the sender sends its messages gathered, in a list"
                self.messages.extend(message)
                self.arrived.notify_all()

    def wait_for(self, count: int) -> list[object]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.messages) >= count, timeout=60)
        return list(self.messages)

    def kill(self) -> None:
        """As ``kill -9`` would leave it: the listening socket and every connection gone."""
        self.listener.close()
        for connection in self.connections:
            shutdown(connection)


def step(index: int, nodes: tuple[int, ...] = (), roots: tuple[int, ...] = ()) -> Step:
    return Step(
        index, "train", 1000, (0, 0, 0, 0, 0), False, False,
        nodes=[EagerNode(n, 0, "fc", "forward", "add", 1, "aten.add") for n in nodes],
        roots=[RootModule(r, "Net", {"fc": "Linear"}) for r in roots],
    )  # fmt: skip


def hello() -> Hello:
    return Hello(os.getpid(), ("train.py",), "2.x", 2)


def test_messages_reach_the_collector_in_order_and_close_sends_the_last(tmp_path: Path) -> None:
    collector = FakeCollector(tmp_path / "agent.sock")
    sender = Sender(str(tmp_path / "agent.sock"), KEY)
    sender.send(hello())
    for i in range(20):
        sender.send(step(i))
    sender.send(Bye(20))
    sender.close()
    got = collector.wait_for(22)
    assert isinstance(got[0], Hello) and [m.index for m in got[1:21]] == list(range(20))  # type: ignore[attr-defined]
    assert isinstance(got[21], Bye)


def test_a_dead_collector_turns_the_sender_off_and_it_holds_nothing(tmp_path: Path) -> None:
    collector = FakeCollector(tmp_path / "agent.sock")
    sender = Sender(str(tmp_path / "agent.sock"), KEY)
    heard: list[bool] = []
    sender.on_change(heard.append)
    sender.send(hello())
    collector.wait_for(1)
    collector.kill()
    for i in range(10 * QUEUE):  # the program goes on stepping: nothing raises, nothing piles up
        sender.send(step(i))
        if not sender.alive:
            break
    deadline = time.monotonic() + 60
    while (sender.alive or not heard) and time.monotonic() < deadline:  # the callback runs in the sender's thread
        sender.send(step(0))
        time.sleep(0.01)
    assert not sender.alive and heard == [False]
    for i in range(10 * QUEUE):
        sender.send(step(i))
    assert sender._queue.qsize() == 0  # nothing held for a collector that is gone
    sender.close()  # returns at once: nobody to wait for


def test_a_collector_that_stops_reading_costs_dropped_messages_and_a_bounded_close(tmp_path: Path) -> None:
    FakeCollector(tmp_path / "agent.sock", read=False)
    sender = Sender(str(tmp_path / "agent.sock"), KEY)
    big = Step(0, "train", 1, (0,), True, False, ops=[(i, i, "8×32", i) for i in range(2000)])
    for _ in range(4 * QUEUE):  # far more than the socket and the queue hold
        sender.send(big)
    assert sender.dropped > 0 and sender._queue.qsize() <= QUEUE
    sender.close(timeout=0.5)  # gives up once nothing leaves; the test would hang otherwise


def test_a_new_collector_hears_the_greeting_and_every_node_again(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sender_module, "RETRY_S", 0.1)
    path = tmp_path / "agent.sock"
    first = FakeCollector(path)
    sender = Sender(str(path), KEY)
    sender.send(hello())
    sender.send(step(0, nodes=(0, 1), roots=(0,)))
    sender.send(step(1, nodes=(2,)))
    first.wait_for(3)
    first.kill()
    while sender.alive:
        sender.send(step(2))
        time.sleep(0.01)
    sender.send(step(3, nodes=(3,)))  # described while no collector listened
    second = FakeCollector(path)  # a collector that adopts the job
    while not sender.alive:
        time.sleep(0.01)
    sender.send(step(4))
    got = second.wait_for(2)
    sender.close()
    assert isinstance(got[0], Hello) and got[0].pid == os.getpid()
    resumed = got[1]
    assert isinstance(resumed, Step) and resumed.index == 4
    assert sorted(n.id for n in resumed.nodes) == [0, 1, 2, 3] and [r.index for r in resumed.roots] == [0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_has_a_dead_sender_and_leaves_the_parents_stream_whole(tmp_path: Path) -> None:
    collector = FakeCollector(tmp_path / "agent.sock")
    sender = Sender(str(tmp_path / "agent.sock"), KEY)
    sender.send(hello())
    collector.wait_for(1)
    child = os.fork()
    if child == 0:  # the child: sends go nowhere, never block, never touch the parent's socket
        try:
            for i in range(3 * QUEUE):
                sender.send(step(i, nodes=(i,)))
            sender.close()
            os._exit(0 if not sender.alive else 3)
        finally:
            os._exit(4)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    sender.send(step(7))
    sender.close()
    got = collector.wait_for(2)
    assert len(got) == 2 and isinstance(got[1], Step) and got[1].index == 7  # nothing of the child's in the stream
