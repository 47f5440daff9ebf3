--[[
  Subscribes a relay endpoint to a topic pattern. For an exact topic (no
  wildcards) the retained message, if any, is returned atomically with the
  subscription, so no message can fall between the two.
  Input:
    KEYS[1] nodes key ({base}:nodes)
    ARGV[1] base key
    ARGV[2] node id
    ARGV[3] endpoint id
    ARGV[4] pattern
  Output:
    { added (1|0), retained mid, retained ts, retained data }
      (the retained fields are "" when there is no retained message)
   -2 - Invalid pattern.
   -3 - Node not registered.
   -5 - Invalid id.
]]
local rcall = redis.call
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
local baseKey = ARGV[1]
local nodeId = ARGV[2]
local endpointId = ARGV[3]
local pattern = ARGV[4]
if not isValidRelayId(nodeId) or not isValidRelayId(endpointId) then
  return -5
end
local segments = parseRelayTopic(pattern, true)
if not segments then
  return -2
end
if not rcall("ZSCORE", KEYS[1], nodeId) or
  rcall("EXISTS", baseKey .. ":" .. nodeId .. ":node") == 0 then
  return -3
end
-- See includes/relayIndex.lua for the views of the subscription index.
local subsKey = baseKey .. ":subs"
local hasWildcards = hasRelayWildcards(segments)
local added = rcall("ZADD", subsKey, 0,
  "n|" .. nodeId .. "|" .. endpointId .. "|" .. pattern)
if added == 1 then
  rcall("ZADD", subsKey, 0, "p|" .. pattern .. "|" .. nodeId .. "|" .. endpointId,
    0, "t|" .. pattern)
  -- Only wildcard patterns are indexed: publishes find exact topics directly.
  if hasWildcards then
    rcall("ZADD", subsKey, 0, "w|" .. getRelayPatternRoot(segments) .. "|" .. pattern)
  end
  -- A new index expires with the namespace's routing keys.
  if rcall("PTTL", subsKey) == -1 then
    rcall("PEXPIRE", subsKey, math.max(1, rcall("PTTL", KEYS[1])))
  end
end
if not hasWildcards then
  local retained = rcall("HMGET", baseKey .. ":" .. pattern .. ":ret", "m", "ts", "d")
  if retained[1] then
    return { added, retained[1], retained[2], retained[3] }
  end
end
return { added, "", "", "" }
