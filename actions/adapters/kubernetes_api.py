"""The official Kubernetes client, configured from settings, with failures classified."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from actions.adapters.settings import KubernetesSettings
from actions.errors import PermanentError, TemporaryError

# Conflict (an object still being deleted), throttling, a PodDisruptionBudget, server trouble.
_TEMPORARY_STATUS = frozenset({409, 429, 500, 502, 503, 504})


def api_client(settings: KubernetesSettings) -> client.ApiClient:
    if settings.host is not None:
        conf = client.Configuration()
        conf.host = settings.host
        conf.verify_ssl = settings.verify_ssl
        return client.ApiClient(conf)
    if settings.kubeconfig is not None:
        return config.new_client_from_config(config_file=str(settings.kubeconfig))
    try:
        config.load_incluster_config()
    except config.ConfigException:
        return config.new_client_from_config()
    return client.ApiClient()


@contextmanager
def classified(what: str) -> Iterator[None]:
    """Turn the client's exceptions into TemporaryError / PermanentError."""
    try:
        yield
    except ApiException as e:
        error = TemporaryError if e.status in _TEMPORARY_STATUS else PermanentError
        raise error(f"{what}: HTTP {e.status} {e.reason}") from e
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise TemporaryError(f"{what}: API server unreachable: {e}") from e


def call(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with classified(what):
        return fn(*args, **kwargs)


def not_found(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any | None:
    """The object, or None when the API says 404 (other failures classified)."""
    try:
        return fn(*args, **kwargs)
    except ApiException as e:
        if e.status == 404:
            return None
        with classified(getattr(fn, "__name__", "kubernetes")):
            raise


def refusal(exc: ApiException) -> str:
    """What the API server said when it refused (an eviction: the PodDisruptionBudget's name
    and what it needs), without the client's dump of headers."""
    try:
        status = json.loads(exc.body or "{}")
    except ValueError:
        return f"HTTP {exc.status} {exc.reason}"
    causes = [c.get("message") for c in (status.get("details") or {}).get("causes") or []]
    said = [m for m in (status.get("message"), *causes) if m]
    return " ".join(said) or f"HTTP {exc.status} {exc.reason}"
