"""A source folder (``build.source``, ``python_package.source``): which files count, its
content hash, its name, its bounds, its links.

Everything here is pure file reading (no build, no network): validation reads it to
check a folder, ``plan`` to show the URI or tag a ``submit`` would push, and the push
code (vxtrain.packaging, vxtrain.images) to build exactly the files it hashed.

Which files count: every regular file under the folder except the fixed
exclusions below and what its ignore files leave out. ``.gitignore`` and
``.vxtrainignore`` are read in every folder of the walk, with git's rules
(pathspec's patterns for negations, anchoring, ``**`` and directory patterns,
decided as git decides: the deepest ignore file with a rule about a path decides,
its last such rule wins, a folder left out is not entered, so nothing under it can
be put back; ``_decide``), and ``.vxtrainignore`` after ``.gitignore``
(it can ``!`` put back what git leaves out). The ignore files of the folders above
it count too, up to the top of the git work tree it is in (``_Ignores.read_outer``),
for its own files only; never git's global excludes nor ``.git/info/exclude``: those
differ from machine to machine, and so would the hash.

What counts is refused when it holds credentials (the table and the checks by content
in vxtrain.sources.credentials) or a name a container runtime reads as a deletion
(``.wh.``): a SourceError naming each file and the fix (an ignore file).

Links: a link counts as its target (its bytes, under the link's name) only when that
target is a file of the folder that is packaged itself, under the same rules: not
ignored, not in an excluded folder (``.git/``), not bytecode. Any other link is left
out: one to a file the rules leave out (``key.txt`` → a gitignored ``id_rsa``,
``cfg`` → ``.git/config``: the link must not push what the rules kept back), one
pointing outside the folder (a package or image must not quietly carry
``~/.ssh/id_rsa`` or a data disk because a link named it), one to a directory (not
followed: a link to an ancestor would loop), and a broken one. ``left_out_links``
lists them with why, so validation can say so: a local run, which runs the folder
in place, still sees them. A target the rules keep is checked as a file of its own
(a credential in it is refused by its own name).

Hard links: a packaged file with more names (``st_nlink``) than the package holds has
another name somewhere. When one of them is in the folder but left out (ignored, under
``.git/`` or another excluded folder, bytecode), the file is left out too, like a link
to it would be (``trainer/cfg.txt`` hard-linked to a ``.vxtrainignore``d ``.env`` must
not push what the rules kept back): ``left_out_links`` names it with that other name
(LINK_HARD). The other names are looked for by one more walk of the whole folder,
ignored and excluded folders included, without following links, and only when such a
file exists; it stops past MAX_FILES names beside the packaged ones. A file whose other
name is not found is packaged (its bytes are in the folder; nothing can tell the
"original" name), but ``Survey.hard_links`` lists it so validation warns: unlike a
copy, an edit made through the other name changes the package. ``Survey.searched``
says whether that walk saw the whole folder, so the warning says "outside the folder"
only when it is.

Bounds (docs/decisions.md, issue 27): a source folder is code, so the walk stops
past MAX_FILES files or MAX_BYTES bytes (raise them with VXTRAIN_SOURCE_MAX_FILES
and VXTRAIN_SOURCE_MAX_BYTES) and says what it found; ``/`` and the system's own
folders are refused before any walk. An entry that cannot be listed or read is a
SourceError naming it, never a traceback and never a file silently left out.
"""
from __future__ import annotations

import os
import re
import stat
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from vxtrain.errors import VxtrainError
from vxtrain.model import parse_size
from vxtrain.sources.credentials import credential_files, whiteout_names

#: Directory names never packaged, at any depth: VCS data, caches, virtual envs.
EXCLUDED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox",
                           ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints"})
