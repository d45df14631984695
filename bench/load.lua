-- wrk script: replays MCP tool calls (JSON-RPC over streamable HTTP) on one open session.
-- Usage: wrk ... -s bench/load.lua URL -- SESSION_ID BODIES_FILE PROTOCOL_VERSION
-- BODIES_FILE holds one JSON-RPC request per line with "@ID@" wherever a per-request unique
-- token goes (the request id, which the server routes each response by; a claim's aspect). A response is an
-- error unless it is HTTP 200 with a JSON-RPC result that is not a tool error.

local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  parts = {}
  for line in io.lines(args[2]) do
    local segments, start = {}, 1
    while true do
      local at = line:find("@ID@", start, true)
      if not at then break end
      table.insert(segments, line:sub(start, at - 1))
      start = at + 4
    end
    table.insert(segments, line:sub(start))
    table.insert(parts, segments)
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["mcp-session-id"] = args[1]
  wrk.headers["mcp-protocol-version"] = args[3]
  counter, responses, errors, sample = 0, 0, 0, nil
end

function request()
  counter = counter + 1
  local segments = parts[(counter - 1) % #parts + 1]
  return wrk.format(nil, nil, nil, table.concat(segments, tid .. "-" .. counter))
end

function response(status, headers, body)
  responses = responses + 1
  if status ~= 200 or not body:find('"result"', 1, true) or body:find('"isError":true', 1, true) then
    errors = errors + 1
    if sample == nil then sample = status .. " " .. body:sub(1, 300) end
  end
end

function done(summary, latency, requests)
  local total, failed = 0, 0
  for _, thread in ipairs(threads) do
    total = total + thread:get("responses")
    failed = failed + thread:get("errors")
    local s = thread:get("sample")
    if s then io.write("LITHOS_SAMPLE " .. s:gsub("\n", " ") .. "\n") end
  end
  io.write(string.format(
    "LITHOS_RESULT responses=%d errors=%d socket_errors=%d p50_us=%d p99_us=%d\n",
    total, failed,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
