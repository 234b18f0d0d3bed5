// Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT.
// They change only the connection's own state and answer at dispatch, in
// order with the store commands around them (HELLO 3 in a pipeline switches
// the protocol for the replies after it only).
#include <string>

#include "server/client_registry.h"
#include "server/cmd_common.h"
#include "server/command_table.h"
#include "server/connection.h"
#include "server/io_thread.h"
#include "server/resp_parser.h"
#include "server/server.h"

namespace kvcg::server::cmd {

namespace {

// Redis's rule for CLIENT SETNAME / SETINFO values.
bool ValidName(std::string_view name) {
  for (char c : name) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

// Checks a password for the default user; "" if accepted, else the error.
std::string CheckPassword(CommandContext& ctx, std::string_view user, std::string_view pass) {
  const std::string& required = ctx.loop.settings().requirepass;
  if (!EqualsIgnoreCase(user, "default")) return kErrWrongPass;
  if (!required.empty() && pass != required) return kErrWrongPass;
  return "";
}

void SetName(CommandContext& ctx, std::string_view name) {
  std::lock_guard lock(ctx.server.clients().mu());
  ctx.conn.info().name = std::string(name);
}

}  // namespace

void Ping(CommandContext& ctx) {
  if (ctx.argc() > 2) ctx.Error("ERR wrong number of arguments for 'ping' command");
  else if (ctx.argc() == 2) ctx.out.Bulk(ctx.arg(1));
  else ctx.out.SimpleString("PONG");
}

void Echo(CommandContext& ctx) { ctx.out.Bulk(ctx.arg(1)); }

// SELECT: kvcg keeps a single database (see cmd_keyspace.cc), so only 0.
void Select(CommandContext& ctx) {
  int db;
  const char* error;
  if (!ParseIntArg(ctx.arg(1), &db, &error)) ctx.Error(error);
  else if (db != 0) ctx.Error(kErrDbRange);
  else ctx.out.Ok();
}

void Quit(CommandContext& ctx) {
  ctx.out.Ok();
  ctx.conn.SetCloseAfterReply();
}

void Reset(CommandContext& ctx) {
  ctx.conn.resp3 = false;
  ctx.conn.authenticated = ctx.loop.settings().requirepass.empty();
  SetName(ctx, "");
  ctx.out.SimpleString("RESET");
}

void Auth(CommandContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.Error(kErrSyntax);
    return;
  }
  if (ctx.argc() == 2 && ctx.loop.settings().requirepass.empty()) {
    ctx.Error(
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?");
    return;
  }
  std::string_view user = ctx.argc() == 3 ? ctx.arg(1) : "default";
  std::string_view pass = ctx.arg(ctx.argc() - 1);
  std::string e = CheckPassword(ctx, user, pass);
  if (!e.empty()) {
    ctx.Error(e);
    return;
  }
  ctx.conn.authenticated = true;
  ctx.out.Ok();
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
void Hello(CommandContext& ctx) {
  int64_t version = ctx.conn.resp3 ? 3 : 2;
  size_t i = 1;
  if (ctx.argc() >= 2) {
    if (!ParseInt64(ctx.arg(1), &version)) {
      ctx.Error("ERR Protocol version is not an integer or out of range");
      return;
    }
    if (version < 2 || version > 3) {
      ctx.Error("NOPROTO unsupported protocol version");
      return;
    }
    i = 2;
  }
  std::string_view user, pass, name;
  bool has_auth = false, has_name = false;
  for (; i < ctx.argc(); ++i) {
    size_t more = ctx.argc() - i - 1;
    if (EqualsIgnoreCase(ctx.arg(i), "auth") && more >= 2) {
      user = ctx.arg(i + 1);
      pass = ctx.arg(i + 2);
      has_auth = true;
      i += 2;
    } else if (EqualsIgnoreCase(ctx.arg(i), "setname") && more >= 1) {
      name = ctx.arg(i + 1);
      has_name = true;
      i += 1;
    } else {
      ctx.Error("ERR Syntax error in HELLO option '" + std::string(ctx.arg(i)) + "'");
      return;
    }
  }
  if (has_auth) {
    std::string e = CheckPassword(ctx, user, pass);
    if (!e.empty()) {
      ctx.Error(e);
      return;
    }
    ctx.conn.authenticated = true;
  }
  if (!ctx.conn.authenticated && !ctx.loop.settings().requirepass.empty()) {
    ctx.Error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH "
        "<user> <pass> option can be used to authenticate the client and select the RESP protocol version at "
        "the same time");
    return;
  }
  if (has_name) {
    if (!ValidName(name)) {
      ctx.Error("ERR Client names cannot contain spaces, newlines or special characters.");
      return;
    }
    SetName(ctx, name);
  }
  ctx.conn.resp3 = version == 3;
  ctx.cmd.resp3 = ctx.conn.resp3;
  ctx.out.set_resp3(ctx.conn.resp3);
  ctx.out.MapHeader(7);
  ctx.out.Bulk("server");
  ctx.out.Bulk("redis");
  ctx.out.Bulk("version");
  ctx.out.Bulk("7.0.0");
  ctx.out.Bulk("proto");
  ctx.out.Integer(version);
  ctx.out.Bulk("id");
  ctx.out.Integer(static_cast<int64_t>(ctx.conn.id()));
  ctx.out.Bulk("mode");
  ctx.out.Bulk("standalone");
  ctx.out.Bulk("role");
  ctx.out.Bulk("master");
  ctx.out.Bulk("modules");
  ctx.out.ArrayHeader(0);
}

void Client(CommandContext& ctx) {
  std::string sub = ToLower(ctx.arg(1));
  size_t argc = ctx.argc();
  if (sub == "id" && argc == 2) {
    ctx.out.Integer(static_cast<int64_t>(ctx.conn.id()));
  } else if (sub == "getname" && argc == 2) {
    std::string name;
    {
      std::lock_guard lock(ctx.server.clients().mu());
      name = ctx.conn.info().name;
    }
    if (name.empty()) ctx.out.Null();
    else ctx.out.Bulk(name);
  } else if (sub == "setname" && argc == 3) {
    if (!ValidName(ctx.arg(2))) {
      ctx.Error("ERR Client names cannot contain spaces, newlines or special characters.");
      return;
    }
    SetName(ctx, ctx.arg(2));
    ctx.out.Ok();
  } else if (sub == "setinfo" && argc == 4) {
    std::string attr = ToLower(ctx.arg(2));
    if (attr != "lib-name" && attr != "lib-ver") {
      ctx.Error("ERR Unrecognized option '" + std::string(ctx.arg(2)) + "'");
      return;
    }
    if (!ValidName(ctx.arg(3))) {
      ctx.Error("ERR " + attr + " cannot contain spaces, newlines or special characters.");
      return;
    }
    {
      std::lock_guard lock(ctx.server.clients().mu());
      (attr == "lib-name" ? ctx.conn.info().lib_name : ctx.conn.info().lib_ver) = std::string(ctx.arg(3));
    }
    ctx.out.Ok();
  } else if (sub == "info" && argc == 2) {
    std::string line;
    {
      std::lock_guard lock(ctx.server.clients().mu());
      ctx.conn.info().last_command.store("client|info", std::memory_order_relaxed);
      line = ClientRegistry::Describe(ctx.conn.info(), WallMs());
    }
    ctx.out.Verbatim(line + "\n");
  } else if (sub == "list" && (argc == 2 || (argc == 4 && EqualsIgnoreCase(ctx.arg(2), "type")))) {
    if (argc == 4 && !EqualsIgnoreCase(ctx.arg(3), "normal")) {
      if (EqualsIgnoreCase(ctx.arg(3), "master") || EqualsIgnoreCase(ctx.arg(3), "replica") ||
          EqualsIgnoreCase(ctx.arg(3), "pubsub")) {
        ctx.out.Verbatim("");
      } else {
        ctx.Error("ERR Unknown client type '" + std::string(ctx.arg(3)) + "'");
      }
      return;
    }
    ctx.conn.info().last_command.store("client|list", std::memory_order_relaxed);
    ctx.out.Verbatim(ctx.server.clients().List(WallMs()));
  } else if ((sub == "no-evict" || sub == "no-touch") && argc == 3) {
    if (EqualsIgnoreCase(ctx.arg(2), "on") || EqualsIgnoreCase(ctx.arg(2), "off")) ctx.out.Ok();
    else ctx.Error(kErrSyntax);
  } else if (sub == "help" && argc == 2) {
    static const char* lines[] = {
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "LIST [TYPE normal]",
        "    Return information about client connections.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "SETINFO <LIB-NAME|LIB-VER> <value>",
        "    Set client library name or version.",
        "HELP",
        "    Print this help.",
    };
    ctx.out.ArrayHeader(std::size(lines));
    for (const char* l : lines) ctx.out.SimpleString(l);
  } else if (sub == "id" || sub == "getname" || sub == "setname" || sub == "setinfo" || sub == "info" ||
             sub == "list" || sub == "help" || sub == "no-evict" || sub == "no-touch") {
    ctx.Error("ERR wrong number of arguments for 'client|" + sub + "' command");
  } else {
    ctx.Error("ERR unknown subcommand '" + std::string(ctx.arg(1)) + "'. Try CLIENT HELP.");
  }
}

}  // namespace kvcg::server::cmd