#: Directory names excluded only at the top of the folder: where build tools write their
#: output. Deeper down, ``build`` may well be a subpackage of the user's code.
EXCLUDED_TOP_DIRS = frozenset({"build", "dist"})
#: File suffixes never packaged (compiled bytecode outside ``__pycache__``).
EXCLUDED_SUFFIXES = (".pyc", ".pyo")
#: A directory holding this file is a virtual environment (PEP 405), whatever its name.
VENV_MARKER = "pyvenv.cfg"
#: Files that make the folder a project pypa ``build`` can build as it is.
PROJECT_FILES = ("pyproject.toml", "setup.py")
#: The ignore files read in every folder of the walk, in this order (the later decides).
IGNORE_FILES = (".gitignore", ".vxtrainignore")
#: The name pathspec gives the directory mark in its rules' regexes: where a rule matched
#: through a folder (``a/`` of ``a/b``) rather than the path itself.
_DIR_MARK = "ps_d"
#: ``a/**/`` (every folder under ``a``): pathspec reads it as ``a/``, which is ``a`` itself
#: too; git's ``a/**/*/`` says what git means (a ``!`` line putting folders back differs).
#: Compiled on first use (re's own cache): only folders with ignore files read it.
_ANY_FOLDER_UNDER = r"^(.*[^/\\])/\*\*/\s*$"
#: Credential files named in one error; the rest are counted.
CREDENTIALS_SHOWN = 10
#: Hex digits of SHA-256 kept in the URI: 64 bits, ample for one bucket's packages.
HASH_LENGTH = 16
#: Bytes read at a time while hashing.
READ_CHUNK = 1024 * 1024
#: Mixed into the hash: bump it when the recipe that turns a folder into an sdist
#: changes (e.g. the generated setup.py), so old URIs are not reused for new output.
RECIPE_VERSION = "vxtrain-sdist-1"
#: At most this many packaged files in a source folder: real training packages hold tens
#: to hundreds; 10,000 is far past them and a walk of it takes well under a second.
MAX_FILES = 10_000
#: At most this many bytes in a source folder (1 GiB): every replica downloads and unpacks
#: the package, and an image's code layer is pushed whole; data and checkpoints belong
#: in a bucket (base_output_dir), not in the code.
MAX_BYTES = 1 << 30
#: The environment variables that raise (or lower) the two bounds.
MAX_FILES_ENV = "VXTRAIN_SOURCE_MAX_FILES"
MAX_BYTES_ENV = "VXTRAIN_SOURCE_MAX_BYTES"
#: The system's own folders, never a source (``/`` first); under the virtual ones
#: (``/proc``, ``/sys``, ``/dev``) nothing is.
SYSTEM_FOLDERS = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/opt", "/proc",
                            "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/tmp", "/usr", "/usr/local",
                            "/var", "/home", "/mnt", "/media", "/nix", "/private", "/System", "/Library",
                            "/Applications", "/Users"})
VIRTUAL_FOLDERS = ("/proc", "/sys", "/dev")


#: Why a link is left out (LeftOutLink.why).
LINK_LEFT_OUT = "its target is left out"
LINK_OUTSIDE = "outside the folder"
LINK_FOLDER = "a folder"
LINK_BROKEN = "broken"
LINK_HARD = "a hard link: the same file as that name, which is left out"


class SourceError(VxtrainError):
    """A source folder that cannot be packaged: a system folder, past the bounds, or with
    an entry that cannot be listed or read. ``code`` says which, for validation."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class LeftOutLink(NamedTuple):
    """A link of a source folder that is not packaged: where it is, what it says, and why
    (LINK_LEFT_OUT, LINK_OUTSIDE, LINK_FOLDER or LINK_BROKEN; LINK_HARD for a hard link, whose
    ``target`` is its other name in the folder)."""

    path: PurePosixPath
    target: str
    why: str


@dataclass(frozen=True)
class Survey:
    """One walk of a source folder: what is packaged and what is worth a warning."""

    files: list[PurePosixPath]  # packaged, in byte order
    size: int  # their bytes
    links: list[LeftOutLink]  # links left out, in byte order
    hard_links: list[PurePosixPath]  # packaged files with another name not found in the folder
    #: Whether the search for those other names saw the whole folder (False: it stopped at its
    #: bound, or a folder could not be listed), so they are outside it.
    searched: bool = True


@dataclass(frozen=True)
class Source:
    """What ``plan`` can say about a source folder before anything is built (its sdist's URI:
    vxtrain.packaging.sdists.package_uri; its image's: vxtrain.images.recipe)."""

    path: Path
    name: str  # the sdist name as it appears in the URI (normalized)
    digest: str  # HASH_LENGTH hex digits over file names and bytes
    kind: str  # "project" (pyproject.toml/setup.py, built as it is) or "generated"
    files: int


def describe(path: str | Path) -> Source:
    """Name, kind and content hash of the source folder ``path`` (which must exist)."""
    root = Path(path).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"source folder {path} does not exist")
    files = survey(root).files
    kind = "project" if is_project(root) else "generated"
    return Source(root, package_name(root), _digest(root, files, kind), kind, len(files))


