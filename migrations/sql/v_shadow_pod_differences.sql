-- attach --mode shadow (docs/attach.md): per pod, where podledger's own scheduler bound it (its
-- last PodBound decision, the one with a cycle in its meta) and where the cluster's scheduler
-- did (its last PodBindingObserved), for every pod on which they differ.
CREATE VIEW v_shadow_pod_differences AS
WITH decided AS (
    SELECT DISTINCT ON (data->>'pod') data->>'pod' AS pod, data->>'node' AS node, position
    FROM events
    WHERE type = 'PodBound' AND meta ? 'cycle'
    ORDER BY data->>'pod', position DESC
), observed AS (
    SELECT DISTINCT ON (data->>'pod') data->>'pod' AS pod, data->>'node' AS node,
           data->>'scheduler' AS scheduler, data->>'cluster' AS cluster, data->>'group' AS pod_group, position
    FROM events
    WHERE type = 'PodBindingObserved'
    ORDER BY data->>'pod', position DESC
)
SELECT split_part(coalesce(d.pod, o.pod), '/', 1) AS namespace,
       split_part(coalesce(d.pod, o.pod), '/', 2) AS pod,
       o.pod_group,
       d.node AS podledger_node,
       o.node AS cluster_node,
       o.scheduler AS cluster_scheduler,
       o.cluster,
       CASE
           WHEN d.node IS NULL THEN 'bound by the cluster only'
           WHEN o.node IS NULL THEN 'bound by podledger only'
           ELSE 'bound elsewhere'
       END AS difference,
       d.position AS podledger_position,
       o.position AS cluster_position
FROM decided d
FULL JOIN observed o ON d.pod = o.pod
WHERE d.node IS DISTINCT FROM o.node
  -- a pod only podledger bound counts on a shadow ledger only (one holding observations)
  AND (o.pod IS NOT NULL OR EXISTS (SELECT 1 FROM events WHERE type = 'PodBindingObserved'));
