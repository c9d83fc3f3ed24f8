-- The token bank's conservation check (examples/tokenbank.c, demo.sh):
-- the balances every branch reported ({"balance": N}) plus the amounts in
-- flight ({"amount": k} on the channels) add up to the tokens the bank
-- started with, 44 in the demo (18 + 14 + 12).  On a consistent snapshot
-- it always holds; a snapshot where it does not shows a lost or
-- duplicated message.  Change 44 for other starting balances.
--
-- :snapshot is the snapshot's id.  To try it in the sqlite3 shell:
--   .parameter set :snapshot "'p0:1796116051122'"
--   .read examples/conditions/conservation.sql
SELECT total = 44 AS conserved, total, balances, in_flight
  FROM (SELECT balances + in_flight AS total, balances, in_flight
          FROM (SELECT
                  (SELECT coalesce(sum(CASE WHEN is_json
                            THEN json_extract(state, '$.balance') END), 0)
                     FROM recorded_states
                    WHERE snapshot_id = :snapshot) AS balances,
                  (SELECT coalesce(sum(CASE WHEN is_json
                            THEN json_extract(payload, '$.amount') END), 0)
                     FROM in_transit
                    WHERE snapshot_id = :snapshot) AS in_flight));
