"""Server plumbing: how the HTTP app is served fast and safely, apart from what it answers (``gateway.api``).

- :mod:`~gateway.serving.admission`: the pure ASGI middleware every request passes (request id, admission
  in order, the deadline, metrics, the access log line);
- :mod:`~gateway.serving.fastpath`: compiled routes, the hot POST routes without FastAPI's per-request
  routing and dependency solving;
- :mod:`~gateway.serving.app`: the FastAPI subclass that asks once whether FastAPI's telemetry is on;
- :mod:`~gateway.serving.server`: uvicorn with bounded request heads, a drain on SIGTERM and worker processes;
- :mod:`~gateway.serving.compat`: the framework internals these rely on, checked once; where one is
  missing the fast path turns itself off (one log line) and requests take the framework's public path;
- :mod:`~gateway.serving.backpressure`, :mod:`~gateway.serving.shared_limits`: in-flight bounds and rate limits;
- :mod:`~gateway.serving.deadline`, :mod:`~gateway.serving.ports`, :mod:`~gateway.serving.banner`: the request's
  deadline, the listen address check, the lines ``serve`` prints.
"""
