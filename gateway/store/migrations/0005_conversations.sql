-- Conversations on POST /v1/ask (issue 14, item 3): a follow-up question sees the earlier turns.
--
-- A conversation belongs to the client that started it (`key:<id>`, or the X-Client-Id with auth off) and
-- to one database. A turn keeps what a follow-up's prompt may show: the question, the SQL, the result's
-- shape (columns and row count, never rows) or the clarifying question the gateway asked. Each turn names
-- its request id, so feedback on it goes through request_audit as for any answer. Conversations whose
-- latest turn is older than store.conversation_retention_days are deleted with their turns.
CREATE TABLE conversations (
    id            text PRIMARY KEY,
    owner         text NOT NULL,
    database      text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_turn_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversations_last_turn_at ON conversations (last_turn_at);

CREATE TABLE conversation_turns (
    conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    n               integer NOT NULL,
    request_id      text,
    question        text NOT NULL,
    evidence        text NOT NULL DEFAULT '',
    status          text NOT NULL,
    sql             text,
    columns         jsonb NOT NULL DEFAULT '[]',
    row_count       integer,
    truncated       boolean NOT NULL DEFAULT false,
    clarification   jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, n)
);
CREATE INDEX conversation_turns_request_id ON conversation_turns (request_id);
