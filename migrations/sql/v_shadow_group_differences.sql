-- attach --mode shadow (docs/attach.md): gangs on which podledger and the cluster disagree.
-- podledger's verdict is its last PodGroupScheduled / PodGroupUnschedulable; the cluster's is how
-- many of the group's pods its scheduler bound (PodBindingObserved).
CREATE VIEW v_shadow_group_differences AS
WITH verdict AS (
    SELECT DISTINCT ON (data->>'group') data->>'group' AS grp, type, position
    FROM events
    WHERE type IN ('PodGroupScheduled', 'PodGroupUnschedulable')
    ORDER BY data->>'group', position DESC
), observed AS (
    SELECT data->>'group' AS grp, count(DISTINCT data->>'pod') AS pods, max(position) AS position
    FROM events
    WHERE type = 'PodBindingObserved' AND data->>'group' IS NOT NULL
    GROUP BY 1
)
SELECT split_part(coalesce(v.grp, o.grp), '/', 1) AS namespace,
       split_part(coalesce(v.grp, o.grp), '/', 2) AS pod_group,
       CASE v.type WHEN 'PodGroupScheduled' THEN 'admitted' WHEN 'PodGroupUnschedulable' THEN 'held' END
           AS podledger,
       coalesce(o.pods, 0) AS cluster_bound_pods,
       CASE
           WHEN v.type = 'PodGroupUnschedulable' THEN 'podledger would have held it; the cluster bound pods'
           ELSE 'podledger would have admitted it; the cluster bound none'
       END AS difference,
       v.position AS podledger_position,
       o.position AS cluster_position
FROM verdict v
FULL JOIN observed o ON v.grp = o.grp
WHERE (v.type = 'PodGroupUnschedulable' AND o.pods > 0)
   OR (v.type = 'PodGroupScheduled' AND o.pods IS NULL
       AND EXISTS (SELECT 1 FROM events WHERE type = 'PodBindingObserved'));
