"""The LLM endpoint misbehaves on purpose (a scripted OpenAI-compatible server over real HTTP): 5xx, 429,
timeouts, garbage bodies, a dead endpoint. Retries are bounded, errors are clear problems (never a 500),
and after ``llm.breaker_failures`` failed calls in a row the breaker answers at once without calling."""

from __future__ import annotations

from gateway.llm.breaker import Breaker
from gateway.observability import metrics
from gateway.testing.scripted_llm import Reply, ScriptedLLM
from tests.backpressure.helpers import ANSWER, ask, build_settings, running


def breaker_gauge() -> float:
    return metrics.LLM_BREAKER_OPEN._value.get()


def end_the_open_period(breaker: Breaker) -> None:
    """Move the breaker's opening an open period into the past: what waiting it out would do, without a
    clock race (the open period is long, so that the refusals before this surely fall inside it)."""
    assert breaker.state == "open"
    breaker.opened_at -= breaker.open_s


async def test_breaker_opens_refuses_without_calling_then_a_probe_closes_it(demo_dsn: str,
                                                                          llm: ScriptedLLM) -> None:
    llm.default = Reply(status=503)
    settings = build_settings(demo_dsn, llm.base_url,
                              llm={"max_retries": 0, "breaker_failures": 2, "breaker_open_s": 60.0})
    async with running(settings) as (http, state):
        failures = [await ask(http) for _ in range(2)]
        calls_when_opened = len(llm.requests)
        refused = [await ask(http) for _ in range(3)]
        calls_while_open = len(llm.requests) - calls_when_opened
        gauge_open = breaker_gauge()
        llm.reset()
        llm.add_reply(ANSWER)
        assert state.llm is not None
        end_the_open_period(state.llm.breaker)
        probe = await ask(http)
        after = await ask(http)
        assert state.llm is not None and state.llm.breaker.state == "closed"
    assert [(r.status_code, r.json()["code"]) for r in failures] == [(503, "llm_unavailable")] * 2
    assert calls_when_opened == 2
    assert all((r.status_code, r.json()["code"], r.json()["breaker"]) == (503, "llm_unavailable", "open")
               for r in refused)
    assert all(int(r.headers["retry-after"]) >= 1 and "llm.breaker_open_s" in r.json()["detail"] for r in refused)
    assert calls_while_open == 0  # refused at once: the endpoint was not called
    assert gauge_open == 1 and breaker_gauge() == 0
    assert probe.status_code == 200 and after.status_code == 200


async def test_a_failed_probe_opens_the_breaker_again(demo_dsn: str, llm: ScriptedLLM) -> None:
    llm.default = Reply(status=500)
    settings = build_settings(demo_dsn, llm.base_url,
                              llm={"max_retries": 0, "breaker_failures": 1, "breaker_open_s": 60.0})
    async with running(settings) as (http, state):
        first = await ask(http)
        assert state.llm is not None
        end_the_open_period(state.llm.breaker)
        probe = await ask(http)
        calls = len(llm.requests)
        refused = await ask(http)
        assert state.llm is not None and state.llm.breaker.state == "open"
    assert first.json()["code"] == probe.json()["code"] == refused.json()["code"] == "llm_unavailable"
    assert calls == 2 and len(llm.requests) == 2 and refused.json()["breaker"] == "open"


async def test_one_rate_limited_answer_is_retried(demo_dsn: str, llm: ScriptedLLM) -> None:
    llm.add_reply(Reply(status=429), times=1)
    llm.add_reply(ANSWER)
    settings = build_settings(demo_dsn, llm.base_url, llm={"max_retries": 1})
    async with running(settings) as (http, state):
        response = await ask(http)
        assert state.llm is not None and state.llm.breaker.consecutive == 0
    assert response.status_code == 200 and len(llm.requests) == 2


async def test_server_errors_are_retried_a_bounded_number_of_times(demo_dsn: str, llm: ScriptedLLM) -> None:
    llm.default = Reply(status=502)
    settings = build_settings(demo_dsn, llm.base_url, llm={"max_retries": 2, "breaker_failures": 10})
    async with running(settings) as (http, _):
        response = await ask(http)
    assert (response.status_code, response.json()["code"]) == (503, "llm_unavailable")
    assert response.json()["attempts"] == 3 and len(llm.requests) == 3
    assert response.headers["retry-after"] == "5"


async def test_llm_timeouts_answer_llm_unavailable(demo_dsn: str, llm: ScriptedLLM) -> None:
    llm.default = Reply(ANSWER, delay_s=3.0)
    settings = build_settings(demo_dsn, llm.base_url, llm={"timeout_s": 0.3, "max_retries": 1})
    async with running(settings) as (http, state):
        response = await ask(http)
        assert state.llm is not None and state.llm.breaker.consecutive == 1  # an endpoint failure
    assert (response.status_code, response.json()["code"]) == (503, "llm_unavailable")
    assert "llm.timeout_s" in response.json()["detail"] or "Timeout" in response.json()["detail"]
    assert len(llm.requests) == 2


async def test_malformed_llm_output_answers_llm_bad_output(demo_dsn: str, llm: ScriptedLLM) -> None:
    settings = build_settings(demo_dsn, llm.base_url, llm={"max_retries": 0})
    async with running(settings) as (http, _):
        results = []
        for body in ("<html>proxy error</html>", '{"choices": []}', '{"id": 1'):
            llm.reset()
            llm.default = Reply(raw_body=body)
            results.append(await ask(http))
    assert [(r.status_code, r.json()["code"]) for r in results] == [(502, "llm_bad_output")] * 3


async def test_a_dead_endpoint_answers_llm_unavailable(demo_dsn: str) -> None:
    dead = ScriptedLLM().start()
    url = dead.base_url
    dead.stop()  # nothing listens on that port any more
    settings = build_settings(demo_dsn, url, llm={"max_retries": 1, "breaker_failures": 1, "breaker_open_s": 60})
    async with running(settings) as (http, _):
        first = await ask(http)
        second = await ask(http)
        sql = await http.post("/v1/sql", json={"database": "demo", "sql": "SELECT 1"})
    assert (first.status_code, first.json()["code"]) == (503, "llm_unavailable")
    assert second.json()["breaker"] == "open"
    assert sql.status_code == 200  # the SQL endpoints do not need the LLM


async def test_an_endpoint_that_accepts_and_never_answers_opens_the_breaker(demo_dsn: str, llm: ScriptedLLM) -> None:
    """Each call ends on the request's deadline (shorter than llm.timeout_s): still the endpoint's failure."""
    llm.add_reply(ANSWER, times=1)  # a first question loads the schema snapshot: the later ones reach the LLM fast
    llm.default = Reply(hang=True)
    settings = build_settings(demo_dsn, llm.base_url, server={"request_timeout_s": 2.0},
                              llm={"timeout_s": 60.0, "max_retries": 0, "breaker_failures": 2,
                                   "breaker_open_s": 60.0})
    async with running(settings) as (http, state):
        warm = await ask(http)
        warm_calls = len(llm.requests)
        hung = [await ask(http) for _ in range(2)]
        calls_when_opened = len(llm.requests) - warm_calls
        refused = await ask(http)
        assert state.llm is not None and state.llm.breaker.state == "open"
    assert warm.status_code == 200, warm.text
    assert [(r.status_code, r.json()["code"]) for r in hung] == [(504, "deadline_exceeded")] * 2
    assert calls_when_opened == 2
    assert (refused.status_code, refused.json()["code"], refused.json()["breaker"]) == (503, "llm_unavailable", "open")
    assert len(llm.requests) - warm_calls == calls_when_opened  # refused without calling the hung endpoint
