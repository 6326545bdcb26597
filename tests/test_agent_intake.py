"""The collector's intake: one thread reads every agent connection (``fxtui/wire/agent_intake.py``).

In-process, over socket pairs and the job's own socket: many fake agents at once, one that dies, one that sends
garbage or a length past the limit, messages cut anywhere, one larger than a socket's buffer, a conversation moved to
a thread of its own, and no thread a connection.
"""

from __future__ import annotations

import pickle
import socket
import struct
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from fxtui.jobs.launch import ProgramJob
from fxtui.wire.agent_contract import ProgramExit, connect
from fxtui.wire.agent_intake import AgentIntake, Frames, TooLong
from fxtui.wire.agent_messages import Bye
from fxtui.wire.job_link import LeadAsk

pytestmark = pytest.mark.unit


class Heard:
    """What the intake handed on, per connection, for a test to wait on."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.messages: dict[int, list[object]] = {}
        self.ended: list[int] = []
        self.threads: dict[int, set[str]] = {}

    def take(self, who: int, then: Callable[[object], Callable[[], None] | None] | None = None):  # type: ignore[no-untyped-def]
        def take(message: object) -> Callable[[], None] | None:
            with self.lock:
                self.messages.setdefault(who, []).append(message)
                self.threads.setdefault(who, set()).add(threading.current_thread().name)
            return then(message) if then is not None else None

        return take

    def end(self, who: int) -> Callable[[], None]:
        def ended() -> None:
            with self.lock:
                self.ended.append(who)

        return ended

    def wait(self, done: Callable[[], bool], seconds: float = 20.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.lock:
                if done():
                    return
            time.sleep(0.01)
        raise AssertionError(f"not heard within {seconds} s: {self.messages} ended {self.ended}")


def pair() -> tuple[Connection, Connection]:
    """A connection the intake reads, and the agent's end of it."""
    a, b = socket.socketpair()
    return Connection(a.detach()), Connection(b.detach())


def test_frames_cut_anywhere_read_as_the_connection_frames_them() -> None:
    messages = [b"", b"x", b"a" * 70_000, pickle.dumps(("step", 3))]
    wire = b"".join(struct.pack("!i", len(m)) + m for m in messages)
    wire += struct.pack("!i", -1) + struct.pack("!Q", 5) + b"large"  # the 2 GB form, with a small length
    for cut in (1, 3, 7, 4096):
        frames = Frames(limit=1 << 20)
        out = []
        for at in range(0, len(wire), cut):
            out += frames.feed(wire[at : at + cut])
        assert out == [*messages, b"large"]
        assert not frames.partial
    with pytest.raises(TooLong):
        Frames(limit=10).feed(struct.pack("!i", 11) + b"y" * 11)


def test_one_thread_reads_many_agents_and_one_dying_or_sending_garbage_ends_only_its_own() -> None:
    heard = Heard()
    intake = AgentIntake(limit=1 << 20, name="test-intake")
    agents = []
    before = threading.active_count()
    for who in range(64):
        ours, theirs = pair()
        intake.add(ours, heard.take(who), heard.end(who))
        agents.append(theirs)
    assert threading.active_count() <= before + 1  # the intake's one thread, not one a connection
    for step in range(3):
        for who, agent in enumerate(agents):
            if who not in (1, 2, 3):
                agent.send(Bye(0, failed=f"{who}:{step}"))
    agents[1].close()  # an agent that died
    agents[2].send_bytes(b"not a pickle at all")  # garbage: that message is dropped, the next one read
    agents[2].send(Bye(0, failed="after garbage"))
    agents[3].send_bytes(pickle.dumps(threading.Lock))  # a message naming a class the collector does not take
    agents[3].send(Bye(0, failed="after a refused class"))
    big = Bye(0, failed="z" * 600_000)  # more than a socket's buffer: read in many pieces
    agents[4].send(big)
    heard.wait(lambda: len(heard.messages.get(4, [])) == 4 and len(heard.messages.get(3, [])) == 2)
    heard.wait(lambda: all(len(heard.messages.get(w, [])) == 3 for w in range(64) if w not in (1, 2, 3, 4)))
    heard.wait(lambda: 1 in heard.ended and len(heard.messages.get(2, [])) == 2)
    assert heard.ended == [1]
    assert 1 not in heard.messages
    assert [m.failed for m in heard.messages[0]] == ["0:0", "0:1", "0:2"]  # type: ignore[attr-defined]
    garbage, after = heard.messages[2]
    assert isinstance(garbage, Exception) and after == Bye(0, failed="after garbage")
    refused, after = heard.messages[3]
    assert isinstance(refused, Exception) and after == Bye(0, failed="after a refused class")
    assert heard.messages[4][-1] == big
    assert {name for names in heard.threads.values() for name in names} == {"test-intake"}
    assert intake.reading == 63
    intake.close()
    heard.wait(lambda: len(heard.ended) == 64)
    for agent in agents[2:]:
        assert agent.poll(5) and not _readable_or_open(agent)  # the intake closed its end
    ours, theirs = pair()
    intake.add(ours, heard.take(99), heard.end(99))  # a connection after the close ends at once
    assert heard.ended[-1] == 99


def _readable_or_open(agent: Connection) -> bool:
    try:
        agent.recv_bytes()
    except (EOFError, OSError):
        return False
    return True


