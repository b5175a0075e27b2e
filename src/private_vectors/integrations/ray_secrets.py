"""Where a Ray worker reads the key (:class:`SecretRef`: an environment variable set outside Ray, or a
file), and Ray itself, imported when a job needs it. No key material is ever a task or actor argument."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Described, InvalidParameterError, InvalidTypeError, require

__all__ = ["SecretRef"]


def _require_ray() -> Any:
    require("ray.data", "Ray is not installed: pip install 'private-vectors[ray]'")
    import ray

    return ray


@dataclass(frozen=True)
class SecretRef:
    """Where a worker reads the key: an environment variable set outside Ray, or a file.

    Only the name or the path travels with the job. Exactly one of ``env`` and ``file``.

    Args:
        env: the variable's name (default ``PRIVATE_VECTORS_KEY``).
        file: a path readable on every worker (its whole content, surrounding whitespace
            stripped, is the key); e.g. a mounted secret.
    """

    env: str | None = "PRIVATE_VECTORS_KEY"
    file: str | None = None

    def __post_init__(self) -> None:
        if self.file is not None and self.env == "PRIVATE_VECTORS_KEY":
            object.__setattr__(self, "env", None)  # a file given: the default variable is not meant
        if (self.env is None) == (self.file is None):
            raise InvalidParameterError("secret", "exactly one of env= and file=", Described(f"env={self.env!r}, file={self.file!r}"))
        if self.env is not None and (not isinstance(self.env, str) or not self.env):
            raise InvalidTypeError("env", "a variable name", self.env)

    def read(self) -> Any:
        """The key as a :class:`~private_vectors.keys.SecretKey` (None when unset); on the worker."""
        from ..keys import SecretKey

        if self.env is not None:
            return SecretKey.resolve(None, env=self.env)
        path = Path(str(self.file))
        try:
            raw = path.read_bytes().strip()
        except OSError as exc:
            raise InvalidParameterError("secret", "a readable key file", Described(str(path)), note=type(exc).__name__) from None
        try:
            return SecretKey.resolve(raw, env=None)
        finally:
            raw = b""
