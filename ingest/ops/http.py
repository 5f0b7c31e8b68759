"""The service's operations endpoints: ``/metrics``, ``/healthz``, ``/readyz``.

``serve --metrics HOST:PORT`` serves :func:`ops_app` alone (a deployment
without the web console); ``serve --http`` serves :class:`OpsFront`, which
answers the same three paths itself and hands every other request to the
console. Both listeners start *before* the rebuild from the store, so an
orchestrator sees "alive, not ready" during a long rebuild instead of a refused
connection (which a liveness probe would punish with a restart); until the
console is attached, its pages answer 503.

The three endpoints are open (no login): they reveal counts and states, no
readings, names or secrets. A scrape reads the service's counters in a worker
thread, so a slow read never stalls the console's event loop.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ingest.ops.health import Probe, ServiceParts, liveness, readiness
from ingest.ops.metrics import exposition, service_registry

OPS_PATHS = frozenset({"/metrics", "/healthz", "/readyz"})


def _answer(probe: Probe) -> Response:
    return JSONResponse(
        probe.body,
        status_code=200 if probe.ok else 503,
        headers={"cache-control": "no-store"},
    )


def ops_app(parts: ServiceParts, clock_ms: Callable[[], int]) -> Starlette:
    """The three endpoints over ``parts``, with the service's private metrics registry."""
    registry: CollectorRegistry = service_registry(parts, clock_ms)

    async def metrics(request: Request) -> Response:
        body = await run_in_threadpool(exposition, registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    async def healthz(request: Request) -> Response:
        return _answer(liveness(parts))

    async def readyz(request: Request) -> Response:
        return _answer(readiness(parts))

    return Starlette(
        routes=[
            Route("/metrics", metrics),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
        ]
    )


class OpsFront:
    """``--http``'s front: the operations endpoints, then the console once attached.

    ``console`` is None while the service starts (rebuild, broker connection);
    other paths then answer 503 with Retry-After.
    """

    def __init__(self, ops: ASGIApp) -> None:
        self.ops = ops
        self.console: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") in OPS_PATHS:
            await self.ops(scope, receive, send)
            return
        console = self.console
        if console is None:
            if scope["type"] != "http":
                return  # lifespan is off (console/server.py); nothing else is served
            starting = PlainTextResponse(
                "siltwatch is starting (rebuilding from the store, connecting to the broker); "
                "see /readyz\n",
                status_code=503,
                headers={"retry-after": "5"},
            )
            await starting(scope, receive, send)
            return
        await console(scope, receive, send)