def describe_once(folder: Path, described: dict[Path, Source]) -> Source:
    """``describe(folder)``, remembered in ``described`` by folder: one check of a spec
    and of its fallback rungs (which inherit its sources) hashes each folder once."""
    if folder not in described:
        described[folder] = describe(folder)
    return described[folder]


def check_unchanged(source: Source, written: str, named: str, built: str | None = None) -> None:
    """Refuse (VxtrainError) when the folder's files are no longer those ``source`` hashed.

    Called once a package or image is built, before it is uploaded: the URI or tag
    (``named``) names the files as hashed at compile, and an upload of other files
    under it would be reused by every later submit of the original ones. ``built``: the
    digest of the files as the build read them (a ContentHash fed while an image's code
    layer was written), compared without reading the folder again; else it is hashed anew.
    """
    if (built if built is not None else describe(source.path).digest) != source.digest:
        raise VxtrainError(f"{written} changed while it was being built ({named} names the files as "
                           "they were): nothing was uploaded; submit again")


def is_project(root: Path) -> bool:
    """True when ``root`` carries its own build recipe (pyproject.toml or setup.py)."""
    return any((root / name).is_file() for name in PROJECT_FILES)


def iter_files(root: Path) -> Iterator[PurePosixPath]:
    """Every packaged file under ``root``, as a relative POSIX path, in sorted order."""
    yield from survey(root).files


def left_out_links(root: Path) -> list[LeftOutLink]:
    """The links under ``root`` that are not packaged (to a file left out, outside it, to a
    directory, broken), in sorted order."""
    return survey(root).links


def limits() -> tuple[int, int]:
    """The bounds of a source folder: (files, bytes), from the environment when set there."""
    files, size = MAX_FILES, MAX_BYTES
    if os.environ.get(MAX_FILES_ENV, "").strip():
        text = os.environ[MAX_FILES_ENV].strip()
        if not re.fullmatch(r"[0-9]+", text):
            raise VxtrainError(f"{MAX_FILES_ENV}={text[:40]!r}: give a whole number of files, e.g. 50000")
        files = int(text)
    if os.environ.get(MAX_BYTES_ENV, "").strip():
        text = os.environ[MAX_BYTES_ENV].strip()
        parsed = parse_size(text)
        if parsed is None or not 0 <= parsed < float("inf"):
            raise VxtrainError(f"{MAX_BYTES_ENV}={text[:40]!r}: give a size such as 5GiB or 2000000000")
        size = int(parsed)
    return files, size


