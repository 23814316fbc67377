"""A small REST client for the Kubernetes API server, on httpx.

Why not the official ``kubernetes`` package: the scheduler reads a thousand pods a cycle as
plain JSON, and the official client turns each into generated model objects (tens of
milliseconds per hundred pods) only for the loop to read a dozen fields; its
``create_namespaced_binding`` raises while parsing a successful reply (kubernetes-client/python
issue 825); and watches, paging and the ``pods/binding``, ``pods/eviction`` and ``nodes/status``
subresources are a handful of plain HTTP calls. httpx gives a pooled keep-alive connection,
TLS with the cluster's CA and a streaming body for watches, which is all this needs.

Every failure is a :class:`KubeError` carrying the HTTP status (0 when the server could not be
reached) and the API server's own message, so a caller can tell a 409 Conflict (someone else
bound the pod) from a 404 (the pod was deleted) from an unreachable server.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from schedlab.errors import SchedlabError
from schedlab.serve.kubernetes.kubeconfig import Credentials

Obj = dict[str, Any]
#: Objects asked per page when listing (the API server pages large lists by ``continue``).
PAGE = 2000


class KubeError(SchedlabError):
    """The API server said no, or could not be reached (``status`` 0)."""

    def __init__(self, status: int, message: str, reason: str = "") -> None:
        self.status = status
        self.reason = reason
        super().__init__(message)


class Gone(KubeError):
    """A watch's resourceVersion is too old (410): list again."""


def _message(response: httpx.Response) -> tuple[str, str]:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200] or response.reason_phrase, ""
    if isinstance(body, dict):
        return str(body.get("message") or response.reason_phrase), str(body.get("reason") or "")
    return response.reason_phrase, ""


class KubeAPI:
    """One API server: ``request`` for single calls, ``list`` and ``watch`` for collections."""

    def __init__(self, creds: Credentials, timeout: float = 10.0) -> None:
        self.creds = creds
        headers = {"Accept": "application/json", "User-Agent": "schedlab"}
        if creds.token:
            headers["Authorization"] = f"Bearer {creds.token}"
        verify: bool | ssl.SSLContext = creds.verify
        if creds.verify:
            verify = ssl.create_default_context(cafile=creds.ca_file)
            if creds.client_cert is not None:
                verify.load_cert_chain(*creds.client_cert)
        self._client = httpx.Client(
            base_url=creds.server,
            headers=headers,
            verify=verify,
            timeout=timeout,
        )

    def close(self) -> None:
        self._client.close()

    def _fail(self, method: str, path: str, response: httpx.Response) -> KubeError:
        message, reason = _message(response)
        text = (
            f"{method} {path}: {response.status_code} {reason or response.reason_phrase}: {message}"
        )
        if response.status_code == 410:
            return Gone(410, text, reason)
        if response.status_code in (401, 403):
            who = "unauthorised" if response.status_code == 401 else "forbidden"
            text += f" ({who}: check the credentials of {self.creds.source or 'the API server'})"
        return KubeError(response.status_code, text, reason)

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
    ) -> Obj:
        """One call; the reply's JSON object (``{}`` when it has none)."""
        try:
            response = self._client.request(
                method,
                path,
                params=params,
                content=None if body is None else json.dumps(body),
                headers={"Content-Type": content_type} if body is not None else None,
            )
        except httpx.HTTPError as exc:
            raise KubeError(
                0, f"{method} {path}: cannot reach {self.creds.server} ({exc})"
            ) from None
        if response.status_code >= 400:
            raise self._fail(method, path, response)
        if not response.content:
            return {}
        try:
            data = response.json()
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Obj:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Mapping[str, Any]) -> Obj:
        return self.request("POST", path, body)

    def put(self, path: str, body: Mapping[str, Any]) -> Obj:
        return self.request("PUT", path, body)

    def patch(self, path: str, body: Mapping[str, Any], strategic: bool = False) -> Obj:
        kind = "strategic-merge-patch" if strategic else "merge-patch"
        return self.request("PATCH", path, body, content_type=f"application/{kind}+json")

    def delete(self, path: str, body: Mapping[str, Any] | None = None) -> Obj:
        return self.request("DELETE", path, body)

    def list(self, path: str, params: Mapping[str, Any] | None = None) -> tuple[list[Obj], str]:
        """Every object of a collection (page by page) and the list's resourceVersion, from
        which a watch continues."""
        items: list[Obj] = []
        query = {**(params or {}), "limit": PAGE}
        while True:
            page = self.get(path, query)
            items += page.get("items") or []
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, str(meta.get("resourceVersion") or "")
            query["continue"] = meta["continue"]

    def watch(
        self,
        path: str,
        resource_version: str,
        timeout: float = 60.0,
        params: Mapping[str, Any] | None = None,
    ) -> Iterator[tuple[str, Obj]]:
        """The events after ``resource_version`` as (type, object), until the server ends the
        watch (after about ``timeout`` seconds). Raises :class:`Gone` when the version is too
        old, or when the stream says so."""
        query = {
            **(params or {}),
            "watch": "1",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(int(timeout)),
        }
        try:
            with self._client.stream(
                "GET", path, params=query, timeout=httpx.Timeout(10.0, read=timeout + 10.0)
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise self._fail("WATCH", path, response)
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    kind, obj = str(event.get("type")), event.get("object") or {}
                    if kind == "ERROR":
                        code = int(obj.get("code") or 0)
                        why = f"{obj.get('reason', '')}: {obj.get('message', '')}"
                        text = f"WATCH {path}: {code} {why}"
                        raise (Gone if code == 410 else KubeError)(
                            code, text, str(obj.get("reason") or "")
                        )
                    yield kind, obj
        except httpx.HTTPError as exc:
            raise KubeError(0, f"WATCH {path}: the stream broke ({exc})") from None
