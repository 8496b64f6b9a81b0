-- Every preemption: victim, preemptor, rule, priorities, disruption mode, unit, PDB outcome.
CREATE OR REPLACE VIEW v_preemptions AS
SELECT e.position, e.effective_at AS at,
       e.data->>'victim' AS victim, e.data->>'preemptor' AS preemptor,
       e.data->>'preemptor_kind' AS preemptor_kind, e.data->>'rule' AS rule,
       (e.data->>'victim_priority')::int AS victim_priority,
       (e.data->>'preemptor_priority')::int AS preemptor_priority,
       e.data->>'disruption_mode' AS disruption_mode, e.data->>'unit' AS unit,
       (e.data->>'pdb_violation')::boolean AS pdb_violation, e.data->>'node' AS node,
       e.meta->>'cycle' AS cycle
FROM events e
WHERE e.type = 'PodPreempted';
