-- attach --mode shadow (docs/attach.md): gangs on which podledger and the cluster disagree.
-- podledger's verdict is its last PodGroupScheduled / PodGroupUnschedulable (for a
-- CompositePodGroup tree, on its root); the cluster's is how many of the group's pods its
-- scheduler bound (PodBindingObserved). A pod names its leaf PodGroup: it counts for that leaf
-- and for every CompositePodGroup above it (spec.parentCompositePodGroupName, as mirrored).
CREATE OR REPLACE VIEW v_shadow_group_differences AS
WITH RECURSIVE verdict AS (
    SELECT DISTINCT ON (data->>'group') data->>'group' AS grp, type, position
    FROM events
    WHERE type IN ('PodGroupScheduled', 'PodGroupUnschedulable')
    ORDER BY data->>'group', position DESC
), leaves AS (
    SELECT DISTINCT data->>'group' AS grp
    FROM events
    WHERE type = 'PodBindingObserved' AND data->>'group' IS NOT NULL
), ancestry (leaf, grp, kind, depth) AS (
    SELECT grp, grp, 'PodGroup', 0 FROM leaves
    UNION
    SELECT a.leaf, o.namespace || '/' || (o.object->'spec'->>'parentCompositePodGroupName'),
           'CompositePodGroup', a.depth + 1
    FROM ancestry a
    JOIN objects o ON o.kind = a.kind AND o.namespace = split_part(a.grp, '/', 1)
        AND o.name = split_part(a.grp, '/', 2)
    WHERE o.object->'spec'->>'parentCompositePodGroupName' IS NOT NULL AND a.depth < 16
), observed AS (
    SELECT a.grp, count(DISTINCT e.data->>'pod') AS pods, max(e.position) AS position
    FROM events e
    JOIN ancestry a ON a.leaf = e.data->>'group'
    WHERE e.type = 'PodBindingObserved' AND e.data->>'group' IS NOT NULL
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