def survey(root: Path) -> Survey:
    """Walk the source folder ``root`` once (SourceError: a system folder, past the bounds,
    or an entry that cannot be listed or read)."""
    real = root.resolve()
    refuse_system_folder(real)
    found = _Found(root, *limits())
    links: list[LeftOutLink] = []
    pending: list[tuple[PurePosixPath, Path, PurePosixPath, os.stat_result]] = []  # links to files inside
    ignores = _Ignores(root)
    ignores.read_outer(real)
    for rel, path in _names(root, ignores):
        try:
            info = path.stat()  # the link's target, for a link
            link = path.is_symlink()
        except FileNotFoundError:  # a broken link (or gone since the listing)
            if path.is_symlink():
                links.append(LeftOutLink(rel, os.readlink(path), LINK_BROKEN))
            continue
        except OSError as exc:
            raise _unreadable(path, root, exc) from exc
        if not link:
            if stat.S_ISREG(info.st_mode):
                found.add(rel, path, info, link=False)
            continue
        target = path.resolve()
        if not stat.S_ISREG(info.st_mode) or not target.is_relative_to(real):
            links.append(LeftOutLink(rel, os.readlink(path), LINK_FOLDER if stat.S_ISDIR(info.st_mode)
                                     else LINK_OUTSIDE))
        else:
            pending.append((rel, path, PurePosixPath(target.relative_to(real).as_posix()), info))
    # A hard link of a name the rules leave out is left out too, before the links are decided:
    # a link to it is then left out as well.
    hidden, searched = _other_names(root, found)
    for rel, other in hidden:
        found.drop(rel)
        links.append(LeftOutLink(rel, other.as_posix(), LINK_HARD))
    # Once the walk is done, every file the rules keep is known: a link counts only as one of them.
    kept = set(found.files)
    for rel, path, target_rel, info in pending:
        if target_rel in kept:
            found.add(rel, path, info, link=True)
        else:
            links.append(LeftOutLink(rel, os.readlink(path), LINK_LEFT_OUT))
    refuse_unsafe(root, found.files)
    return Survey(sorted(found.files, key=_byte_order), found.size,
                  sorted(links, key=lambda link: _byte_order(link.path)), sorted(found.hard_links(), key=_byte_order), searched)


@dataclass
class _Found:
    """The files one walk of ``root`` packages so far, counted against the bounds."""

    root: Path
    max_files: int
    max_bytes: int
    files: list[PurePosixPath] = field(default_factory=list)
    size: int = 0
    #: (device, inode) of each file that is no link → its names in the folder, and its link count.
    inodes: dict[tuple[int, int], list[PurePosixPath]] = field(default_factory=dict)
    names: dict[tuple[int, int], int] = field(default_factory=dict)
    sizes: dict[PurePosixPath, int] = field(default_factory=dict)

    def add(self, rel: PurePosixPath, path: Path, info: os.stat_result, link: bool) -> None:
        """Package ``rel`` (at ``path``, whose target's stat is ``info``): SourceError when it cannot
        be read or passes a bound."""
        if not os.access(path, os.R_OK):
            raise _unreadable(path, self.root, PermissionError(13, "Permission denied"))
        self.files.append(rel)
        self.sizes[rel] = info.st_size
        if not link:
            key = (info.st_dev, info.st_ino)
            self.inodes.setdefault(key, []).append(rel)
            self.names[key] = info.st_nlink
        self.size += info.st_size
        if len(self.files) > self.max_files or self.size > self.max_bytes:
            raise _too_large(self.root, len(self.files), self.size, self.max_files, self.max_bytes)

    def drop(self, rel: PurePosixPath) -> None:
        """Leave out ``rel`` (a file that is no link), added before."""
        self.files.remove(rel)
        self.size -= self.sizes.pop(rel)
        for key, rels in list(self.inodes.items()):
            if rel in rels:
                rels.remove(rel)
                if not rels:
                    del self.inodes[key], self.names[key]

    def hard_links(self) -> list[PurePosixPath]:
        """The files with more names than the package holds: hard-linked from elsewhere."""
        return [rel for key, rels in self.inodes.items() if self.names[key] > len(rels) for rel in rels]


