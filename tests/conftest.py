"""Suite-wide fixtures."""

from __future__ import annotations

import pytest

from private_vectors.embedding import KEY_ENV


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees a PRIVATE_VECTORS_KEY from the developer's environment; tests that need
    one set it themselves."""
    monkeypatch.delenv(KEY_ENV, raising=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Close the zygote the session's new processes were forked from (tests/_zygote.py), if any."""
    import sys

    zygote = sys.modules.get("_zygote")
    if zygote is not None:
        zygote.close_shared()
