"""Where the API server is and who we are to it: a kubeconfig file, or the pod's service account.

The ecosystem's rules, in their order: ``--kubeconfig FILE``, else ``$KUBECONFIG`` (the first file
of the list that exists), else ``~/.kube/config``, else the in-cluster service account (the
token and CA Kubernetes mounts into every pod, with ``$KUBERNETES_SERVICE_HOST``). Only what a
scheduler needs is read: the current context's server, its CA (file or inline data, or
``insecure-skip-tls-verify``) and the user's bearer token (inline or ``tokenFile``) or client
certificate. Anything else (exec plugins, auth providers) is refused by name.
"""

from __future__ import annotations

import base64
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.input_files import read_text

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class Credentials:
    """How to reach and authenticate to one API server."""

    server: str
    token: str = ""
    ca_file: str | None = None  # None with verify=True: the system's CAs
    verify: bool = True
    client_cert: tuple[str, str] | None = None  # (certificate file, key file)
    source: str = ""  # where this came from, for error messages
    namespace: str = "default"


def _materialise(data: str, suffix: str) -> str:
    """Inline base64 data (``*-data`` keys) written to a private temporary file, as TLS needs."""
    fd, path = tempfile.mkstemp(prefix="schedlab-kube-", suffix=suffix)
    with os.fdopen(fd, "wb") as fh:
        fh.write(base64.b64decode(data))
    return path


def _named(entries: Any, name: str, kind: str, source: str) -> dict[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return dict(entry.get(kind) or {})
    raise InputError(f"{source}: no {kind} named '{name}'")


def _relative(base: Path, value: str) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base.parent / path)


def from_kubeconfig(path: Path, context: str | None = None) -> Credentials:
    """The credentials of ``context`` (default: the file's current context) in ``path``."""
    import yaml  # only serve kubernetes needs YAML

    text = read_text(path, "kubeconfig")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        why = " ".join(str(exc).split())  # one line, as every refusal
        raise InputError(f"{path}: not a valid kubeconfig ({why})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: not a valid kubeconfig (not a mapping)")
    source = str(path)
    name = context or doc.get("current-context")
    if not name:
        raise InputError(f"{source}: no current-context (give --context)")
    ctx = _named(doc.get("contexts"), name, "context", source)
    cluster = _named(doc.get("clusters"), ctx.get("cluster", ""), "cluster", source)
    user = _named(doc.get("users"), ctx.get("user", ""), "user", source) if ctx.get("user") else {}
    server = str(cluster.get("server") or "")
    if not server.startswith(("https://", "http://")):
        raise InputError(
            f"{source}: cluster of context '{name}' has no server URL (got {server!r})"
        )
    for unsupported in ("exec", "auth-provider"):
        if unsupported in user:
            raise InputError(
                f"{source}: user of context '{name}' authenticates with '{unsupported}', which "
                "schedlab does not run; give it a token or a client certificate"
            )
    ca: str | None = None
    if cluster.get("certificate-authority-data"):
        ca = _materialise(cluster["certificate-authority-data"], ".crt")
    elif cluster.get("certificate-authority"):
        ca = _relative(path, cluster["certificate-authority"])
    token = str(user.get("token") or "")
    if not token and user.get("tokenFile"):
        token = Path(_relative(path, user["tokenFile"])).read_text().strip()
    cert: tuple[str, str] | None = None
    if user.get("client-certificate-data") and user.get("client-key-data"):
        cert = (
            _materialise(user["client-certificate-data"], ".crt"),
            _materialise(user["client-key-data"], ".key"),
        )
    elif user.get("client-certificate") and user.get("client-key"):
        cert = (_relative(path, user["client-certificate"]), _relative(path, user["client-key"]))
    return Credentials(
        server=server.rstrip("/"),
        token=token,
        ca_file=ca,
        verify=not cluster.get("insecure-skip-tls-verify", False),
        client_cert=cert,
        source=f"{source} (context {name})",
        namespace=str(ctx.get("namespace") or "default"),
    )


def in_cluster() -> Credentials | None:
    """The pod's own service account, when running inside a cluster."""
    host, port = (
        os.environ.get("KUBERNETES_SERVICE_HOST"),
        os.environ.get("KUBERNETES_SERVICE_PORT"),
    )
    token = SERVICE_ACCOUNT / "token"
    if not host or not token.exists():
        return None
    host = f"[{host}]" if ":" in host else host
    return Credentials(
        server=f"https://{host}:{port or 443}",
        token=token.read_text().strip(),
        ca_file=str(SERVICE_ACCOUNT / "ca.crt"),
        source="in-cluster service account",
    )


def load_credentials(kubeconfig: Path | None = None, context: str | None = None) -> Credentials:
    """The credentials by the ecosystem's rules (see the module docstring)."""
    if kubeconfig is not None:
        return from_kubeconfig(kubeconfig, context)
    for item in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if item and Path(item).expanduser().exists():
            return from_kubeconfig(Path(item).expanduser(), context)
    default = Path("~/.kube/config").expanduser()
    if default.exists():
        return from_kubeconfig(default, context)
    found = in_cluster()
    if found is None:
        raise InputError(
            "no Kubernetes API server configured: give --kubeconfig, set KUBECONFIG, or run "
            "inside a cluster (e.g. 'eval \"$(scripts/k8s-dev-cluster.sh start)\"')"
        )
    return found