def _other_names(root: Path, found: _Found) -> tuple[list[tuple[PurePosixPath, PurePosixPath]], bool]:
    """The packaged files of ``found`` that are hard links of a name of ``root`` left out, each
    with that name (the first in byte order), and whether the search saw the whole folder.

    Only when a packaged file has more names than the package holds: one more walk of the
    whole folder (ignored and excluded folders too; links not followed), stopped past
    ``found.max_files`` names beside the packaged ones (the walk's own bound) or once every
    name is found. A folder it cannot list is passed over: the search is then incomplete."""
    wanted = {key: rels for key, rels in found.inodes.items() if found.names[key] > len(rels)}
    if not wanted:
        return [], True
    inodes = {ino for _, ino in wanted}
    packaged = set(found.files)
    others: dict[tuple[int, int], list[PurePosixPath]] = {}
    missing = sum(found.names[key] - len(rels) for key, rels in wanted.items())
    seen, complete = 0, True
    # Breadth first: the names near the top (``.env``, ``.git/config``) before a large ignored tree.
    queue = deque([(root, PurePosixPath())])
    while queue and missing:
        here, rel = queue.popleft()
        try:
            with os.scandir(here) as listing:
                entries = list(listing)
        except OSError:  # another user's folder, ignored: this search cannot see into it
            complete = False
            continue
        for entry in entries:
            name = rel / entry.name
            if name in packaged:
                continue
            seen += 1
            if seen > found.max_files:
                return _hidden(wanted, others), False
            try:
                if entry.is_dir(follow_symlinks=False):
                    queue.append((Path(entry.path), name))
                elif entry.inode() in inodes:  # readdir's own number: a stat only for a likely match
                    info = entry.stat(follow_symlinks=False)
                    key = (info.st_dev, info.st_ino)
                    if key in wanted and stat.S_ISREG(info.st_mode):
                        others.setdefault(key, []).append(name)
                        missing -= 1
            except OSError:  # gone since the listing
                complete = False
    return _hidden(wanted, others), complete or not missing


def _hidden(wanted: dict[tuple[int, int], list[PurePosixPath]], others: dict[tuple[int, int], list[PurePosixPath]]
            ) -> list[tuple[PurePosixPath, PurePosixPath]]:
    """Each packaged name of a file with a name left out (``others``), with the first such name."""
    return [(rel, min(others[key], key=_byte_order)) for key, rels in wanted.items() if key in others
            for rel in rels]


def refuse_unsafe(root: Path, files: list[PurePosixPath]) -> None:
    """SourceError when the files to package hold credentials (``source-credentials``) or a
    name a container runtime reads as a whiteout (``source-whiteout``), naming each one."""
    found = sorted(credential_files(files, root), key=lambda item: _byte_order(item[0]))
    if found:
        shown = "; ".join(f"{rel} ({entry.why})" for rel, entry in found[:CREDENTIALS_SHOWN])
        more = f"; and {len(found) - CREDENTIALS_SHOWN} more" if len(found) > CREDENTIALS_SHOWN else ""
        patterns = " ".join(dict.fromkeys(entry.pattern for _, entry in found))
        raise SourceError(f"{root} holds credentials that would be pushed or uploaded with the code: {shown}{more}. "
                          f"Move them out of the folder, or leave them out with a line in {root / '.vxtrainignore'} "
                          f"(or .gitignore): {patterns} (local-run runs the folder in place: it still sees them)",
                          "source-credentials")
    whiteouts = sorted(whiteout_names(files), key=_byte_order)
    if whiteouts:
        shown = ", ".join(str(rel) for rel in whiteouts[:CREDENTIALS_SHOWN])
        more = f" and {len(whiteouts) - CREDENTIALS_SHOWN} more" if len(whiteouts) > CREDENTIALS_SHOWN else ""
        raise SourceError(f"{root} holds names starting with .wh., which a container runtime reads as deletions "
                          f"(an OCI layer's whiteouts: the file vanishes, and takes the base's file of that name with "
                          f"it): {shown}{more}; rename them, or leave them out in .vxtrainignore",
                          "source-whiteout")


def refuse_system_folder(real: Path) -> None:
    """SourceError when ``real`` (a resolved path) is ``/`` or one of the system's folders."""
    text = real.as_posix()
    try:
        home: Path | None = Path.home().resolve()
    except (RuntimeError, KeyError, OSError):  # no HOME and no password entry
        home = None
    if text in SYSTEM_FOLDERS or any(text.startswith(v + "/") for v in VIRTUAL_FOLDERS) or real == home:
        what = "the root of the file system" if text == "/" else "your home folder" if real == home \
            else "a system folder"
        raise SourceError(f"{real} is {what}, not a source folder: give the folder that holds only the code "
                          "(e.g. the project's folder, relative to the spec)", "source-system-folder")


