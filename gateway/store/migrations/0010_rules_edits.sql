-- Rules edited from the console (PUT /v1/databases/{name}/rules/console): who changed which database's
-- console rule file, to what, and what it said before. The file itself is the rule; this is its audit trail.
CREATE TABLE rules_edits (
    id          bigserial PRIMARY KEY,
    database    text NOT NULL,
    actor       text NOT NULL,
    file        text NOT NULL,
    before      jsonb NOT NULL,
    after       jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rules_edits_database ON rules_edits (database, created_at);
