"""Key holder, stretched-key derivation (v2), legacy derivation (v1), canonical context."""

from __future__ import annotations

import copy
import hashlib
import hmac
import os
import pickle
import subprocess
import sys
import traceback

import pytest

from private_vectors.errors import InvalidParameterError, InvalidTypeError
from private_vectors.keys import (
    KEY_ENV,
    MIN_KEY_BYTES,
    SecretKey,
    canonical_context,
    hkdf_sha256,
    legacy_key_check,
    surrogate_subkey,
)

SECRET = "correct-horse-battery-staple-42"


def _tb_with_locals(exc: BaseException) -> str:
    """The traceback as a debugger/logger with locals would show it, library frames only
    (the first frame is the test's own, which holds the literal)."""
    tb = exc.__traceback__
    assert tb is not None
    return "".join(traceback.TracebackException(type(exc), exc, tb.tb_next, capture_locals=True).format())


def test_repr_str_and_pickle_never_show_the_key():
    k = SecretKey.resolve(SECRET)
    assert SECRET not in repr(k) and SECRET not in str(k) and "redacted" in repr(k)
    with pytest.raises(TypeError, match="never pickled"):
        pickle.dumps(k)
    sched = k.schedule("v2", b"salt-0123456789")
    assert SECRET not in repr(sched) and sched.noise.hex() not in repr(sched)
    with pytest.raises(TypeError):
        pickle.dumps(sched)
    assert copy.deepcopy(k) is k


def test_str_bytes_and_env_sources(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    assert SecretKey.resolve(None) is None
    a = SecretKey.resolve(SECRET)
    b = SecretKey.resolve(SECRET.encode())
    monkeypatch.setenv(KEY_ENV, SECRET)
    c = SecretKey.resolve(None)
    assert a == b == c and c.source == "env" and a.source == "parameter"
    assert SecretKey.resolve(a) is a


@pytest.mark.parametrize("short", ["abcde", b"\x00" * (MIN_KEY_BYTES - 1)])
def test_short_key_refused_with_how_to_make_one(short):
    with pytest.raises(InvalidParameterError) as info:
        SecretKey.resolve(short)
    msg = str(info.value)
    assert "key" in msg and "16 bytes" in msg and "secrets.token_urlsafe(32)" in msg
    shown = short if isinstance(short, str) else repr(short)
    assert shown not in msg
    assert shown not in _tb_with_locals(info.value)


def test_bad_types_refused_without_echo():
    with pytest.raises(InvalidTypeError, match="key"):
        SecretKey.resolve(12345678901234567890)
    lone = "\ud800" + "x" * 20  # a lone surrogate cannot be UTF-8 encoded
    with pytest.raises(InvalidParameterError) as info:
        SecretKey.resolve(lone)
    assert info.value.__context__ is None  # the UnicodeEncodeError (holding the text) is not chained
    assert "x" * 20 not in _tb_with_locals(info.value)


def test_non_utf8_env_key_is_accepted_as_bytes_without_echo():
    # main before issue 16: a bare UnicodeEncodeError whose repr contained the key
    raw = b"\xff\xfe-not-utf8-" + b"s3cr3t" * 3
    code = ("from private_vectors.keys import SecretKey\n"
            "k = SecretKey.resolve(None)\n"
            "print(len(k), repr(k))\n")
    env = {**os.environ, KEY_ENV.encode().decode(): "x"}
    env_b = {k.encode(): v.encode() for k, v in env.items()}
    env_b[KEY_ENV.encode()] = raw
    out = subprocess.run([sys.executable, "-c", code], env=env_b, capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    assert out.stdout.decode().startswith(f"{len(raw)} SecretKey(<redacted>")
    assert b"s3cr3t" not in out.stdout + out.stderr


def test_short_env_key_refused_without_echo():
    raw = b"\xffzq7wv"
    code = "from private_vectors.keys import SecretKey\nSecretKey.resolve(None)\n"
    env_b = {k.encode(): v.encode() for k, v in os.environ.items()}
    env_b[KEY_ENV.encode()] = raw
    out = subprocess.run([sys.executable, "-c", code], env=env_b, capture_output=True, timeout=120)
    assert out.returncode != 0
    assert b"InvalidParameterError" in out.stderr and KEY_ENV.encode() in out.stderr
    assert b"zq7wv" not in out.stderr


def test_hkdf_rfc5869_test_case_1():
    ikm = bytes.fromhex("0b" * 22)
    salt = bytes.fromhex("000102030405060708090a0b0c")
    info = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9")
    okm = hkdf_sha256(ikm, salt=salt, info=info, length=42)
    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                         "34007208d5b887185865")


def test_v2_subkeys_separate_salted_and_stretched():
    k = SecretKey.resolve(SECRET)
    s1 = k.schedule("v2", b"salt-aaaaaaaaaa", {"n": 2**10, "r": 8, "p": 1})
    s2 = k.schedule("v2", b"salt-bbbbbbbbbb", {"n": 2**10, "r": 8, "p": 1})
    assert len({s1.noise, s1.surrogate, bytes.fromhex(s1.check)}) == 3
    assert s1.noise != s2.noise and s1.check != s2.check
    assert len(bytes.fromhex(s1.check)) * 8 >= 64
    # every subkey goes through scrypt: none equals an HMAC/HKDF of the raw key
    raw = SECRET.encode()
    for info in (b"private_vectors/v2/noise", b"private_vectors/v2/surrogate"):
        assert hkdf_sha256(raw, salt=b"salt-aaaaaaaaaa", info=info) not in (s1.noise, s1.surrogate)
    stretched = hashlib.scrypt(raw, salt=b"salt-aaaaaaaaaa", n=2**10, r=8, p=1, dklen=32)
    assert s1.noise == hkdf_sha256(stretched, salt=b"salt-aaaaaaaaaa", info=b"private_vectors/v2/noise")
    # deterministic, and cached per key object (stretched once)
    assert k.schedule("v2", b"salt-aaaaaaaaaa", {"n": 2**10, "r": 8, "p": 1}) is s1


def test_v1_is_todays_derivation():
    k = SecretKey.resolve(SECRET)
    v1 = k.schedule("v1")
    assert v1.noise == SECRET.encode()
    assert v1.check == hmac.new(SECRET.encode(), b"private_vectors/key-id/v1", hashlib.sha256).hexdigest()[:8]
    assert legacy_key_check(k) == v1.check
    with pytest.raises(InvalidParameterError, match="derivation"):
        k.schedule("v3")


def test_surrogate_subkey_goes_through_the_stretched_key():
    sub = surrogate_subkey(SECRET)
    assert sub == surrogate_subkey(SECRET.encode()) and len(sub) == 32
    assert sub != surrogate_subkey(SECRET + "!")
    assert sub != hmac.digest(SECRET.encode(), b"surrogate", "sha256")
    with pytest.raises(InvalidParameterError):
        surrogate_subkey("short")


def test_canonical_context_survives_chroma_json_round_trip():
    # the values Chroma's config round trip returned (issue 16, point 1)
    a, b = 0.051031036307982884, 0.05103103630798288
    assert a != b
    assert canonical_context({"unit": a, "eps": 10.0}) == canonical_context({"eps": 10, "unit": b})
    assert canonical_context({"eps": 10.0}) != canonical_context({"eps": 10.5})
    assert canonical_context({"x": True}) != canonical_context({"x": 1})