def _too_large(root: Path, files: int, size: int, max_files: int, max_bytes: int) -> SourceError:
    which = (f"more than {max_files:,} files" if files > max_files
             else f"more than {_human(max_bytes)}")
    return SourceError(f"{root} holds {which} (stopped counting at {files:,} file{'' if files == 1 else 's'}, {_human(size)}): a source "
                       "folder is the code alone; move data and checkpoints out (to a bucket), or raise the "
                       f"bound with {MAX_FILES_ENV}=N / {MAX_BYTES_ENV}=SIZE (defaults {MAX_FILES:,} files, "
                       f"{_human(MAX_BYTES)})", "source-too-large")


def _unreadable(path: Path, root: Path, exc: OSError) -> SourceError:
    return SourceError(f"cannot read {path} in the source folder {root} ({exc.strerror or exc}): make it "
                       "readable, or move it out of the folder", "source-unreadable")


def _human(size: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} TiB"


@dataclass
class _Ignores:
    """The ignore files met so far in one walk of ``root``: folder (relative) → its rules."""

    root: Path
    rules: dict[PurePosixPath, list[Any]] = field(default_factory=dict)  # pathspec's compiled patterns, in order
    #: The ignore files of the folders above the root up to its git work tree's top (the nearest
    #: with ``.git``), deepest first: (the root's path under that folder, its rules).
    outer: list[tuple[PurePosixPath, list[Any]]] = field(default_factory=list)

    def read(self, here: Path, rel: PurePosixPath) -> None:
        """Read the ignore files of the folder ``here`` (``rel`` under the root), if it has any."""
        rules = self._rules_of(here)
        if rules is not None:
            self.rules[rel] = rules

    def read_outer(self, real: Path) -> None:
        """Read the ignore files above the (resolved) root, when it is inside a git work tree: a
        repository's top ``.gitignore`` leaves out ``src/.env`` for git, so for ``source: src``
        too. Only rules about the root's own files count: one leaving out the root itself or a
        folder above it (``src/``, a generated folder git ignores) is passed over, since the
        spec names that folder on purpose."""
        above = list(real.parents)
        top = next((i for i, folder in enumerate(above) if os.path.lexists(folder / ".git")), None)
        if top is None or os.path.lexists(real / ".git"):
            return
        for folder in above[:top + 1]:
            rules = self._rules_of(folder)
            if rules is not None:
                self.outer.append((PurePosixPath(real.relative_to(folder).as_posix()), rules))

    def _rules_of(self, here: Path) -> list[Any] | None:
        """The rules of ``here``'s ignore files, None when it has none."""
        lines: list[str] = []
        for name in IGNORE_FILES:
            path = here / name
            try:
                if path.is_file():
                    lines += path.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
            except OSError as exc:
                raise _unreadable(path, self.root, exc) from exc
        if not lines:
            return None
        # lazy: +15 ms (measured, -X importtime); only a folder with an ignore file needs it,
        # and validate's cold start reads this module for every source folder
        import pathspec

        return [rule for line in lines for rule in _compiled(pathspec.GitIgnoreSpec, line)]

    def ignored(self, rel: PurePosixPath, folder: bool) -> bool:
        """True when the ignore files leave out ``rel`` (a folder when ``folder``): the
        deepest ignore file with a rule for it decides, as git's do."""
        if not self.rules and not self.outer:  # most folders: no ignore file at all
            return False
        for where in (rel.parent, *rel.parent.parents):
            rules = self.rules.get(where)
            decided = None if rules is None else _decide(rules, rel.relative_to(where).as_posix(), folder)
            if decided is not None:
                return decided
        for prefix, rules in self.outer:
            decided = _decide(rules, (prefix / rel).as_posix(), folder)
            if decided is not None:
                return decided
        return False


