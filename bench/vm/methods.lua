-- a method-call-heavy object loop: an account with small methods, 3M iterations
local Account = {}
Account.__index = Account

function Account.new()
  return setmetatable({ balance = 0, ops = 0 }, Account)
end

function Account:deposit(v)
  self.balance = self.balance + v
  self.ops = self.ops + 1
end

function Account:withdraw(v)
  if v > self.balance then
    return false
  end
  self.balance = self.balance - v
  self.ops = self.ops + 1
  return true
end

function Account:total()
  return self.balance
end

local a = Account.new()
local refused = 0
for i = 0, 3000000 - 1 do
  a:deposit(i % 100)
  if not a:withdraw(i % 37 + a:total() % 13) then
    refused = refused + 1
  end
end
print(a:total() .. " " .. a.ops .. " " .. refused)
