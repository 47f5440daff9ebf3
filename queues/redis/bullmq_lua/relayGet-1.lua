--[[
  Read-only views of a relay namespace, for dashboards. Lists are paginated
  like the queue getters: "start" and "end" are inclusive positions, and an
  "end" of -1 means "to the end".
  Input:
    KEYS[1] nodes key ({base}:nodes)
    ARGV[1] base key
    ARGV[2] view: counts | used | nodes | subscriptions | patterns | retained
    ARGV[3] start
    ARGV[4] end
    ARGV[5] subscriptions filter: "" (all) | node | pattern
    ARGV[6] filter value (node id or pattern)
  Output (one array per item):
    counts         { nodes, subscriptions, patterns, retained }
    used           1 if the namespace has a live node or retained message,
                   else 0 (a single value, not an array)
    nodes          { id, registered at, lease until, info, last heartbeat,
                     backlog, dropped, subscriptions } (ordered by registration;
                     an expired node not swept yet has an empty info)
    subscriptions  { node id, endpoint id, pattern }
    patterns       { pattern, subscriptions }
    retained       { topic, expires at, mid, ts, data } (ordered by expiry)
]]
local rcall = redis.call
--[[
  Relay subscription index and node cleanup.
  All subscriptions of a namespace live in one sorted set, {base}:subs, with
  every member at score 0 so members are ordered (and paginated) by value.
  Each subscription is stored under two views, and each subscribed pattern
  under two more:
    n|{node}|{endpoint}|{pattern}   subscriptions of a node or endpoint
    p|{pattern}|{node}|{endpoint}   subscribers of a pattern
    t|{pattern}                     patterns with at least one subscriber
    w|{root}|{pattern}              wildcard patterns by literal root ("*"
                                    for patterns starting with a wildcard)
  "|" can't appear in ids or patterns, so a prefix range selects one view.
]]
--[[
  Relay topic grammar, shared by every relay script.
  Topics are dot-separated keypaths, e.g. "queues.emails.jobs.42.progress".
    - Segments match [A-Za-z0-9_:%-]+ (other characters must be
      percent-encoded by the caller).
    - Max 512 characters and 16 segments.
  Patterns may also contain wildcards:
    - "*" matches exactly one segment.
    - ">" matches one or more trailing segments (last segment only).
  Node and endpoint ids match [A-Za-z0-9_-]{1,64}.
]]
local function splitRelayTopic(value)
  local segments = {}
  local start = 1
  while true do
    local dot = string.find(value, ".", start, true)
    if not dot then
      segments[#segments + 1] = string.sub(value, start)
      return segments
    end
    segments[#segments + 1] = string.sub(value, start, dot - 1)
    start = dot + 1
  end
end
-- Returns the segments of a valid topic (or pattern), or nil if invalid.
local function parseRelayTopic(value, allowWildcards)
  if type(value) ~= "string" or #value == 0 or #value > 512 then
    return nil
  end
  local segments = splitRelayTopic(value)
  local count = #segments
  if count > 16 then
    return nil
  end
  for i = 1, count do
    local segment = segments[i]
    if allowWildcards and segment == "*" then
      -- valid
    elseif allowWildcards and segment == ">" then
      if i ~= count then
        return nil
      end
    elseif not string.match(segment, "^[%w_:%%%-]+$") then
      return nil
    end
  end
  return segments
end
local function matchRelayTopic(patternSegments, topicSegments)
  local topicCount = #topicSegments
  for i = 1, #patternSegments do
    local segment = patternSegments[i]
    if segment == ">" then
      return topicCount >= i
    end
    if i > topicCount then
      return false
    end
    if segment ~= "*" and segment ~= topicSegments[i] then
      return false
    end
  end
  return #patternSegments == topicCount
end
-- Index bucket of a pattern: its literal root, or "*" for wildcard roots.
local function getRelayPatternRoot(patternSegments)
  local root = patternSegments[1]
  if root == "*" or root == ">" then
    return "*"
  end
  return root
end
local function hasRelayWildcards(segments)
  for i = 1, #segments do
    if segments[i] == "*" or segments[i] == ">" then
      return true
    end
  end
  return false
end
local function isValidRelayId(id)
  return type(id) == "string" and #id > 0 and #id <= 64 and
    string.match(id, "^[%w_%-]+$") ~= nil
end
-- Lexicographic range (for ZRANGEBYLEX/ZLEXCOUNT) of the members starting
-- with "prefix".
local relayRangeEnd = string.char(255)
local function relayRange(prefix)
  return "[" .. prefix, "[" .. prefix .. relayRangeEnd
end
local function relayHasMember(key, prefix)
  local min, max = relayRange(prefix)
  return #rcall("ZRANGEBYLEX", key, min, max, "LIMIT", 0, 1) > 0
end
--[[
  Removes one subscription, and the pattern's views once it has no
  subscribers left.
  Returns 1 if the subscription existed, 0 otherwise.
]]
local function removeRelaySubscription(baseKey, nodeId, endpointId, pattern)
  local subsKey = baseKey .. ":subs"
  local removed = rcall("ZREM", subsKey,
    "n|" .. nodeId .. "|" .. endpointId .. "|" .. pattern,
    "p|" .. pattern .. "|" .. nodeId .. "|" .. endpointId)
  if not relayHasMember(subsKey, "p|" .. pattern .. "|") then
    rcall("ZREM", subsKey, "t|" .. pattern)
    local segments = parseRelayTopic(pattern, true)
    if segments and hasRelayWildcards(segments) then
      rcall("ZREM", subsKey,
        "w|" .. getRelayPatternRoot(segments) .. "|" .. pattern)
    end
  end
  return removed > 0 and 1 or 0
end
-- Splits a "{endpoint}|{pattern}" suffix of an n| member.
local function splitRelayEndpointPattern(value)
  local bar = string.find(value, "|", 1, true)
  return string.sub(value, 1, bar - 1), string.sub(value, bar + 1)
end
-- Returns the number of removed subscriptions.
local function removeRelayEndpoint(baseKey, nodeId, endpointId)
  local prefix = "n|" .. nodeId .. "|" .. endpointId .. "|"
  local min, max = relayRange(prefix)
  local members = rcall("ZRANGEBYLEX", baseKey .. ":subs", min, max)
  for i = 1, #members do
    removeRelaySubscription(baseKey, nodeId, endpointId,
      string.sub(members[i], #prefix + 1))
  end
  return #members
end
--[[
  Makes a node unroutable immediately: its inbox and record are freed, and
  its subscriptions are queued in {base}:cleanup for bounded pruning.
]]
local function removeRelayNode(baseKey, nodesKey, nodeId, now)
  local removed = rcall("ZREM", nodesKey, nodeId)
  rcall("ZREM", baseKey .. ":started", nodeId)
  rcall("UNLINK", baseKey .. ":" .. nodeId .. ":inbox", baseKey .. ":" .. nodeId .. ":node")
  if relayHasMember(baseKey .. ":subs", "n|" .. nodeId .. "|") then
    rcall("ZADD", baseKey .. ":cleanup", now, nodeId)
  end
  return removed
end
-- Prunes up to "budget" subscriptions of a removed node; returns the budget
-- left (always consuming at least 1, so callers make progress).
local function pruneRelayNode(baseKey, nodeId, budget)
  local prefix = "n|" .. nodeId .. "|"
  local min, max = relayRange(prefix)
  local members = rcall("ZRANGEBYLEX", baseKey .. ":subs", min, max,
    "LIMIT", 0, budget)
  for i = 1, #members do
    local endpointId, pattern =
      splitRelayEndpointPattern(string.sub(members[i], #prefix + 1))
    removeRelaySubscription(baseKey, nodeId, endpointId, pattern)
  end
  if #members < budget then
    rcall("ZREM", baseKey .. ":cleanup", nodeId)
  end
  return budget - math.max(1, #members)
end
-- Prunes removed nodes, oldest first, sharing one work budget.
local function pruneRelayNodes(baseKey, budget)
  while budget > 0 do
    local next = rcall("ZRANGE", baseKey .. ":cleanup", 0, 0)
    if #next == 0 then
      return
    end
    budget = pruneRelayNode(baseKey, next[1], budget)
  end
end
--[[
  Time helpers shared by the relay scripts. Scripts use the server clock, so
  leases and expiries don't depend on the clocks of the nodes.
]]
local function getRelayTime()
  local time = rcall("TIME")
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
-- Highest score of a sorted set (0 if empty): the latest lease or expiry.
local function getRelayLastScore(key)
  local last = rcall("ZRANGE", key, -1, -1, "WITHSCORES")
  return last[2] and tonumber(last[2]) or 0
end
local baseKey = ARGV[1]
local view = ARGV[2]
local first = tonumber(ARGV[3])
local last = tonumber(ARGV[4])
local subsKey = baseKey .. ":subs"
local retainedKey = baseKey .. ":retained"
-- LIMIT arguments for the inclusive [first, last] window.
local function window()
  if last < 0 then
    return first, -1
  end
  return first, math.max(0, last - first + 1)
end
local function lexPage(prefix)
  local offset, count = window()
  if count == 0 then
    return {}
  end
  local min, max = relayRange(prefix)
  local members = rcall("ZRANGEBYLEX", subsKey, min, max, "LIMIT", offset, count)
  for i = 1, #members do
    members[i] = string.sub(members[i], #prefix + 1)
  end
  return members
end
local function lexCount(prefix)
  local min, max = relayRange(prefix)
  return rcall("ZLEXCOUNT", subsKey, min, max)
end
if view == "counts" then
  return { rcall("ZCARD", KEYS[1]), lexCount("n|"), lexCount("t|"),
    rcall("ZCOUNT", retainedKey, getRelayTime() + 1, "+inf") }
end
if view == "used" then
  local after = getRelayTime() + 1
  if rcall("ZCOUNT", KEYS[1], after, "+inf") > 0 or
    rcall("ZCOUNT", retainedKey, after, "+inf") > 0 then
    return 1
  end
  return 0
end
local rows = {}
if view == "nodes" then
  local nodes = rcall("ZRANGE", baseKey .. ":started", first, last, "WITHSCORES")
  for i = 1, #nodes, 2 do
    local nodeId = nodes[i]
    local record = rcall("HMGET", baseKey .. ":" .. nodeId .. ":node",
      "info", "hb", "backlog", "dropped")
    rows[#rows + 1] = { nodeId, nodes[i + 1],
      rcall("ZSCORE", KEYS[1], nodeId) or "", record[1] or "", record[2] or "",
      record[3] or "0", record[4] or "0", lexCount("n|" .. nodeId .. "|") }
  end
elseif view == "subscriptions" then
  local filter = ARGV[5]
  local value = ARGV[6]
  if filter == "node" then
    local members = lexPage("n|" .. value .. "|")
    for i = 1, #members do
      local endpointId, pattern = splitRelayEndpointPattern(members[i])
      rows[#rows + 1] = { value, endpointId, pattern }
    end
  elseif filter == "pattern" then
    local members = lexPage("p|" .. value .. "|")
    for i = 1, #members do
      local nodeId, endpointId = splitRelayEndpointPattern(members[i])
      rows[#rows + 1] = { nodeId, endpointId, value }
    end
  else
    local members = lexPage("n|")
    for i = 1, #members do
      local nodeId, rest = splitRelayEndpointPattern(members[i])
      local endpointId, pattern = splitRelayEndpointPattern(rest)
      rows[#rows + 1] = { nodeId, endpointId, pattern }
    end
  end
elseif view == "patterns" then
  local patterns = lexPage("t|")
  for i = 1, #patterns do
    rows[#rows + 1] = { patterns[i], lexCount("p|" .. patterns[i] .. "|") }
  end
elseif view == "retained" then
  local offset, count = window()
  if count ~= 0 then
    local topics = rcall("ZRANGEBYSCORE", retainedKey, getRelayTime() + 1,
      "+inf", "WITHSCORES", "LIMIT", offset, count)
    for i = 1, #topics, 2 do
      local value = rcall("HMGET", baseKey .. ":" .. topics[i] .. ":ret", "m", "ts", "d")
      if value[1] then
        rows[#rows + 1] = { topics[i], topics[i + 1], value[1], value[2], value[3] }
      end
    end
  end
end
return rows
