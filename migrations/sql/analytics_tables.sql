-- Windowed analytics (issue 34, migration 0025; ledger/projections/analytics.py maintains both
-- tables in the append's transaction).
-- analytics_hourly: one row per (metric, hour, k1, k2, k3). Count metrics use n; level metrics
-- use delta (sum of the level's changes in the hour) and tail (sum of change x seconds from it
-- to the hour's end: the level's integral over the hour is level_at_start * 3600 + tail).
CREATE TABLE analytics_hourly (
    metric text             NOT NULL,
    hour   timestamptz      NOT NULL,
    k1     text             NOT NULL DEFAULT '',
    k2     text             NOT NULL DEFAULT '',
    k3     text             NOT NULL DEFAULT '',
    n      bigint           NOT NULL DEFAULT 0,
    delta  double precision NOT NULL DEFAULT 0,
    tail   double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (metric, hour, k1, k2, k3)
);
-- one row per PodGroup's first start and per plain pod's bind after waiting
CREATE TABLE analytics_waits (
    position     bigint           NOT NULL PRIMARY KEY,
    at           timestamptz      NOT NULL,
    kind         text             NOT NULL,
    namespace    text             NOT NULL,
    name         text             NOT NULL,
    priority     int              NOT NULL,
    wait_seconds double precision NOT NULL
);
CREATE INDEX analytics_waits_at_idx ON analytics_waits (at);
CREATE INDEX analytics_waits_namespace_at_idx ON analytics_waits (namespace, at);
-- the raw edges of a window: the counted events by time
CREATE INDEX events_analytics_at_idx ON events (effective_at)
    WHERE type IN ('PodGroupUnschedulable', 'PodGroupRetried', 'PodUnschedulable', 'PodRetried', 'PodPreempted');
GRANT SELECT, INSERT, UPDATE, DELETE ON analytics_hourly, analytics_waits TO podledger_app;
