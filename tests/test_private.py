"""vxtrain.private: the checks a cache folder passes before what is in it is trusted, and
the signature its files carry (the callers' attacks are in tests/validation/test_compiled.py
and tests/images/test_dependencies.py)."""
from __future__ import annotations

import hmac
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.otheruser import NOBODY, need_another_user, shared_folder, write_as_nobody
from vxtrain import private


@given(st.binary(max_size=200), st.binary(max_size=3000))
def test_the_signature_is_hmac_sha256(key: bytes, data: bytes) -> None:
    # Keys past SHA-256's 64-byte block are hashed first (RFC 2104), as hmac does.
    assert private.mac(key, data) == hmac.digest(key, data, "sha256")
    assert private.verified(key, data, hmac.digest(key, data, "sha256"))
    assert not private.verified(key, data + b"x", private.mac(key, data))


def test_a_link_to_a_private_folder_is_not_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir(mode=0o700)
    link.symlink_to(real)
    assert private.trusted(real, "the cache")
    assert not private.trusted(link, "the cache")
    assert f"the cache in {link} is not used: it is not a folder but a link" in capsys.readouterr().err


def test_a_folder_above_that_others_can_write_is_named(tmp_path: Path) -> None:
    above = tmp_path / "open"
    folder = above / "vxtrain"
    folder.mkdir(parents=True, mode=0o700)
    above.chmod(0o777)
    assert f"{above} is writable by other users (mode 0777)" in (private.problem(folder) or "")
    above.chmod(0o1777)  # sticky, as /tmp: others cannot rename what is ours
    assert private.problem(folder) is None


def test_a_key_others_can_read_or_a_short_one_is_no_key(tmp_path: Path) -> None:
    key = private.folder_key(tmp_path)
    assert key is not None and len(key) == 32 and private.folder_key(tmp_path) == key
    assert os.stat(tmp_path / private.KEY_FILE).st_mode & 0o777 == 0o600
    (tmp_path / private.KEY_FILE).chmod(0o644)
    assert private.folder_key(tmp_path) is None
    (tmp_path / private.KEY_FILE).write_bytes(b"short")
    (tmp_path / private.KEY_FILE).chmod(0o600)
    assert private.folder_key(tmp_path) is None


def test_a_file_others_can_write_or_a_link_is_not_read(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.write_bytes(b"ok")
    mine.chmod(0o644)
    assert private.read_own(mine) == b"ok" and private.read_own(mine, secret=True) is None
    mine.chmod(0o666)
    assert private.read_own(mine) is None
    mine.chmod(0o600)
    (tmp_path / "link").symlink_to(mine)
    assert private.read_own(tmp_path / "link") is None
    os.mkfifo(tmp_path / "fifo", 0o600)
    assert private.read_own(tmp_path / "fifo") is None  # at once, not blocked


def test_a_link_another_user_owns_on_the_way_is_named_wherever_it_leads() -> None:
    """A link of nobody's (in a sticky folder, as /tmp) to this user's private folder: the
    folders it leads to pass, but nobody can point it elsewhere between the check and the use."""
    need_another_user()
    with shared_folder() as base:
        base.chmod(0o1777)
        real = base / "real"
        (real / "vxtrain").mkdir(parents=True, mode=0o700)
        real.chmod(0o700)
        (base / "link").symlink_to(real)
        (base / "chain").symlink_to("link/.")  # a link to a link, relative: the walk follows both
        assert private.problem(base / "link" / "vxtrain") is None
        assert private.problem(base / "chain" / "vxtrain") is None
        os.chown(base / "link", NOBODY, NOBODY, follow_symlinks=False)
        for way in ("link", "chain"):
            why = private.problem(base / way / "vxtrain") or ""
            assert f"{base / 'link'} is a link of another user's (uid {NOBODY})" in why, why
        assert private.problem(real / "vxtrain") is None  # the folder itself, named directly, is fine


def test_a_secret_others_can_read_is_refused_once_with_the_fix(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    secret = tmp_path / "secret"
    assert private.read_secret(secret, "the secret", "make a new one") is None  # absent: nothing said
    assert capsys.readouterr().err == ""
    secret.write_bytes(b"s")
    secret.chmod(0o600)
    assert private.read_secret(secret, "the secret", "make a new one") == b"s"
    secret.chmod(0o640)
    assert private.read_secret(secret, "the secret", "make a new one") is None
    assert private.read_secret(secret, "the secret", "make a new one") is None
    assert capsys.readouterr().err == (f"vxtrain: warning: the secret in {secret} is not used: other users may "
                                       "read or change it (mode 0640); make a new one\n")
    os.mkfifo(tmp_path / "fifo", 0o600)
    assert private.read_secret(tmp_path / "fifo", "the secret", "fix") is None  # at once, not blocked
    assert "it is not a regular file" in capsys.readouterr().err


def test_a_secret_another_user_wrote_is_refused() -> None:
    need_another_user()
    with shared_folder() as base:
        base.chmod(0o1777)
        assert write_as_nobody(base / "token", b"theirs").returncode == 0
        (base / "token").chmod(0o600)  # root may; nobody still owns it
        assert private.read_secret(base / "token", "the token", "fix") is None