def test_a_length_past_the_limit_ends_that_connection_alone() -> None:
    heard = Heard()
    intake = AgentIntake(limit=1000)
    long_one, long_agent = pair()
    fine, fine_agent = pair()
    intake.add(long_one, heard.take(0), heard.end(0))
    intake.add(fine, heard.take(1), heard.end(1))
    long_agent.send_bytes(b"q" * 1001)
    fine_agent.send(Bye(0, failed="fine"))
    heard.wait(lambda: heard.ended == [0] and len(heard.messages.get(1, [])) == 1)
    fine_agent.send(Bye(0, failed="still read"))
    heard.wait(lambda: len(heard.messages[1]) == 2)
    assert 0 not in heard.messages
    intake.close()


def test_a_take_that_fails_ends_its_connection_and_the_others_are_read_on() -> None:
    heard = Heard()
    said: list[str] = []
    intake = AgentIntake(limit=1 << 20, warn=said.append)

    def fails(message: object) -> None:
        raise RuntimeError("a fault of the collector's")

    bad, bad_agent = pair()
    good, good_agent = pair()
    intake.add(bad, heard.take(0, fails), heard.end(0))
    intake.add(good, heard.take(1), heard.end(1))
    bad_agent.send(Bye(0))
    heard.wait(lambda: heard.ended == [0])
    good_agent.send(Bye(0))
    heard.wait(lambda: len(heard.messages.get(1, [])) == 1)
    assert said == ["stopped reading an agent's connection: RuntimeError: a fault of the collector's"]
    intake.close()


def test_a_conversation_moves_to_a_thread_of_its_own_and_the_intake_never_waits_for_it() -> None:
    heard = Heard()
    intake = AgentIntake(limit=1 << 20, name="test-intake")
    answer = threading.Event()
    talk, talk_agent = pair()

    def converse(message: object) -> Callable[[], None] | None:
        if not isinstance(message, LeadAsk):
            return None

        def then() -> None:  # an answer that takes a while (a lead to reach): the intake reads the others meanwhile
            answer.wait(20)
            talk.send("answered")

        return then

    intake.add(talk, heard.take(0, converse), heard.end(0))
    others = []
    for who in range(1, 9):
        ours, theirs = pair()
        intake.add(ours, heard.take(who), heard.end(who))
        others.append(theirs)
    talk_agent.send(LeadAsk("127.0.0.1", node=0))
    heard.wait(lambda: len(heard.messages.get(0, [])) == 1)
    for agent in others:
        agent.send(Bye(0))
    heard.wait(lambda: all(len(heard.messages.get(w, [])) == 1 for w in range(1, 9)))  # while the answer waits
    answer.set()
    assert talk_agent.recv() == "answered"
    talk_agent.send(Bye(0, failed="after the answer"))  # read on in the conversation's thread
    heard.wait(lambda: len(heard.messages[0]) == 2)
    assert heard.messages[0][1] == Bye(0, failed="after the answer")
    assert heard.threads[0] == {"test-intake", "test-intake-conversation"}
    assert intake.conversations == 1 and intake.reading == 8
    talk_agent.close()
    heard.wait(lambda: 0 in heard.ended)
    intake.close()


def test_the_jobs_socket_takes_many_agents_in_one_thread_and_drain_waits_for_their_ends(tmp_path: Path) -> None:
    got: list[tuple[object, int]] = []
    exits: list[ProgramExit] = []
    lock = threading.Lock()

    def on_message(message: object, agent: int) -> None:
        with lock:
            got.append((message, agent))

    def on_exit(message: ProgramExit, connection: Connection) -> None:
        exits.append(message)
        connection.send_bytes(b"printing")

    job = ProgramJob(("sim.py",), on_message, directory=tmp_path, key=b"k" * 32, on_exit=on_exit)
    job.listen()
    key = b"k" * 32
    agents = [connect(job.agent_address, key, timeout=20) for _ in range(40)]
    deadline = time.monotonic() + 20
    while True:  # each handshake's thread ends once it handed its connection on: none stays a connection
        names = [t.name for t in threading.enumerate()]
        if sum(n.startswith("fxtui-agents") for n in names) <= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert names.count("fxtui-agents-intake") == 1
    assert sum(n.startswith("fxtui-agents") for n in names) == 2  # the acceptor and the intake, for 40 agents
    for agent in agents:
        agent.send([Bye(0, failed="a"), Bye(0, failed="b")])  # an agent's gathered messages
    boot = connect(job.agent_address, key, timeout=20)
    boot.send(ProgramExit(123, 0, True))
    assert boot.recv_bytes() == b"printing"
    asked = connect(job.agent_address, key, timeout=20)
    asked.send(LeadAsk("127.0.0.1", node=0))
    assert asked.recv() == "this collector does not join jobs across nodes"
    for agent in agents:
        agent.close()
    asked.close()
    started = time.monotonic()
    job.drain(20)
    assert time.monotonic() - started < 15  # every agent's end was seen (the boot's connection is no agent's)
    assert len(got) == 80 and {a for _, a in got} == set(range(40))
    assert exits == [ProgramExit(123, 0, True)]
    boot.close()
    job.close()


def test_a_closed_intake_reads_nothing_and_says_so() -> None:
    heard = Heard()
    intake = AgentIntake(limit=1 << 20)
    ours, agent = pair()
    intake.add(ours, heard.take(0), heard.end(0))
    intake.close()
    heard.wait(lambda: heard.ended == [0])
    assert intake.reading == 0
    assert agent.poll(5) and not _readable_or_open(agent)  # the agent sees its connection end
    intake.close()  # twice: nothing more
