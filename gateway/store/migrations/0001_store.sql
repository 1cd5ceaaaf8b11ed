-- The gateway's own state: request audit, corrections, user feedback, verified examples, guideline
-- versions and regeneration runs. Applied once, in one transaction, by gateway.store.migrate.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- One row per answered question (POST /v1/ask); feedback refers to it by request id.
CREATE TABLE request_audit (
    request_id        text PRIMARY KEY,
    database          text NOT NULL,
    question          text NOT NULL,
    evidence          text NOT NULL DEFAULT '',
    attempts          jsonb NOT NULL DEFAULT '[]',
    final_sql         text,
    status            text NOT NULL,
    timings           jsonb NOT NULL DEFAULT '{}',
    guideline_version text,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX request_audit_created ON request_audit (created_at);

-- A wrong SQL and the SQL that fixed it. MAGIC consumes unprocessed ones; `outcome` says what it made
-- of each: success, exhausted (no successful revision in max_iterations), holdout (kept apart for the
-- activation gate) or unusable (the corrected SQL no longer runs).
CREATE TABLE corrections (
    id            bigserial PRIMARY KEY,
    request_id    text,
    database      text NOT NULL,
    question      text NOT NULL,
    evidence      text NOT NULL DEFAULT '',
    incorrect_sql text NOT NULL,
    corrected_sql text NOT NULL,
    source        text NOT NULL CHECK (source IN ('reflection', 'user', 'dba')),
    verified      boolean NOT NULL DEFAULT false,
    processed_at  timestamptz,
    outcome       text CHECK (outcome IN ('success', 'exhausted', 'holdout', 'unusable')),
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX corrections_pending ON corrections (id) WHERE processed_at IS NULL;
CREATE INDEX corrections_holdout ON corrections (id) WHERE outcome = 'holdout';
CREATE INDEX corrections_request ON corrections (request_id);

-- Verified question/SQL pairs: few-shot examples and exact-match answers.
CREATE TABLE verified_examples (
    id           bigserial PRIMARY KEY,
    database     text NOT NULL,
    question     text NOT NULL,
    question_key text NOT NULL,
    sql          text NOT NULL,
    source       text NOT NULL CHECK (source IN ('feedback', 'correction', 'dba')),
    request_id   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (database, question_key, sql)
);
CREATE INDEX verified_examples_trgm ON verified_examples USING gist (question gist_trgm_ops);

-- A client's verdict on one answer; one per (request, client), which makes POST /v1/feedback idempotent.
CREATE TABLE feedback (
    id            bigserial PRIMARY KEY,
    request_id    text NOT NULL REFERENCES request_audit (request_id),
    client_id     text NOT NULL,
    verdict       text NOT NULL CHECK (verdict IN ('correct', 'incorrect')),
    corrected_sql text,
    note          text,
    correction_id bigint REFERENCES corrections (id),
    example_id    bigint REFERENCES verified_examples (id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (request_id, client_id)
);

CREATE TABLE guideline_versions (
    version      serial PRIMARY KEY,
    parent       integer REFERENCES guideline_versions (version),
    text         text NOT NULL,
    status       text NOT NULL CHECK (status IN ('candidate', 'active', 'retired')),
    provenance   jsonb NOT NULL DEFAULT '{}',
    evaluation   jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    activated_at timestamptz
);
-- At most one active version, whatever two replicas do at the same moment.
CREATE UNIQUE INDEX guideline_versions_one_active ON guideline_versions ((true)) WHERE status = 'active';

CREATE TABLE regeneration_runs (
    id                    bigserial PRIMARY KEY,
    trigger               text NOT NULL,
    started_at            timestamptz NOT NULL DEFAULT now(),
    finished_at           timestamptz,
    outcome               text NOT NULL DEFAULT 'running',
    corrections_processed integer NOT NULL DEFAULT 0,
    feedbacks_kept        integer NOT NULL DEFAULT 0,
    guideline_updates     integer NOT NULL DEFAULT 0,
    llm_calls             integer NOT NULL DEFAULT 0,
    version               integer REFERENCES guideline_versions (version),
    error                 text
);

-- Successful feedbacks the manager keeps; a batch of them updates the guideline, then `used_in_version`
-- says which version they went into. Leftovers (less than a batch) wait for the next run.
CREATE TABLE magic_feedbacks (
    id              bigserial PRIMARY KEY,
    correction_id   bigint NOT NULL UNIQUE REFERENCES corrections (id),
    run_id          bigint REFERENCES regeneration_runs (id),
    feedback        text NOT NULL,
    revised_sql     text NOT NULL,
    iterations      integer NOT NULL,
    used_in_version integer REFERENCES guideline_versions (version),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX magic_feedbacks_unused ON magic_feedbacks (id) WHERE used_in_version IS NULL;
