"""The gateway's exception tree. Each class carries its problem ``code``, HTTP ``status`` and ``title``.

``gateway.api.problems`` turns any :class:`GatewayError` into an ``application/problem+json`` response
(RFC 9457); nothing else builds error responses. Extra fields (findings, SQLSTATE, position, the setting to
change) travel in ``extra`` and appear as members of the problem object.
"""

from __future__ import annotations

from typing import Any, ClassVar


class GatewayError(Exception):
    """Base of every error the gateway reports to a client."""

    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal error"
    retry_after: ClassVar[int | None] = None
    headers: ClassVar[dict[str, str]] = {}  # sent with the problem response (e.g. WWW-Authenticate)

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


class BadRequest(GatewayError):
    code, status, title = "bad_request", 400, "Bad request"


class MalformedBody(BadRequest):
    code, title = "malformed_body", "Request body is not valid JSON"


class InvalidRequest(GatewayError):
    code, status, title = "invalid_request", 422, "Request does not match the schema"


class Unauthorized(GatewayError):
    code, status, title = "unauthorized", 401, "Missing or invalid API key"
    headers = {"WWW-Authenticate": 'Bearer realm="nl2sql-gateway"'}  # RFC 6750: say which scheme to use


class InvalidToken(Unauthorized):
    """An OAuth access token that is not valid here (signature, issuer, audience, lifetime, shape)."""

    code, title = "invalid_token", "Invalid access token"
    headers = {"WWW-Authenticate": 'Bearer realm="nl2sql-gateway", error="invalid_token"'}


class Forbidden(GatewayError):
    code, status, title = "forbidden", 403, "Not allowed for this API key"


class InsufficientScope(Forbidden):
    code, title = "insufficient_scope", "The access token lacks a required scope"
    headers = {"WWW-Authenticate": 'Bearer realm="nl2sql-gateway", error="insufficient_scope"'}


class UnknownPgRole(Forbidden):
    """The caller's API key (or token) is mapped to a Postgres role that does not exist in the database, so
    nothing can be read, shown or run as it; an administrator must fix the mapping."""

    code, title = "unknown_pg_role", "The caller's Postgres role does not exist"


class NotFound(GatewayError):
    code, status, title = "not_found", 404, "Not found"


class UnknownDatabase(NotFound):
    code, title = "unknown_database", "Unknown database"


class MethodNotAllowed(GatewayError):
    code, status, title = "method_not_allowed", 405, "Method not allowed"


class UnsupportedMediaType(GatewayError):
    code, status, title = "unsupported_media_type", 415, "Request body must be application/json"


class PayloadTooLarge(GatewayError):
    code, status, title = "payload_too_large", 413, "Request body too large"


class RequestTimeout(GatewayError):
    """The client did not send its request headers or body within the server's bound."""

    code, status, title = "request_timeout", 408, "Request not received in time"


class HeadersTooLarge(GatewayError):
    code, status, title = "headers_too_large", 431, "Request headers too large"


class SqlTooLarge(PayloadTooLarge):
    code, title = "sql_too_large", "SQL text too large"


class SqlBlocked(GatewayError):
    """The static safety check refused the SQL; ``extra['findings']`` lists why."""

    code, status, title = "sql_blocked", 422, "SQL blocked by the safety check"


class RowPolicyClaimMissing(GatewayError):
    """A row filter of the rules needs a claim (row-policy value) the caller's principal does not carry:
    refused rather than run unfiltered (``extra['claim']``, ``extra['table']``)."""

    code, status, title = "row_policy_claim_missing", 403, "A row-policy value this query needs is missing"


class RowPolicyClaimInvalid(GatewayError):
    """A row-policy value that cannot be applied safely: a name outside ``[a-z_][a-z0-9_]*``, a value holding
    NUL, longer than the gateway accepts, or not valid for the column its row filter compares it with."""

    code, status, title = "row_policy_claim_invalid", 403, "A row-policy value cannot be applied"


class QueryError(GatewayError):
    """Postgres rejected the query; ``extra`` carries ``sqlstate``, ``message`` and ``position``."""

    code, status, title = "query_error", 422, "The database rejected the query"


