"""Source folders for tests: a bare package folder, a project, and the folders of issue 34
(links to what the rules leave out, private keys); the fixtures ``bare_source`` and
``project_source`` (conftest files import them)."""
from __future__ import annotations

from typing import Any

import pytest


TASK = ('"""A trainer that says where it was imported from."""\n'
        "import sys\n\n"
        "from trainer import util\n\n"
        "if __name__ == '__main__':\n"
        "    print('TRAINED', util.VALUE, __file__, ' '.join(sys.argv[1:]), flush=True)\n")


def write_bare(root: Any) -> Any:
    """A folder of packages without a build recipe: trainer/{__init__,task,util}.py and a data file."""
    pkg = root / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "task.py").write_text(TASK)
    (pkg / "util.py").write_text("VALUE = 42\n")
    (pkg / "config.yaml").write_text("lr: 0.1\n")
    return root


def write_project(root: Any, name: str = "my-trainer") -> Any:
    """A setuptools project (pyproject.toml) holding the same trainer package."""
    write_bare(root)
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "1.2.3"\n\n'
        '[tool.setuptools.packages.find]\ninclude = ["trainer*"]\n')
    return root


@pytest.fixture
def bare_source(tmp_path: Any) -> Any:
    """A bare package folder (see write_bare)."""
    return write_bare(tmp_path / "src-bare")


@pytest.fixture
def project_source(tmp_path: Any) -> Any:
    """A pyproject.toml project folder (see write_project)."""
    return write_project(tmp_path / "src-project")


#: The first line of an OpenSSH private key's body ("openssh-key-v1" in base64, OpenSSH's
#: PROTOCOL.key): what every key written below holds, so a test can look for it in what was pushed.
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
#: What the links of write_leaky_links point at: none of these bytes may reach a package or an image.
SECRETS = (KEY_BODY.encode(), b"ghp_TOKEN", b"API_KEY=secret")


def private_key(label: str = "OPENSSH PRIVATE KEY", headers: str = "") -> str:
    """A private key's armored block (``-----BEGIN {label}-----``), its body KEY_BODY's lines."""
    return f"-----BEGIN {label}-----\n{headers}{KEY_BODY}\n{KEY_BODY[:40]}==\n-----END {label}-----\n"


def write_leaky_links(root: Any) -> list[str]:
    """Under ``root``, links to what the folder's rules leave out (the links of issue 34 that
    pushed what they named): ``key.txt`` to a gitignored ``id_rsa``, ``gitcfg.txt`` to
    ``.git/config`` (a token in a remote's URL), ``settings.txt`` to a ``.vxtrainignore``d
    ``.env``, ``conf.yaml`` to a file of an ignored folder, ``out.txt`` to the top ``build/``
    and ``again.txt`` to a link to ``.env``. Returns the links' names."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("id_rsa\nsecrets/\n")
    (root / "id_rsa").write_text(private_key())
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = https://me:ghp_TOKEN@github.com/me/x\n')
    (root / ".vxtrainignore").write_text(".env\n")
    (root / ".env").write_text("API_KEY=secret\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "conf.yaml").write_text("API_KEY=secret\n")
    (root / "build").mkdir()
    (root / "build" / "token").write_text("ghp_TOKEN\n")
    links = {"key.txt": "id_rsa", "gitcfg.txt": ".git/config", "settings.txt": ".env",
             "conf.yaml": "secrets/conf.yaml", "out.txt": "build/token", "again.txt": "settings.txt"}
    for name, target in links.items():
        (root / name).symlink_to(target)  # relative, as git checks links out
    return sorted(links)


def write_leaky_hard_links(root: Any) -> dict[str, str]:
    """Under ``root``, hard links of what the folder's rules leave out (issue 34's leftover: a
    second name is the same file, so it pushed what the rules kept back): ``trainer/cfg.txt``
    and ``.env.secret`` (``.vxtrainignore``d), ``gitcfg.txt`` and ``.git/config``, ``key.txt``
    and a gitignored ``id_rsa``, ``conf.yaml`` and a file of an ignored folder, ``out.txt``
    and the top ``build/token``. Returns each hard link's name → its left-out name."""
    (root / "trainer").mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("id_rsa\nsecrets/\n")
    (root / ".vxtrainignore").write_text(".env.secret\n")
    (root / ".env.secret").write_text("API_KEY=secret\n")
    (root / "id_rsa").write_text(private_key())
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = https://me:ghp_TOKEN@github.com/me/x\n')
    (root / "secrets").mkdir()
    (root / "secrets" / "conf.yaml").write_text("API_KEY=secret\n")
    (root / "build").mkdir()
    (root / "build" / "token").write_text("ghp_TOKEN\n")
    links = {"trainer/cfg.txt": ".env.secret", "gitcfg.txt": ".git/config", "key.txt": "id_rsa",
             "conf.yaml": "secrets/conf.yaml", "out.txt": "build/token"}
    for name, target in links.items():
        (root / name).hardlink_to(root / target)
    return dict(sorted(links.items()))
