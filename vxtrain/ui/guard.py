"""Who may read the ui: the rules every request passes before a page is made.

The ui serves on 127.0.0.1 only, but loopback alone does not keep a page private: any
local user can connect to the port, and any web page the user opens can make the
browser send requests to it. So, as the emulator asks every call for its token, the ui
asks every request for one, in four checks, in this order:

1. **Host** (DNS rebinding): the ``Host`` header must be ``127.0.0.1:PORT`` or
   ``localhost:PORT``. A page of ``evil.example`` whose name was re-pointed at
   127.0.0.1 sends ``Host: evil.example``; its requests are refused (403) before anything
   else is read (https://en.wikipedia.org/wiki/DNS_rebinding).
2. **Method**: the ui is read-only, so only GET and HEAD are served (405 otherwise):
   no request can change anything, whoever sends it.
3. **Cross-site requests** (Fetch Metadata, https://web.dev/articles/fetch-metadata):
   a request whose ``Sec-Fetch-Site`` says another site (or another port of this one:
   ``same-site``) started it is refused (403), unless it is a top-level navigation
   (a link followed), which carries no cookie from another site (below) anyway.
4. **The token**: a random one per run (:func:`new_token`, ``secrets.token_urlsafe``).
   The URL ``vxtrain ui`` prints carries it once (``/?token=…``); that request is
   answered with a cookie holding it (``HttpOnly``: no script reads it; ``SameSite=Strict``:
   the browser sends it only with requests this site starts) and a redirect to the same
   URL without it, so the token leaves the address bar and the history. Every other
   request must carry the cookie: none is 401, a wrong one (or a wrong ``?token=``) 403.
   Tokens are compared in constant time (``hmac.compare_digest``).

Pure functions of the request's method, target and headers: vxtrain.ui.server applies them.
"""
from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qsl, urlencode, urlsplit

#: The query parameter the printed URL carries the token in.
TOKEN_PARAM = "token"
#: The methods served: the ui changes nothing.
METHODS = frozenset({"GET", "HEAD"})
#: ``Sec-Fetch-Site`` values of requests this site (or the user, typing a URL) started.
OWN_SITES = frozenset({"same-origin", "none"})
#: The token's bytes of randomness (secrets.token_urlsafe: 43 characters).
TOKEN_BYTES = 32


def new_token() -> str:
    """A fresh random token for one run of the ui."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def cookie_name(port: int) -> str:
    """The cookie's name: a browser sends a cookie of 127.0.0.1 to every port of it, so two
    uis (on two ports) each keep their own."""
    return f"vxtrain_ui_{port}"


@dataclass(frozen=True)
class Verdict:
    """What to answer a request: serve it (``status`` 200), redirect it to ``location``
    setting ``cookie``, or refuse it with ``status`` and ``reason``."""

    status: int
    reason: str = ""
    location: str | None = None
    cookie: str | None = None

    @property
    def allowed(self) -> bool:
        """Whether the page may be served."""
        return self.status == HTTPStatus.OK


ALLOW = Verdict(HTTPStatus.OK)


@dataclass(frozen=True)
class Guard:
    """The rules of one ui: its ``port`` (the Host it answers to) and ``token``."""

    port: int
    token: str

    @property
    def hosts(self) -> frozenset[str]:
        """The Host headers answered."""
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    @property
    def cookie(self) -> str:
        """The cookie's name."""
        return cookie_name(self.port)

    def url(self, path: str = "/") -> str:
        """The URL to print: ``path`` with the token (the one place it is shown)."""
        return f"http://127.0.0.1:{self.port}{path}?{urlencode({TOKEN_PARAM: self.token})}"

    def check(self, method: str, target: str, headers: Mapping[str, str]) -> Verdict:
        """The verdict on one request (``headers``: names in any case)."""
        lowered = {name.lower(): value for name, value in headers.items()}
        host = lowered.get("host", "")
        if host.lower() not in self.hosts:
            return Verdict(HTTPStatus.FORBIDDEN, f"this page answers to 127.0.0.1:{self.port} only, "
                                                 f"not Host {host[:100]!r} (a DNS-rebinding guard)")
        if method not in METHODS:
            return Verdict(HTTPStatus.METHOD_NOT_ALLOWED, f"the ui is read-only: {method} is not served")
        if _cross_site(lowered):
            return Verdict(HTTPStatus.FORBIDDEN, "a request started by another site is refused")
        return self._credential(target, lowered)

    def _credential(self, target: str, headers: Mapping[str, str]) -> Verdict:
        parts = urlsplit(target)
        params = parse_qsl(parts.query, keep_blank_values=True)
        given = [value for name, value in params if name == TOKEN_PARAM]
        if given:
            if len(given) != 1 or not _same(given[0], self.token):
                return Verdict(HTTPStatus.FORBIDDEN, "the token in this URL is not this ui's: open the URL "
                                                     "`vxtrain ui` printed last")
            rest = urlencode([(name, value) for name, value in params if name != TOKEN_PARAM])
            clean = (parts.path or "/") + (f"?{rest}" if rest else "")
            return Verdict(HTTPStatus.SEE_OTHER, location=clean, cookie=self.set_cookie())
        sent = cookies(headers.get("cookie", "")).get(self.cookie)
        if sent is None:
            return Verdict(HTTPStatus.UNAUTHORIZED, "open the URL `vxtrain ui` printed (it carries the token "
                                                    "once, and this browser keeps it in a cookie)")
        if not _same(sent, self.token):
            return Verdict(HTTPStatus.FORBIDDEN, "this browser's cookie is from another run of `vxtrain ui`: "
                                                 "open the URL it printed last")
        return ALLOW

    def set_cookie(self) -> str:
        """The ``Set-Cookie`` value: the token, for this site's own requests, unreadable by scripts.
        No ``Max-Age``: it ends with the browser session (and the token with the ui)."""
        return f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict"


def _cross_site(headers: Mapping[str, str]) -> bool:
    """Whether another site (another port of 127.0.0.1 is ``same-site``, not ``same-origin``)
    started the request, other than by a top-level navigation. Without the header (curl, an
    older browser) the token decides alone."""
    site = headers.get("sec-fetch-site")
    if site is None or site in OWN_SITES:
        return False
    return not (headers.get("sec-fetch-mode") == "navigate" and headers.get("sec-fetch-dest") == "document")


def cookies(header: str) -> dict[str, str]:
    """A ``Cookie`` header's pairs (the first of a name wins, as servers commonly read them)."""
    found: dict[str, str] = {}
    for pair in header.split(";"):
        name, sep, value = pair.partition("=")
        if sep and name.strip() not in found:
            found[name.strip()] = value.strip()
    return found


def _same(given: str, token: str) -> bool:
    """Constant-time comparison (the length may differ: compare_digest then returns False)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode())
