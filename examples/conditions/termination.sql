-- Termination of a distributed computation (cutctl watch, Conditions in
-- the README).  The convention: each node's state is JSON with
-- "idle": true when it has nothing left to do (examples/diffuse.c reports
-- {"idle": B, "pending": N, "worked": W}).  It holds when every node of
-- the snapshot reported idle and no message was in flight on any channel:
-- then nothing can wake any node again, so the computation has ended
-- (a stable property: once true of a consistent cut, true from then on).
-- A state that is not JSON, or has no "idle", counts as busy.
--
-- :snapshot is the snapshot's id.  To try it in the sqlite3 shell:
--   .parameter set :snapshot "'p0:1796116051122'"
--   .read examples/conditions/termination.sql
SELECT busy = 0 AND nodes > 0 AND in_flight = 0 AS terminated,
       nodes, busy, in_flight
  FROM (SELECT
          (SELECT count(*) FROM recorded_states
            WHERE snapshot_id = :snapshot) AS nodes,
          (SELECT count(*) FROM recorded_states
            WHERE snapshot_id = :snapshot
              AND coalesce(CASE WHEN is_json
                    THEN json_extract(state, '$.idle') END, 0) IS NOT 1)
            AS busy,
          (SELECT count(*) FROM in_transit
            WHERE snapshot_id = :snapshot) AS in_flight);
