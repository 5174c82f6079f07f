-- delete_webhook: remove a webhook and its delivery history. Its queued messages stay
-- until claimed, and claim_deliveries.lua drops them then.
-- KEYS[1]  ps:{<org>}:webhooks        hash: webhook_id -> the webhook's JSON
-- KEYS[2]  ps:{<org>}:webhook-ids     list: webhook ids, oldest first
-- KEYS[3]  ps:{<org>}:webhook-since   hash: webhook_id -> the newest event id at creation
-- KEYS[4]  ps:{<org>}:wh:log:<id>     list: the webhook's delivery attempts, newest first
-- ARGV[1]  webhook_id
-- Returns 1, or 0 when there is no such webhook.
if redis.call("HDEL", KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call("LREM", KEYS[2], 0, ARGV[1])
redis.call("HDEL", KEYS[3], ARGV[1])
redis.call("DEL", KEYS[4])
return 1
