"""The text stage's timed calls run on threads that stay alive, also after a fork."""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time

import pytest

from private_vectors._detect_threads import call_with_timeout


def test_calls_run_on_a_thread_that_outlives_them():
    ran_on = {call_with_timeout(threading.get_ident, timeout=10) for _ in range(3)}
    assert threading.get_ident() not in ran_on
    live = {t.ident: t.name for t in threading.enumerate() if t.is_alive()}
    # every thread that ran a call is still alive afterwards (which idle pool worker takes a call is
    # the executor's choice: earlier concurrent callers may have started several)
    assert all(live.get(ident, "").startswith("private_vectors-detect") for ident in ran_on), (ran_on, live)


def test_a_timeout_raises_and_later_calls_still_run():
    release = threading.Event()
    with pytest.raises(concurrent.futures.TimeoutError):
        call_with_timeout(release.wait, 5, timeout=0.05)
    try:
        assert call_with_timeout(lambda: 7, timeout=10) == 7  # not queued behind the stuck call
    finally:
        release.set()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_gets_threads_of_its_own():
    call_with_timeout(time.sleep, 0, timeout=10)  # the parent's pool has a live worker
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.write(write, str(call_with_timeout(lambda: 41 + 1, timeout=10)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as fh:
        got = fh.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0 and got == "42"
