-- Guideline versions per database (issue 14, item 5).
--
-- A version belongs to one database, or to none (NULL: global). The guideline in force for database X is
-- X's active version, else the global active version, else the shipped guideline file. Versions stored
-- before this migration were global, and stay so. At most one version is active per scope.
ALTER TABLE guideline_versions ADD COLUMN database text CHECK (database <> '');
DROP INDEX guideline_versions_one_active;
CREATE UNIQUE INDEX guideline_versions_one_active_global ON guideline_versions ((true))
    WHERE status = 'active' AND database IS NULL;
CREATE UNIQUE INDEX guideline_versions_one_active_per_database ON guideline_versions (database)
    WHERE status = 'active' AND database IS NOT NULL;

-- Which scope a regeneration run worked on (NULL: every database's corrections, a global candidate).
ALTER TABLE regeneration_runs ADD COLUMN database text;

-- Every change of the guideline in force, so that "who went back to the shipped file, when" is answered
-- by the store: activate (a version becomes active), rollback (an earlier version again) and reset (no
-- stored version in the scope: the shipped file, or the global version for a database, is in force).
CREATE TABLE guideline_events (
    id         bigserial PRIMARY KEY,
    database   text,                                                  -- NULL: the global scope
    action     text NOT NULL CHECK (action IN ('activate', 'rollback', 'reset')),
    version    integer REFERENCES guideline_versions (version),       -- active after the event (NULL: none)
    previous   integer REFERENCES guideline_versions (version),       -- active before it (NULL: none)
    actor      text NOT NULL DEFAULT 'unknown',
    detail     jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX guideline_events_scope ON guideline_events (database, id);
