-- The reporting role may SELECT the views and nothing else (views run with their owner's
-- rights, so no grant on the underlying tables is needed).
GRANT USAGE ON SCHEMA public TO podledger_reporting;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM podledger_reporting;
GRANT SELECT ON v_group_wait_times, v_unschedulable_reasons, v_preemptions, v_pod_allocation_changes,
    v_node_utilization, v_quota_usage, v_thrash TO podledger_reporting;
-- The application (API, dashboard) reads them too.
GRANT SELECT ON v_group_wait_times, v_unschedulable_reasons, v_preemptions, v_pod_allocation_changes,
    v_node_utilization, v_quota_usage, v_thrash TO podledger_app;
