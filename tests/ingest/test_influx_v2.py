"""The v2 write path against a recorded contract: what influxdb-client sends to
``/api/v2/write`` and how siltwatch takes InfluxDB 2.x's answers.

No InfluxDB 2.x is installable here, so a loopback HTTP
server records the request and answers as 2.x does: 204 with no body on success,
otherwise a JSON body ``{"code": ..., "message": ...}`` (the 2.x API reference:
401 unauthorized, 404 bucket not found, 422 unprocessable, 503 unavailable with
Retry-After).
"""

from __future__ import annotations

import pytest

from ingest.influx.mirror import InfluxV2Writer, InfluxWriteError, RetryPolicy
from tests.dashboards.http_standin import Recorded, Reply, StandIn

LINES = [
    'reading,kind=turbidity,sensor=turb-up,site=lg,station=up-1,unit=NTU flags="",seq=1i,value=9.5 1777867200000',
    'alert,kind=turbidity_contrast,site=lg,subject=outfall\\ a id="al-1",message="say \\"hi\\"" 1777867260000',
]


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def writer(url: str, sleeps: Sleeps | None = None, **kw: object) -> InfluxV2Writer:
    retry = RetryPolicy(attempts=3, first_backoff_s=0.5, sleep=sleeps or Sleeps())
    return InfluxV2Writer(
        url,
        org="stormwater",
        bucket="siltwatch",
        token="s3cr3t-t0ken",
        retry=retry,
        **kw,  # type: ignore[arg-type]
    )


def script(*replies: Reply) -> tuple[list[Reply], object]:
    queue = list(replies)

    def route(req: Recorded) -> Reply:
        return queue.pop(0) if queue else Reply(204)

    return queue, route


@pytest.mark.parametrize("gzip", [False, True])
def test_a_write_is_one_post_with_org_bucket_precision_token_and_the_lines(gzip: bool) -> None:
    with StandIn(lambda req: Reply(204)) as server:
        w = writer(server.url, gzip=gzip)
        try:
            w.write_lines(LINES)
        finally:
            w.close()
    [req] = server.requests
    assert (req.method, req.path) == ("POST", "/api/v2/write")
    assert req.query == {"org": "stormwater", "bucket": "siltwatch", "precision": "ms"}
    assert req.headers["authorization"] == "Token s3cr3t-t0ken"
    assert req.headers["content-type"].startswith("text/plain")
    assert req.gzipped is gzip
    assert req.body.decode("utf-8") == "\n".join(LINES)


def test_batches_split_the_lines_in_order() -> None:
    lines = [f"reading,site=s value={i}.0 {i}" for i in range(5)]
    with StandIn(lambda req: Reply(204)) as server:
        w = writer(server.url, batch_size=2)
        w.write_lines(lines)
        w.close()
    bodies = [r.body.decode() for r in server.requests]
    assert bodies == ["\n".join(lines[0:2]), "\n".join(lines[2:4]), lines[4]]


def test_an_auth_failure_is_named_and_not_retried() -> None:
    reply = Reply(401, {"code": "unauthorized", "message": "unauthorized access"})
    sleeps = Sleeps()
    with StandIn(lambda req: reply) as server:
        w = writer(server.url, sleeps)
        with pytest.raises(InfluxWriteError) as caught:
            w.write_lines(LINES)
        w.close()
    err = caught.value
    assert err.status == 401 and not err.retryable and not err.data_error
    assert "HTTP 401: unauthorized: unauthorized access" in str(err)
    assert "bucket 'siltwatch'" in str(err)
    assert len(server.requests) == 1 and sleeps.waits == []


def test_a_503_is_retried_after_the_servers_retry_after_then_succeeds() -> None:
    sleeps = Sleeps()
    _, route = script(
        Reply(503, {"code": "unavailable", "message": "service unavailable"}, {"Retry-After": "2"})
    )
    with StandIn(route) as server:  # type: ignore[arg-type]
        w = writer(server.url, sleeps)
        w.write_lines(LINES)
        w.close()
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body  # the same batch, resent whole
    assert sleeps.waits == [2.0]  # Retry-After (2 s) beats our first backoff (0.5 s)


def test_a_503_that_persists_raises_after_the_attempts_with_backoff() -> None:
    sleeps = Sleeps()
    reply = Reply(503, {"code": "unavailable", "message": "too many writes queued"})
    with StandIn(lambda req: reply) as server:
        w = writer(server.url, sleeps)
        with pytest.raises(InfluxWriteError) as caught:
            w.write_lines(LINES)
        w.close()
    assert len(server.requests) == 3
    assert sleeps.waits == [0.5, 1.0]
    err = caught.value
    assert err.retryable and err.status == 503
    assert "too many writes queued" in str(err) and "gave up after 3 attempts" in str(err)


def test_a_422_is_a_data_error_with_the_servers_reason() -> None:
    reply = Reply(
        422,
        {
            "code": "unprocessable entity",
            "message": "failure writing points to database: partial write: points beyond retention policy dropped=1",
        },
    )
    with StandIn(lambda req: reply) as server:
        w = writer(server.url)
        with pytest.raises(InfluxWriteError) as caught:
            w.write_lines(LINES)
        w.close()
    assert caught.value.data_error and not caught.value.retryable
    assert "points beyond retention policy dropped=1" in str(caught.value)
    assert len(server.requests) == 1


def test_no_server_is_retryable_and_says_so() -> None:
    with StandIn(lambda req: Reply(204)) as server:
        url = server.url
    sleeps = Sleeps()
    w = writer(url, sleeps)
    with pytest.raises(InfluxWriteError) as caught:
        w.write_lines(LINES)
    w.close()
    assert caught.value.retryable and caught.value.status is None
    assert "no answer" in str(caught.value)
    assert len(sleeps.waits) == 2
