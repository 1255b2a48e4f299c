-- Exercises the interpreter for the counts oracle: tables, closures,
-- metatables, string operations, coroutines, errors and the collector.
local t = {}
for i = 1, 3000 do t[i] = {id = i, name = string.format("item%05d", (i * 7919) % 3001)} end
table.sort(t, function(a, b) return a.name < b.name end)

local function counter()
  local n = 0
  return function(step) n = n + (step or 1); return n end
end
local c = counter()
for i = 1, 500 do c(i % 3) end

local Vec = {}
Vec.__index = Vec
Vec.__add = function(a, b) return setmetatable({x = a.x + b.x, y = a.y + b.y}, Vec) end
Vec.__tostring = function(v) return "(" .. v.x .. "," .. v.y .. ")" end
local sum = setmetatable({x = 0, y = 0}, Vec)
for i = 1, 400 do sum = sum + setmetatable({x = i, y = -i}, Vec) end

local words = {}
for i = 1, 800 do words[#words + 1] = string.rep("ab", i % 5) .. tostring(i) end
local s = table.concat(words, " ")
local digits = 0
for w in s:gmatch("%d+") do digits = digits + #w end
local replaced, n = s:gsub("ab", "X")

local gen = coroutine.wrap(function()
  for i = 1, 200 do coroutine.yield(i * i) end
end)
local squares = 0
for _ = 1, 200 do squares = squares + gen() end

local caught = 0
for i = 1, 50 do
  local ok = pcall(function() if i % 2 == 0 then error("even " .. i) end end)
  if not ok then caught = caught + 1 end
end

local weak = setmetatable({}, {__mode = "k"})
for i = 1, 300 do weak[{}] = i end
collectgarbage("collect")
local left = 0
for _ in pairs(weak) do left = left + 1 end

-- A longer stretch of the same kinds of calls, long enough (a few hundred
-- milliseconds) for cali-run to give the interpreter's hottest direct
-- call sites counters of their own while it runs.
local acc = 0
for round = 1, 40 do
  local u = {}
  for i = 1, 5000 do u[i] = c(round % 2) + #tostring(i * round) end
  for i = 1, #u, 7 do acc = (acc + u[i] * 31) % 1000003 end
end

print(t[1].name, t[#t].name, c(0), tostring(sum), digits, n, #replaced,
      squares, caught, left, s:upper():sub(1, 12), utf8.char(72, 228, 8364), acc)
