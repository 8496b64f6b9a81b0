-- Thrash: the same pod preempted at least twice within 10 minutes.
CREATE OR REPLACE VIEW v_thrash AS
SELECT victim AS pod, max(n) AS preemptions_in_10m, min(at) AS first_at, max(at) AS last_at
FROM (
    SELECT victim, at,
           count(*) OVER (PARTITION BY victim ORDER BY at RANGE BETWEEN interval '10 minutes' PRECEDING AND CURRENT ROW) AS n
    FROM v_preemptions
) x
WHERE n >= 2
GROUP BY victim;
