// Persistence commands: SAVE, BGSAVE [SCHEDULE], LASTSAVE, BGREWRITEAOF and
// SHUTDOWN [NOSAVE|SAVE|NOW|FORCE|ABORT], with Redis 7.0's replies.
//
// Design: the handlers are thin. The work is the library's (kvcg::Durable:
// snapshots, log rewrite, fsync) and the policy shared by all I/O threads is
// PersistenceControl's (BGSAVE SCHEDULE, write refusal, the save at
// shutdown). What the handlers add is Redis's surface: the status and error
// texts clients and scripts match on, and the ordering:
//  * SAVE, BGSAVE, BGREWRITEAOF and SHUTDOWN are barriers (command_table.h),
//    so every earlier write of the same connection has taken effect (and,
//    being acknowledged, is in the store) before the snapshot is taken.
//  * They call the Durable from start(), on the connection's I/O thread —
//    never from a store Completion, which the Durable forbids. SAVE and a
//    saving SHUTDOWN block that I/O thread (and only it) until the snapshot
//    is on disk, as SAVE blocks Redis; the other I/O threads keep serving.
//  * With no Durable (a store opened without a durability directory, which
//    the server itself never does: dir defaults to ".") the commands answer
//    kErrNoPersistence; SHUTDOWN then just stops.
#include <spdlog/spdlog.h>

#include "kvcg/durable.h"
#include "server/cmd_common.h"
#include "server/command_table.h"
#include "server/connection.h"
#include "server/server.h"

namespace kvcg::server::cmd {

namespace {

Durable* DurableOrError(CommandContext& ctx) {
  Durable* durable = ctx.server.persistence().durable();
  if (durable == nullptr) ctx.Error(kErrNoPersistence);
  return durable;
}

std::string ErrorText(const Status& s, const char* fallback) {
  return "ERR " + (s.message().empty() ? std::string(fallback) : s.message());
}

}  // namespace

void Save(CommandContext& ctx) {
  Durable* durable = DurableOrError(ctx);
  if (durable == nullptr) return;
  Status s = ctx.server.persistence().Save(/*wait_for_background_save=*/false);
  if (s.ok()) {
    spdlog::info("event=saved by=client id={}", ctx.conn.id());
    ctx.out.Ok();
    return;
  }
  if (s.code() != Code::kUnavailable) spdlog::error("event=save_failed error=\"{}\"", s.ToString());
  // kUnavailable: "Background save already in progress" (the library's text, Redis's words).
  ctx.Error(ErrorText(s, "Background save already in progress"));
}

void BgSave(CommandContext& ctx) {
  bool schedule = false;
  if (ctx.argc() > 1) {
    if (ctx.argc() == 2 && EqualsIgnoreCase(ctx.arg(1), "schedule")) {
      schedule = true;
    } else {
      ctx.Error(kErrSyntax);
      return;
    }
  }
  Durable* durable = DurableOrError(ctx);
  if (durable == nullptr) return;
  Status s = durable->BackgroundSave();
  if (s.ok()) {
    spdlog::info("event=bgsave_started by=client id={}", ctx.conn.id());
    ctx.out.SimpleString("Background saving started");
    return;
  }
  // kUnavailable also means "cannot take a snapshot now" for other reasons:
  // the state tells a running job apart from those.
  PersistenceInfo p = durable->Persistence();
  bool busy = s.code() == Code::kUnavailable;
  if (busy && (p.bgsave_in_progress || s.message() == "Background save already in progress")) {
    ctx.Error("ERR Background save already in progress");
  } else if (busy && (p.aof_rewrite_in_progress || p.aof_rewrite_scheduled)) {
    if (schedule) {
      // A log rewrite holds the background slot; the cron starts the save after it.
      ctx.server.persistence().ScheduleBackgroundSave();
      ctx.out.SimpleString("Background saving scheduled");
    } else {
      ctx.Error(
          "ERR Another child process is active (AOF?): can't BGSAVE right now. "
          "Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.");
    }
  } else {
    spdlog::error("event=bgsave_failed error=\"{}\"", s.ToString());
    ctx.Error(ErrorText(s, "Background save failed"));
  }
}

void LastSave(CommandContext& ctx) {
  Durable* durable = DurableOrError(ctx);
  if (durable == nullptr) return;
  ctx.out.Integer(durable->Persistence().last_save_time);
}

void BgRewriteAof(CommandContext& ctx) {
  Durable* durable = DurableOrError(ctx);
  if (durable == nullptr) return;
  Status s = durable->RewriteLog();
  if (s.ok()) {
    PersistenceInfo p = durable->Persistence();
    bool scheduled = p.aof_rewrite_scheduled && !p.aof_rewrite_in_progress;
    spdlog::info("event=aof_rewrite_{} by=client id={}", scheduled ? "scheduled" : "started", ctx.conn.id());
    ctx.out.SimpleString(scheduled ? "Background append only file rewriting scheduled"
                                   : "Background append only file rewriting started");
  } else if (s.code() == Code::kUnavailable &&
             (s.message() == "Background append only file rewriting already in progress" ||
              durable->Persistence().aof_rewrite_in_progress)) {
    ctx.Error("ERR Background append only file rewriting already in progress");
  } else if (s.code() == Code::kInvalidArgument) {
    // Redis can write an AOF with appendonly off; kvcg keeps a log only while it is on.
    ctx.Error("ERR BGREWRITEAOF needs appendonly yes (kvcg keeps no log while appendonly is no)");
  } else {
    spdlog::error("event=aof_rewrite_failed error=\"{}\"", s.ToString());
    ctx.Error(ErrorText(s, "Background append only file rewriting failed"));
  }
}

void Shutdown(CommandContext& ctx) {
  bool nosave = false, save = false, force = false;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    std::string o = ToLower(ctx.arg(i));
    if (o == "abort") {
      ctx.Error("ERR No shutdown in progress.");
      return;
    }
    if (o == "nosave") nosave = true;
    else if (o == "save") save = true;
    else if (o == "force") force = true;
    else if (o != "now") {
      ctx.Error(kErrSyntax);
      return;
    }
  }
  if (nosave && save) {
    ctx.Error(kErrSyntax);
    return;
  }
  ShutdownSave mode = nosave ? ShutdownSave::kNoSave : save ? ShutdownSave::kSave : ShutdownSave::kDefault;
  // Save before answering so that a failure can be reported while the server
  // keeps running (Redis); FORCE shuts down anyway. Writes other clients make
  // until the drain completes are saved again in Server::Stop.
  Status s = ctx.server.persistence().SaveBeforeShutdown(mode);
  if (!s.ok() && !force) {
    ctx.Error("ERR Errors trying to SHUTDOWN. Check logs.");
    return;
  }
  spdlog::info("event=shutdown_requested by=client id={} addr={} save={}", ctx.conn.id(), ctx.conn.info().addr,
               nosave ? "no" : save ? "yes" : "default");
  // Like Redis, no reply: the connection closes as the server drains.
  ctx.conn.SetCloseAfterReply();
  ctx.server.RequestShutdown(mode);
}

}  // namespace kvcg::server::cmd