def _compiled(spec: Any, line: str) -> list[Any]:
    """The pattern of one ignore-file line; none for a line git cannot read as one (a lone
    ``!``, a trailing ``\\``, a range such as ``[z-a]``), which git passes over too."""
    try:
        return list(spec.from_lines([re.sub(_ANY_FOLDER_UNDER, r"\1/**/*/", line)]).patterns)
    except (ValueError, re.error):  # pathspec's GitIgnorePatternError is a ValueError
        return []


def _decide(rules: list[Any], path: str, folder: bool) -> bool | None:
    """What the last of ``rules`` (pathspec's patterns) that matches ``path`` *itself* says:
    True to leave it out, False to keep it, None when none matches.

    As git does it: the walk asks about each folder before anything in it (a folder left
    out is not entered), so a rule matching only through one of ``path``'s folders
    (pathspec's directory mark before the end) is not about ``path`` and is passed over,
    and a folder-only rule (``out/``) matches folders only. pathspec's own check_file
    weighs such matches against the file's instead, which differs from git for
    ``src/`` + ``!src/m.py`` and ``*`` + ``!*/`` (tests/sources/test_ignore_files.py
    compares with git itself)."""
    for rule in reversed(rules):
        if rule.include is None or rule.regex is None:  # a blank line or a comment
            continue
        # The path as it is, matched without a mark: the rule is about it (``*.log``, ``src/**``).
        if any(found.groupdict().get(_DIR_MARK) is None for found in rule.regex.finditer(path)):
            return bool(rule.include)
        # A folder, as ``path/``: a folder rule (``out/``, ``*/``) whose mark is its own last slash.
        if folder and any(found.groupdict().get(_DIR_MARK) is not None and found.end(_DIR_MARK) == len(path) + 1
                          for found in rule.regex.finditer(path + "/")):
            return bool(rule.include)
    return None


def _names(root: Path, ignores: _Ignores) -> Iterator[tuple[PurePosixPath, Path]]:
    """Every name under ``root`` that the exclusions and ``ignores`` keep: files, and links to
    directories (os.walk lists those but does not enter them). A folder that cannot be listed
    is a SourceError: leaving it out would package (and hash) less than the folder holds."""
    def fail(exc: OSError) -> None:
        raise _unreadable(Path(exc.filename or root), root, exc) from exc

    for dirpath, dirnames, filenames in os.walk(root, onerror=fail):
        here = Path(dirpath)
        top = here == root
        rel = PurePosixPath(here.relative_to(root).as_posix())
        ignores.read(here, rel)
        try:
            dirnames[:] = [d for d in dirnames if not _excluded_dir(here / d, top)
                           and ((here / d).is_symlink() or not ignores.ignored(rel / d, True))]
        except OSError as exc:
            raise _unreadable(Path(exc.filename or here), root, exc) from exc
        for name in [*filenames, *(d for d in dirnames if (here / d).is_symlink())]:
            if not name.endswith(EXCLUDED_SUFFIXES) and not ignores.ignored(rel / name, False):
                yield rel / name, here / name


def _byte_order(rel: PurePosixPath) -> bytes:
    """The sort key of a relative path: its bytes, the same order on every machine."""
    return rel.as_posix().encode("utf-8", "surrogateescape")


def _excluded_dir(path: Path, top: bool) -> bool:
    name = path.name
    return (name in EXCLUDED_DIRS or name.endswith(".egg-info") or (top and name in EXCLUDED_TOP_DIRS)
            or (path / VENV_MARKER).is_file())


