-- get_prompt: one prompt with its latest and production numbers (one round trip).
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref (name or pmt_ id)
-- Returns {"ok", {prompt fields, latest, production}} or {"no_prompt"}.
local pid = resolve_prompt(ARGV[1])
if not pid then
  return { "no_prompt" }
end
return { "ok", prompt_summary(pid) }
