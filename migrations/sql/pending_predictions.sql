-- The predicted start of the pending PodGroups and plain pods (issue 34, migration 0031):
-- derived, rebuildable data, not facts (nothing here is an event; the log stays the one record).
-- api/services/pending_predictions.py fills it with the estimator explain uses
-- (api/services/predict.py, docs/prediction.md), from one snapshot of the ledger as of
-- as_of_position: the scheduler worker after it schedules (at most every
-- PODLEDGER_PREDICT_INTERVAL seconds, the first PODLEDGER_PREDICT_LIMIT entities in queue
-- order), `podledger predictions refresh` on demand. Every refresh replaces the whole table in
-- one transaction, so every row is as of the same position; emptied, it is refilled by the next.
-- Waits count from as_of (the time of the position's event); p50/p90 NULL: not within a year.
CREATE TABLE pending_predictions (
    kind             text             NOT NULL CHECK (kind IN ('PodGroup', 'Pod')),
    namespace        text             NOT NULL,
    name             text             NOT NULL,
    as_of_position   bigint           NOT NULL,
    as_of            timestamptz      NOT NULL,
    p50_seconds      double precision,
    p90_seconds      double precision,
    point_seconds    double precision,
    cases            int              NOT NULL,  -- completed lifetimes the survival curve rests on
    censored         int              NOT NULL,  -- similar pods still running
    holders          int              NOT NULL,  -- pods bound on the nodes it can use
    queue_ahead      int              NOT NULL,
    closest_domain   text,
    computed_at      timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, namespace, name)
);
-- The application login (the worker, the CLI) replaces the rows: SELECT, INSERT, DELETE (and
-- with DELETE the table lock a refresh takes); no UPDATE, no TRUNCATE, nothing on the log. The
-- reporting role reads it through v_pending_now only.
REVOKE ALL ON pending_predictions FROM PUBLIC, podledger_reporting;
GRANT SELECT, INSERT, DELETE ON pending_predictions TO podledger_app;