def _digest(root: Path, files: list[PurePosixPath], kind: str) -> str:
    """SHA-256 over (recipe, kind, then for each file in sorted order: name, mode, size, bytes).

    Names are POSIX relative paths and the order is a byte sort, so the hash is the
    same on every machine and whatever order the filesystem lists files in. Sizes
    frame the bytes, so moving content from one file to the next changes the hash.
    The mode is the one an image's layer writes (``packaged_mode``: 0755 or 0644, the
    owner's exec bit), so a ``chmod +x`` gives a new tag; the rest of the mode and the
    times are left out: they differ between checkouts of one tree (umask, clone time).
    """
    h = ContentHash(kind)
    for rel in files:
        path = root / rel
        try:
            info = path.stat()
            h.file(rel, info.st_mode, info.st_size)
            with path.open("rb") as f:  # in chunks: a folder may hold files larger than memory (a checkpoint)
                for chunk in iter(lambda: f.read(READ_CHUNK), b""):
                    h.update(chunk)
        except OSError as exc:  # unreadable (another user's file), or gone since the walk
            raise VxtrainError(f"cannot read {path} in the source folder {root} ({exc.strerror or exc}): "
                               "make it readable, or move it out of the folder") from exc
    return h.digest()


class ContentHash:
    """A source folder's digest (``Source.digest``), fed one file at a time in byte order of
    their names: ``file(rel, st_mode, size)``, then its bytes through ``update``. describe
    feeds it from the folder; an image's code layer from the bytes it writes, so the push
    knows the layer holds the files the tag names without reading the folder again."""

    def __init__(self, kind: str) -> None:
        # lazy: hashlib loads OpenSSL's libcrypto, ~3.5 ms (-X importtime) of validate's cold start
        # (this module is on its path); only hashing a folder needs it (6x the builtin sha256's speed)
        import hashlib

        self._sha = hashlib.sha256(f"{RECIPE_VERSION}\0{kind}\0".encode())

    def file(self, rel: PurePosixPath, st_mode: int, size: int) -> None:
        """Start the file ``rel`` (relative POSIX path) of ``size`` bytes and this mode."""
        self._sha.update(rel.as_posix().encode("utf-8", "surrogateescape") + b"\0")
        self._sha.update(f"{packaged_mode(st_mode):o}\0{size}\0".encode())

    def update(self, chunk: bytes) -> None:
        """The next bytes of the current file."""
        self._sha.update(chunk)

    def digest(self) -> str:
        """HASH_LENGTH hex digits."""
        return self._sha.hexdigest()[:HASH_LENGTH]


def packaged_mode(st_mode: int) -> int:
    """The mode a packaged file gets: 0755 when its owner may run it, else 0644 (as ko and jib
    write layers; the group and other bits and the umask differ from checkout to checkout)."""
    return 0o755 if st_mode & 0o100 else 0o644


def package_name(root: Path) -> str:
    """The sdist name: ``[project].name`` of a pyproject.toml, else the folder's name.

    Normalized as sdist file names are (lowercase, runs of ``-_.`` as ``_``), so the
    ``-`` before the hash in the URI is unambiguous.
    """
    name = _pyproject_name(root / "pyproject.toml") or root.name or "package"
    normal = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return normal or "package"


def _pyproject_name(pyproject: Path) -> str | None:
    if not pyproject.is_file():
        return None
    import tomllib  # lazy: +2 ms on validate's path (this module is on it); only a pyproject.toml needs it
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None  # the build reports a broken pyproject.toml with its own words
    project = data.get("project")
    name = project.get("name") if isinstance(project, dict) else None
    return name if isinstance(name, str) else None


def import_root(root: Path, module: str | None) -> Path:
    """The folder to put on ``PYTHONPATH`` so ``module`` imports from ``root``: it, or its ``src/``."""
    found = module_file(root, module) if module else None
    if found is not None and (root / "src") in found.parents:
        return root / "src"
    return root


def module_file(root: Path, module: str) -> Path | None:
    """The file ``python -m module`` would run from ``root``, or None.

    ``a.b`` is ``a/b.py`` or ``a/b/__main__.py``, directly under ``root`` or under
    ``root/src`` (the src layout of a project).
    """
    parts = module.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    for base in (root, root / "src"):
        for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__main__.py")):
            if candidate.is_file():
                return candidate
    return None


def source_folder(base: Path, source: str) -> Path:
    """``source`` as a folder (``~`` expanded, relative to ``base``, the spec's folder)."""
    return (base / Path(source).expanduser()).resolve()
