-- Trusted answers (issue 29): a DBA promotes a verified example to a template, a parameterized SQL whose
-- parameters are bound to columns. A question that matches one of its example questions is answered by it
-- without the LLM, labelled `trusted`.
--
-- name:       how clients and the console name it (unique across databases: /v1/templates/{name}/run).
-- parameters: [{"name", "column" ("table.column"), "type", "default"}]; `$1` in `sql` is the first.
-- questions:  example questions, each with `{name}` slots for the parameters.
-- uses:       answers given by the template (asked or run), counted after each one.
CREATE TABLE templates (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    database     text NOT NULL,
    description  text NOT NULL DEFAULT '',
    sql          text NOT NULL,
    parameters   jsonb NOT NULL DEFAULT '[]',
    questions    jsonb NOT NULL DEFAULT '[]',
    example_id   bigint REFERENCES verified_examples (id) ON DELETE SET NULL,
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    uses         bigint NOT NULL DEFAULT 0,
    last_used_at timestamptz
);
CREATE INDEX templates_database ON templates (database);