class StatementTimeout(GatewayError):
    code, status, title = "statement_timeout", 504, "Query exceeded the statement timeout"


class QueryCanceled(GatewayError):
    code, status, title = "query_canceled", 504, "Query was cancelled by the database"


class ResultTooLarge(GatewayError):
    code, status, title = "result_too_large", 422, "Result exceeds the gateway's memory limit"


class CostTooHigh(GatewayError):
    """The planner's estimate (EXPLAIN, not run) is beyond the database's max_plan_cost or max_plan_rows."""

    code, status, title = "cost_too_high", 422, "Query's estimated cost exceeds the database's limits"


class TooManyRequests(GatewayError):
    code, status, title, retry_after = "too_many_requests", 429, "Too many requests", 1


class TokenBudgetExceeded(GatewayError):
    """The owner's LLM tokens for today (UTC) are spent (``llm.daily_token_budget_per_user``); Retry-After
    counts the seconds until midnight UTC."""

    code, status, title, retry_after = "token_budget_exceeded", 429, "Daily LLM token budget spent", 60


class TooManyInFlight(TooManyRequests):
    """One key (end user, or address without a key) has backpressure.max_in_flight_per_key requests in flight."""

    code, title = "too_many_in_flight", "Too many requests in flight for this client"


class DatabaseUnavailable(GatewayError):
    code, status, title, retry_after = "database_unavailable", 503, "Database unavailable", 2


class RulesUnavailable(GatewayError):
    """The database's rule files cannot be read as rules and no earlier good set of them was saved: serving
    it could show what they hide, so it is not served until they are fixed (``/readyz`` says why)."""

    code, status, title, retry_after = "rules_unavailable", 503, "The database's rules cannot be read", 5


class RulesInvalid(GatewayError):
    """A rules edit from the console that ``rules check`` would reject; ``extra['problems']`` lists them
    (file, line, message). Nothing was written."""

    code, status, title = "rules_invalid", 422, "The rules edit does not pass rules check"


class RulesReadOnly(GatewayError):
    """The rules folder cannot be written by the gateway (a read-only mount, a ConfigMap): edit the files
    where they are kept. ``extra['folder']`` names it."""

    code, status, title = "rules_read_only", 409, "The rules folder is read-only"


class SemanticUnavailable(GatewayError):
    """The database's semantic model files cannot be read and no good model was loaded before: metric
    questions are refused rather than answered from a half-read model (``semantic check`` says why)."""

    code, status, title, retry_after = "semantic_unavailable", 503, "The database's semantic model cannot be read", 5


class SemanticQueryInvalid(GatewayError):
    """A metric query names a metric or dimension the semantic model lacks, or asks what it cannot compute."""

    code, status, title = "semantic_query_invalid", 422, "The metric query does not fit the semantic model"


class Overloaded(GatewayError):
    code, status, title, retry_after = "overloaded", 503, "Gateway overloaded", 1


class ShuttingDown(GatewayError):
    """The replica is draining after SIGTERM: requests in flight finish, new ones go elsewhere."""

    code, status, title, retry_after = "shutting_down", 503, "The gateway is shutting down", 1


class PoolExhausted(Overloaded):
    """Every connection of a target's pool stayed busy for the pool's wait: saturation, not an outage."""

    code, title = "pool_exhausted", "No database connection became free in time"


class ClientClosedRequest(GatewayError):
    """The client disconnected before the answer; its work was cancelled. Never seen by that client, but
    logged and counted under this code (499, as nginx names it)."""

    code, status, title = "client_closed_request", 499, "The client closed the connection"


class LLMNotConfigured(GatewayError):
    code, status, title = "llm_not_configured", 503, "No LLM endpoint is configured"


class LLMUnavailable(GatewayError):
    code, status, title, retry_after = "llm_unavailable", 503, "The LLM endpoint is unavailable", 5


class LLMBadOutput(GatewayError):
    code, status, title = "llm_bad_output", 502, "The LLM returned no usable SQL"


