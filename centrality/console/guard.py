"""Who may use the console, and what a request must carry to change anything.

A person logs in once per browser with the login token; the session cookie is a MAC of a random
nonce under a key drawn from the token, so it survives a restart with the same token and needs
no store. A state-changing request must come from the console's own page: its `Origin` is the
console's, and it carries the session's CSRF token (a second MAC, handed to the page by
`/api/session`, which another site cannot read). On loopback the `Host` must name loopback too,
so a site that rebinds its DNS name to 127.0.0.1 is not the console's origin.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Mapping

from pydantic import SecretStr

from centrality.console.settings import LOOPBACK_NAMES


class Guard:
    def __init__(self, token: SecretStr, port: int) -> None:
        self._token = token.get_secret_value().encode()
        self._key = hmac.new(self._token, b"centrality-console", hashlib.sha256).digest()
        self.cookie = f"centrality_console_{port}"

    def token_matches(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self._token)

    def new_session(self) -> str:
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{self._mac('session', nonce)}"

    def session_ok(self, cookie: str | None) -> bool:
        nonce, _, mac = (cookie or "").partition(".")
        return bool(nonce and mac) and hmac.compare_digest(mac, self._mac("session", nonce))

    def csrf(self, cookie: str) -> str:
        return self._mac("csrf", cookie.partition(".")[0])

    def csrf_ok(self, cookie: str | None, given: str | None) -> bool:
        if not cookie or not given or not self.session_ok(cookie):
            return False
        return hmac.compare_digest(given, self.csrf(cookie))

    def _mac(self, purpose: str, nonce: str) -> str:
        return hmac.new(self._key, f"{purpose}:{nonce}".encode(), hashlib.sha256).hexdigest()


def loopback_host(host_header: str | None) -> bool:
    """Whether a `Host` header names loopback (any port)."""
    host = (host_header or "").strip().lower()
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def same_origin(headers: Mapping[str, str], scheme: str, host: str) -> bool:
    """A state-changing request from the console's own page: its Origin is ours, or, for a
    browser that sends none, its fetch metadata does not say another site."""
    origin = headers.get("Origin")
    if origin is not None:
        return origin == f"{scheme}://{host}"
    return headers.get("Sec-Fetch-Site", "same-origin") in ("same-origin", "none")
