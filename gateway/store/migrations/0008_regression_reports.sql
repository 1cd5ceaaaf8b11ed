-- Regression replays (issue 29): the verified set asked under what is in force and under a change, with what
-- was right before and is wrong now. One row per replay; a guideline candidate's replays are kept with the
-- version (guideline_version), others (eval, a rules or model change) have none. The report is JSON
-- (gateway.magic.replay.RegressionReport.as_dict); regressed and passed are copied out for listing.
CREATE TABLE regression_reports (
    id                bigserial PRIMARY KEY,
    guideline_version integer REFERENCES guideline_versions (version) ON DELETE CASCADE,
    database          text,
    subject           text NOT NULL,
    actor             text NOT NULL,
    regressed         integer NOT NULL,
    passed            boolean NOT NULL,
    report            jsonb NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX regression_reports_version ON regression_reports (guideline_version, id DESC);
