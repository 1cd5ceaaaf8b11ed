-- What one client teaches reaches others only after review (issue 9, item 7).
--
-- A question/SQL pair sent as feedback is *proposed*; a dba or admin key approves or rejects it. Only
-- approved pairs are used as few-shot examples or exact answers. Pairs stored before this migration were
-- never reviewed: those a DBA added (source 'dba') stay usable, the others wait for review.
ALTER TABLE verified_examples
    ADD COLUMN status      text NOT NULL DEFAULT 'proposed'
                           CHECK (status IN ('proposed', 'approved', 'rejected')),
    ADD COLUMN proposed_by text NOT NULL DEFAULT 'unknown',
    ADD COLUMN reviewed_by text,
    ADD COLUMN reviewed_at timestamptz,
    ADD COLUMN review_note text;
UPDATE verified_examples SET status = 'approved', reviewed_by = 'migration', reviewed_at = now()
WHERE source = 'dba';
CREATE INDEX verified_examples_proposed ON verified_examples (id) WHERE status = 'proposed';

-- A correction counts as reviewed once a dba or admin stood behind it (it came from one, or the example
-- with the same request and corrected SQL was approved). A candidate guideline built from unreviewed
-- corrections is never activated automatically (gateway.magic.run). A rejected example's correction is
-- taken out of MAGIC's queue with outcome 'rejected'.
ALTER TABLE corrections
    ADD COLUMN reviewed_by text,
    ADD COLUMN reviewed_at timestamptz;
UPDATE corrections SET reviewed_by = 'migration', reviewed_at = now() WHERE source = 'dba';
ALTER TABLE corrections DROP CONSTRAINT corrections_outcome_check;
ALTER TABLE corrections ADD CONSTRAINT corrections_outcome_check
    CHECK (outcome IN ('success', 'exhausted', 'holdout', 'unusable', 'rejected'));
