// The command table (see command_table.h). Arity, flags, key positions and
// ACL categories follow Redis 7's COMMAND INFO, so client libraries that read
// them (key routing, redis-cli hints) behave as with Redis.
#include "server/command_table.h"

#include <string>

#include "server/resp_parser.h"
#include "server/stats.h"

namespace kvcg::server {

namespace {

constexpr uint32_t W = kCmdWrite, R = kCmdReadonly, F = kCmdFast, NA = kCmdNoAuth, B = kCmdBarrier,
                   RMW = kCmdRmw, A = kCmdAdmin, L = kCmdLoading, S = kCmdStale;

std::vector<CommandSpec> Build() {
  using namespace cmd;
  std::vector<CommandSpec> t = {
      // name, arity, flags, first, last, step, group, since, summary, complexity, acl, subcommands, start, finish
      {"get", 2, R | F, 1, 1, 1, "string", "1.0.0", "Returns the string value of a key.", "O(1)",
       "@read @string @fast", "", Get, GetFinish},
      {"set", -3, W | RMW, 1, 1, 1, "string", "1.0.0",
       "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", "O(1)",
       "@write @string @slow", "", Set, SetFinish},
      {"setex", 4, W, 1, 1, 1, "string", "2.0.0",
       "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", "O(1)",
       "@write @string @slow", "", SetEx, SetExFinish},
      {"psetex", 4, W, 1, 1, 1, "string", "2.6.0",
       "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.",
       "O(1)", "@write @string @slow", "", SetEx, SetExFinish},
      {"getex", -2, W | F, 1, 1, 1, "string", "6.2.0",
       "Returns the string value of a key after setting its expiration time.", "O(1)", "@write @string @fast", "",
       GetEx, GetExFinish},
      {"setnx", 3, W | F | RMW, 1, 1, 1, "string", "1.0.0", "Set the string value of a key only when the key doesn't exist.",
       "O(1)", "@write @string @fast", "", SetNx, SetNxFinish},
      {"getset", 3, W | F, 1, 1, 1, "string", "1.0.0", "Returns the previous string value of a key after setting it to a new value.",
       "O(1)", "@write @string @fast", "", GetSet, GetSetFinish},
      {"getdel", 2, W | F, 1, 1, 1, "string", "6.2.0", "Returns the string value of a key after deleting the key.", "O(1)",
       "@write @string @fast", "", GetDel, GetDelFinish},
      {"mget", -2, R | F, 1, -1, 1, "string", "1.0.0", "Atomically returns the string values of one or more keys (elementwise in kvcg).",
       "O(N) where N is the number of keys to retrieve.", "@read @string @fast", "", MGet, MGetFinish},
      {"mset", -3, W, 1, -1, 2, "string", "1.0.1", "Creates or modifies the string values of one or more keys (elementwise in kvcg).",
       "O(N) where N is the number of keys to set.", "@write @string @slow", "", MSet, MSetFinish},
      {"del", -2, W, 1, -1, 1, "generic", "1.0.0", "Deletes one or more keys.", "O(N) where N is the number of keys that will be removed.",
       "@keyspace @write @slow", "", Del, DelFinish},
      {"unlink", -2, W | F, 1, -1, 1, "generic", "4.0.0", "Asynchronously deletes one or more keys.",
       "O(1) for each key removed regardless of its size.", "@keyspace @write @fast", "", Del, DelFinish},
      {"exists", -2, R | F, 1, -1, 1, "generic", "1.0.0", "Determines whether one or more keys exist.",
       "O(N) where N is the number of keys to check.", "@keyspace @read @fast", "", Exists, ExistsFinish},
      {"strlen", 2, R | F, 1, 1, 1, "string", "2.2.0", "Returns the length of a string value.", "O(1)",
       "@read @string @fast", "", StrLen, StrLenFinish},
      {"append", 3, W | F | RMW, 1, 1, 1, "string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist.",
       "O(1)", "@write @string @fast", "", Append, AppendFinish},
      {"incr", 2, W | F | RMW, 1, 1, 1, "string", "1.0.0", "Increments the integer value of a key by one.", "O(1)",
       "@write @string @fast", "", IncrBy, IncrByFinish},
      {"decr", 2, W | F | RMW, 1, 1, 1, "string", "1.0.0", "Decrements the integer value of a key by one.", "O(1)",
       "@write @string @fast", "", IncrBy, IncrByFinish},
      {"incrby", 3, W | F | RMW, 1, 1, 1, "string", "1.0.0", "Increments the integer value of a key by a number.", "O(1)",
       "@write @string @fast", "", IncrBy, IncrByFinish},
      {"decrby", 3, W | F | RMW, 1, 1, 1, "string", "1.0.0", "Decrements a number from the integer value of a key.", "O(1)",
       "@write @string @fast", "", IncrBy, IncrByFinish},
      {"incrbyfloat", 3, W | F | RMW, 1, 1, 1, "string", "2.6.0", "Increment the floating point value of a key by a number.",
       "O(1)", "@write @string @fast", "", IncrByFloat, IncrByFloatFinish},
      {"setrange", 4, W | RMW, 1, 1, 1, "string", "2.2.0",
       "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.",
       "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the "
       "amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
       "@write @string @slow", "", SetRange, SetRangeFinish},
      {"getrange", 4, R, 1, 1, 1, "string", "2.4.0", "Returns a substring of the string stored at a key.",
       "O(N) where N is the length of the returned string.", "@read @string @slow", "", GetRange, GetRangeFinish},
      {"substr", 4, R, 1, 1, 1, "string", "1.0.0", "Returns a substring from a string value (deprecated: GETRANGE).",
       "O(N) where N is the length of the returned string.", "@read @string @slow", "", GetRange, GetRangeFinish},
      {"msetnx", -3, W | RMW, 1, -1, 2, "string", "1.0.1",
       "Modifies the string values of one or more keys only when all keys don't exist (not atomic in kvcg: see docs).",
       "O(N) where N is the number of keys to set.", "@write @string @slow", "", MSetNx, MSetNxFinish},
      {"lcs", -3, R, 1, 2, 1, "string", "7.0.0", "Finds the longest common substring.",
       "O(N*M) where N and M are the lengths of s1 and s2, respectively", "@read @string @slow", "", Lcs, LcsFinish},
      {"setbit", 4, W | RMW, 1, 1, 1, "bitmap", "2.2.0",
       "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", "O(1)",
       "@write @bitmap @slow", "", SetBit, SetBitFinish},
      {"getbit", 3, R | F, 1, 1, 1, "bitmap", "2.2.0", "Returns a bit value by offset.", "O(1)", "@read @bitmap @fast",
       "", GetBit, GetBitFinish},
      {"bitcount", -2, R, 1, 1, 1, "bitmap", "2.6.0", "Counts the number of set bits (population counting) in a string.",
       "O(N)", "@read @bitmap @slow", "", BitCount, BitCountFinish},
      {"bitpos", -3, R, 1, 1, 1, "bitmap", "2.8.7", "Finds the first set (1) or clear (0) bit in a string.", "O(N)",
       "@read @bitmap @slow", "", BitPos, BitPosFinish},

      // keyspace (cmd_keyspace.cc)
      {"type", 2, R | F, 1, 1, 1, "generic", "1.0.0", "Determines the type of value stored at a key (string, list or set in kvcg).",
       "O(1)", "@keyspace @read @fast", "", Type, TypeFinish},
      {"touch", -2, R | F, 1, -1, 1, "generic", "3.2.1",
       "Returns the number of existing keys out of those specified (kvcg keeps no access times).",
       "O(N) where N is the number of keys that will be touched.", "@keyspace @read @fast", "", Exists, ExistsFinish},
      {"rename", 3, W | RMW, 1, 2, 1, "generic", "1.0.0",
       "Renames a key and overwrites the destination (not atomic across the two keys in kvcg).", "O(1)",
       "@keyspace @write @slow", "", Rename, RenameFinish},
      {"renamenx", 3, W | F | RMW, 1, 2, 1, "generic", "1.0.0",
       "Renames a key only when the target key name doesn't exist (not atomic across the two keys in kvcg).", "O(1)",
       "@keyspace @write @fast", "", Rename, RenameFinish},
      {"expire", -3, W | F | RMW, 1, 1, 1, "generic", "1.0.0", "Sets the expiration time of a key in seconds.", "O(1)",
       "@keyspace @write @fast", "", Expire, ExpireFinish},
      {"pexpire", -3, W | F | RMW, 1, 1, 1, "generic", "2.6.0", "Sets the expiration time of a key in milliseconds.",
       "O(1)", "@keyspace @write @fast", "", Expire, ExpireFinish},
      {"expireat", -3, W | F | RMW, 1, 1, 1, "generic", "1.2.0",
       "Sets the expiration time of a key to a Unix timestamp.", "O(1)", "@keyspace @write @fast", "", Expire,
       ExpireFinish},
      {"pexpireat", -3, W | F | RMW, 1, 1, 1, "generic", "2.6.0",
       "Sets the expiration time of a key to a Unix milliseconds timestamp.", "O(1)", "@keyspace @write @fast", "",
       Expire, ExpireFinish},
      {"ttl", 2, R | F, 1, 1, 1, "generic", "1.0.0", "Returns the expiration time in seconds of a key.", "O(1)",
       "@keyspace @read @fast", "", Ttl, TtlFinish},
      {"pttl", 2, R | F, 1, 1, 1, "generic", "2.6.0", "Returns the expiration time in milliseconds of a key.", "O(1)",
       "@keyspace @read @fast", "", Ttl, TtlFinish},
      {"expiretime", 2, R | F, 1, 1, 1, "generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp.",
       "O(1)", "@keyspace @read @fast", "", Ttl, TtlFinish},
      {"pexpiretime", 2, R | F, 1, 1, 1, "generic", "7.0.0",
       "Returns the expiration time of a key as a Unix milliseconds timestamp.", "O(1)", "@keyspace @read @fast", "",
       Ttl, TtlFinish},
      {"persist", 2, W | F, 1, 1, 1, "generic", "2.2.0", "Removes the expiration time of a key.", "O(1)",
       "@keyspace @write @fast", "", Persist, PersistFinish},
      {"copy", -3, W | RMW, 1, 2, 1, "generic", "6.2.0", "Copies the value of a key to a new key (database 0 only).",
       "O(1) for string values.", "@keyspace @write @slow", "", Copy, CopyFinish},
      // OBJECT and MEMORY name their subcommand's key (Redis: 0 0 0 on the
      // container), so a pipeline orders them after a RENAME/INCR on that key.
      // OBJECT is a barrier: FREQ/IDLETIME read the store from start() (cmd_object.cc).
      {"object", -2, B, 2, 2, 1, "generic", "2.2.3", "A container for object introspection commands.",
       "Depends on subcommand.", "@slow", "encoding freq idletime refcount help", Object, ObjectFinish},
      {"memory", -2, 0, 2, 2, 1, "server", "4.0.0", "A container for memory diagnostics commands (USAGE, PURGE).",
       "Depends on subcommand.", "@slow", "usage purge doctor stats malloc-stats help", Memory, MemoryFinish},
      {"swapdb", 3, W | F, 0, 0, 0, "server", "4.0.0", "Swaps two databases (only database 0 exists).", "O(1)",
       "@keyspace @write @fast @dangerous", "", SwapDb, nullptr},
      {"keys", 2, R | B, 0, 0, 0, "generic", "1.0.0", "Returns all key names that match a pattern.",
       "O(N) with N being the number of keys in the database", "@keyspace @read @slow @dangerous", "", Keys, nullptr},
      {"randomkey", 1, R | B, 0, 0, 0, "generic", "1.0.0", "Returns a random key name from the database.",
       "O(N) in kvcg (a scan of a point-in-time image); O(1) in Redis", "@keyspace @read @slow", "", RandomKey,
       nullptr},

      // Lists and sets (cmd_collections.cc): host memory beside the store, not
      // persisted. The writes are kCmdRmw: one that first asks the store whether
      // the key holds a string holds back the connection's later commands on it.
      {"lpush", -3, W | F | RMW, 1, 1, 1, "list", "1.0.0",
       "Prepends one or more elements to a list. Creates the key if it doesn't exist (kvcg: in memory only, not saved).",
       "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
       "@write @list @fast", "", LPush, LPushFinish},
      {"rpush", -3, W | F | RMW, 1, 1, 1, "list", "1.0.0",
       "Appends one or more elements to a list. Creates the key if it doesn't exist (kvcg: in memory only, not saved).",
       "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
       "@write @list @fast", "", LPush, LPushFinish},
      {"lpop", -2, W | F | RMW, 1, 1, 1, "list", "1.0.0",
       "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.",
       "O(N) where N is the number of elements returned", "@write @list @fast", "", LPop, LPopFinish},
      {"rpop", -2, W | F | RMW, 1, 1, 1, "list", "1.0.0",
       "Returns and removes the last elements of a list. Deletes the list if the last element was popped.",
       "O(N) where N is the number of elements returned", "@write @list @fast", "", LPop, LPopFinish},
      {"llen", 2, R | F, 1, 1, 1, "list", "1.0.0", "Returns the length of a list.", "O(1)",
       "@read @list @fast", "", LLen, LLenFinish},
      {"lrange", 4, R, 1, 1, 1, "list", "1.0.0", "Returns a range of elements from a list.",
       "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for "
       "large lists; and N is the number of elements in the specified range.",
       "@read @list @slow", "", LRange, LRangeFinish},
      {"sadd", -3, W | F | RMW, 1, 1, 1, "set", "1.0.0",
       "Adds one or more members to a set. Creates the key if it doesn't exist (kvcg: in memory only, not saved).",
       "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
       "@write @set @fast", "", SAdd, SAddFinish},
      {"srem", -3, W | F | RMW, 1, 1, 1, "set", "1.0.0",
       "Removes one or more members from a set. Deletes the set if the last member was removed.",
       "O(N) where N is the number of members to be removed.", "@write @set @fast", "", SRem, SRemFinish},
      {"scard", 2, R | F, 1, 1, 1, "set", "1.0.0", "Returns the number of members in a set.", "O(1)",
       "@read @set @fast", "", SCard, SCardFinish},
      {"smembers", 2, R, 1, 1, 1, "set", "1.0.0", "Returns all members of a set.",
       "O(N) where N is the set cardinality.", "@read @set @slow", "", SMembers, SMembersFinish},
      {"sismember", 3, R | F, 1, 1, 1, "set", "1.0.0", "Determines whether a member belongs to a set.", "O(1)",
       "@read @set @fast", "", SIsMember, SIsMemberFinish},

      // Keyspace iteration (cmd_scan.cc): a barrier that calls Store::Scan itself.
      {"scan", -2, R | B, 0, 0, 0, "generic", "2.8.0", "Iterates over the key names in the database.",
       "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to "
       "return back to 0. N is the number of elements inside the collection.",
       "@keyspace @read @slow", "", Scan, nullptr},

      {"ping", -1, F | S, 0, 0, 0, "connection", "1.0.0", "Returns the server's liveliness response.", "O(1)",
       "@fast @connection", "", Ping, nullptr},
      {"echo", 2, F | L | S, 0, 0, 0, "connection", "1.0.0", "Returns the given string.", "O(1)", "@fast @connection", "",
       Echo, nullptr},
      {"hello", -1, F | NA | L | S, 0, 0, 0, "connection", "6.0.0", "Handshakes with the server (protocol version, AUTH, SETNAME).",
       "O(1)", "@fast @connection", "", Hello, nullptr},
      {"auth", -2, F | NA | L | S, 0, 0, 0, "connection", "1.0.0", "Authenticates the connection.",
       "O(N) where N is the number of passwords defined for the user", "@fast @connection", "", Auth, nullptr},
      {"select", 2, F | L | S, 0, 0, 0, "connection", "1.0.0", "Changes the selected database (only 0 exists).", "O(1)",
       "@fast @connection", "", Select, nullptr},
      {"quit", -1, F | NA | L | S, 0, 0, 0, "connection", "1.0.0", "Closes the connection.", "O(1)", "@fast @connection",
       "", Quit, nullptr},
      {"reset", 1, F | NA | L | S, 0, 0, 0, "connection", "6.2.0", "Resets the connection.", "O(1)", "@fast @connection", "",
       Reset, nullptr},
      {"client", -2, L | S, 0, 0, 0, "connection", "2.4.0", "A container for client connection commands.",
       "Depends on subcommand.", "@slow @connection", "id getname setname setinfo info list no-evict no-touch help", Client,
       nullptr},

      {"command", -1, L | S, 0, 0, 0, "server", "2.8.13", "Returns detailed information about all commands.",
       "O(N) where N is the total number of commands", "@slow @connection", "count docs info list help", Command, nullptr},
      {"config", -2, A | L | S, 0, 0, 0, "server", "2.0.0", "A container for server configuration commands.",
       "Depends on subcommand.", "@admin @slow @dangerous", "get set resetstat rewrite help", ConfigCmd, nullptr},
      {"info", -1, L | S | B, 0, 0, 0, "server", "1.0.0", "Returns information and statistics about the server.", "O(1)",
       "@slow @dangerous", "", Info, nullptr},
      {"dbsize", 1, R | F | B, 0, 0, 0, "server", "1.0.0", "Returns the number of keys in the database.", "O(1)",
       "@keyspace @read @fast", "", DbSize, nullptr},
      {"flushall", -1, W | B, 0, 0, 0, "server", "1.0.0", "Removes all keys.", "O(N) where N is the total number of keys",
       "@keyspace @write @slow @dangerous", "", FlushAll, nullptr},
      {"flushdb", -1, W | B, 0, 0, 0, "server", "1.0.0", "Removes all keys of the current (only) database.",
       "O(N) where N is the number of keys in the selected database", "@keyspace @write @slow @dangerous", "", FlushAll,
       nullptr},
      {"shutdown", -1, A | L | S | B, 0, 0, 0, "server", "1.0.0",
       "Saves (unless NOSAVE; with save rules or SAVE), fsyncs the log, drains in-flight requests and stops the server.",
       "O(N) when saving, where N is the total number of keys", "@admin @slow @dangerous", "", Shutdown, nullptr},
      {"save", 1, A | B, 0, 0, 0, "server", "1.0.0", "Synchronously saves the database(s) to disk.",
       "O(N) where N is the total number of keys in all databases", "@admin @slow @dangerous", "", Save, nullptr},
      {"bgsave", -1, A | B, 0, 0, 0, "server", "1.0.0", "Asynchronously saves the database(s) to disk.", "O(1)",
       "@admin @slow @dangerous", "", BgSave, nullptr},
      {"bgrewriteaof", 1, A | B, 0, 0, 0, "server", "1.0.0", "Asynchronously rewrites the append-only file to disk.",
       "O(1)", "@admin @slow @dangerous", "", BgRewriteAof, nullptr},
      {"lastsave", 1, F | L | S, 0, 0, 0, "server", "1.0.0",
       "Returns the Unix timestamp of the last successful save to disk.", "O(1)", "@fast @admin @dangerous", "",
       LastSave, nullptr},
      {"time", 1, F | L | S, 0, 0, 0, "server", "2.6.0", "Returns the server time.", "O(1)", "@fast", "", Time, nullptr},
      {"function", -2, 0, 0, 0, 0, "scripting", "7.0.0",
       "A container for function commands (kvcg has no scripting: FLUSH and LIST only).", "Depends on subcommand.",
       "@slow @scripting", "flush list", Function, nullptr},
  };
  // Per-command statistics are fixed-size arrays indexed by id.
  if (t.size() > kMaxCommands) __builtin_trap();
  for (size_t i = 0; i < t.size(); ++i) t[i].id = static_cast<int>(i);
  return t;
}

}  // namespace

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec> table = Build();
  return table;
}