class StoreUnavailable(GatewayError):
    code, status, title, retry_after = "store_unavailable", 503, "The gateway's store database is unavailable", 2


class IdentityProviderUnavailable(GatewayError):
    code, status, title, retry_after = "idp_unavailable", 503, "The authorization server is unavailable", 5


class StoreNotConfigured(GatewayError):
    code, status, title = "store_not_configured", 503, "No store database is configured"


class DeadlineExceeded(GatewayError):
    code, status, title = "deadline_exceeded", 504, "The request's time budget was spent"


class UnknownRequest(NotFound):
    """Feedback names a request id the store has no record of."""

    code, title = "unknown_request", "Unknown request id"


class UnknownConversation(NotFound):
    """No conversation with this id belongs to the caller (another key's, expired, or never started): the
    same answer in every case, so an id cannot be probed."""

    code, title = "unknown_conversation", "Unknown conversation id"


class ConversationDatabaseMismatch(GatewayError):
    """A follow-up names another database than the conversation's; ``extra['conversation_database']``."""

    code, status, title = "conversation_database_mismatch", 409, "The conversation is on another database"


class FeedbackConflict(GatewayError):
    """This client already gave different feedback on this request (feedback is idempotent, not editable)."""

    code, status, title = "feedback_conflict", 409, "Different feedback was already recorded"


class CorrectionBlocked(SqlBlocked):
    """A corrected SQL sent as feedback failed the safety check; ``extra['findings']`` lists why."""

    code, title = "correction_blocked", "Corrected SQL blocked by the safety check"


class UnknownExample(NotFound):
    code, title = "unknown_example", "Unknown example id"


class ExampleAlreadyReviewed(GatewayError):
    """The example is not in a state this decision applies to; ``extra['example_status']`` says which."""

    code, status, title = "example_already_reviewed", 409, "The example was already reviewed"


class UnknownTemplate(NotFound):
    """No template by that name that this caller may use (another database's, or one reading what the
    caller may not read, answers the same: a key learns nothing about templates outside its reach)."""

    code, title = "unknown_template", "Unknown template"


class TemplateInvalid(GatewayError):
    """A template definition the gateway cannot use; ``detail`` says what to change."""

    code, status, title = "template_invalid", 422, "The template definition is not valid"


class TemplateExists(GatewayError):
    code, status, title = "template_exists", 409, "A template with this name exists"


class TemplateValueInvalid(GatewayError):
    """A template parameter's value its column cannot hold (or does not hold, for a text column with known
    values); ``extra['suggestions']`` lists the closest values the caller may read."""

    code, status, title = "template_value_invalid", 422, "Parameter value outside the column's domain"


class UnknownGuidelineVersion(NotFound):
    code, title = "unknown_guideline_version", "Unknown guideline version"


class GuidelineGateFailed(GatewayError):
    """The candidate did worse than the guideline it would replace on held-out questions (``question_replay``)
    or corrections (``reflection_replay``); ``extra['evaluation']`` holds the replay, ``method`` says which."""

    code, status, title = "guideline_gate_failed", 409, "Candidate guideline failed the activation gate"


class GuidelineRegressed(GatewayError):
    """The candidate is not worse overall, but a verified question answered right with the guideline in force
    is answered wrong with it; ``extra['regressions']`` names each (question, reason, SQL before and after),
    ``extra['report_id']`` the stored report (``GET /v1/guidelines/{version}/regressions``)."""

    code, status, title = "guideline_regressed", 409, "Candidate guideline breaks a verified question"


class GuidelineNeverActive(GatewayError):
    """A rollback may only return to a version that was active before (it passed the gate or was forced)."""

    code, status, title = "guideline_never_active", 409, "The guideline version was never active"


class RegenerationRunning(GatewayError):
    code, status, title, retry_after = "regeneration_running", 409, "A regeneration is already running", 30


def all_error_classes() -> list[type[GatewayError]]:
    """Every concrete error class, for documentation checks and the OpenAPI description."""
    seen: list[type[GatewayError]] = []
    stack: list[type[GatewayError]] = [GatewayError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return sorted(seen, key=lambda c: c.code)
