-- Who is asking (issue "Who is asking: end-user identity"): every row a request leaves names who owns it
-- and how it came in.
--
-- owner:    Principal.owner, who the row belongs to: 'user:<id>' for an end user, 'key:<id>' for an API key,
--           the X-Client-Id (or 'anonymous') with auth off. Feedback on an answer is accepted only from its
--           owner. feedback.client_id and verified_examples.proposed_by already hold the owner.
-- end_user: the end user's stable id (the token's subject), NULL for API keys and with auth off.
-- via:      what the request came through: 'key:<id>' or 'client:<OAuth client id>'; NULL with auth off.
--
-- Rows written before this migration have NULL in all three: they stay readable (audit, MAGIC), and no
-- feedback can name an audited answer without an owner.
ALTER TABLE request_audit
    ADD COLUMN owner    text,
    ADD COLUMN end_user text,
    ADD COLUMN via      text;
ALTER TABLE feedback
    ADD COLUMN end_user text,
    ADD COLUMN via      text;
ALTER TABLE corrections
    ADD COLUMN owner    text,
    ADD COLUMN end_user text,
    ADD COLUMN via      text;
ALTER TABLE verified_examples
    ADD COLUMN end_user text,
    ADD COLUMN via      text;
ALTER TABLE conversations
    ADD COLUMN end_user text,
    ADD COLUMN via      text;

-- LLM tokens spent per owner and UTC day, upserted after each answer: llm.daily_token_budget_per_user is
-- checked against today's row before a question calls the LLM, on every replica alike. Days before
-- yesterday are deleted as rows for new days are written.
CREATE TABLE token_usage (
    owner      text NOT NULL,
    day        date NOT NULL,
    tokens     bigint NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, day)
);
CREATE INDEX token_usage_day ON token_usage (day);