namespace {

// FindCommand's index: open addressing over ≤ kMaxCommands names in 4×
// that many slots, keyed by FNV-1a of the ASCII-lowercased name, compared
// with EqualsIgnoreCase. Written here rather than an
// unordered_map<std::string>: every command a client sends is looked up (a
// pipeline of GETs is one lookup per GET), and the map cost a locale
// tolower per byte, a std::string and a second pass to hash it — ~4 % of an
// I/O thread under GET load; this is one pass, no copy.
class CommandIndex {
 public:
  CommandIndex() {
    for (const CommandSpec& c : Commands()) {
      const std::string_view name(c.name);
      size_t i = Hash(name) & kMask;
      while (slots_[i] != nullptr) i = (i + 1) & kMask;
      slots_[i] = &c;
    }
  }

  const CommandSpec* Find(std::string_view name) const {
    for (size_t i = Hash(name) & kMask;; i = (i + 1) & kMask) {
      const CommandSpec* c = slots_[i];
      if (c == nullptr || EqualsIgnoreCase(name, c->name)) return c;
    }
  }

 private:
  static constexpr size_t kSlots = 4 * kMaxCommands;  // load ≤ 1/4: short probes
  static constexpr size_t kMask = kSlots - 1;
  static_assert((kSlots & kMask) == 0, "a power of two");

  static uint32_t Hash(std::string_view name) {
    uint32_t h = 2166136261u;
    for (char ch : name) h = (h ^ uint8_t(AsciiLower(ch))) * 16777619u;
    return h;
  }

  const CommandSpec* slots_[kSlots] = {};
};

}  // namespace

const CommandSpec* FindCommand(std::string_view name) {
  static const CommandIndex index;
  return index.Find(name);
}

}  // namespace kvcg::server
