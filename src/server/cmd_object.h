// OBJECT FREQ / OBJECT IDLETIME (cmd_object.cc); the rest of OBJECT is in
// cmd_keyspace.cc.
#pragma once

namespace kvcg::server {
struct CommandContext;
namespace cmd {
// Answers OBJECT FREQ key (freq) or OBJECT IDLETIME key (!freq), arguments
// already checked, synchronously from Store::KeyAccess: OBJECT is a barrier
// (command_table.cc), so every earlier command of the connection has taken
// effect.
void ObjectAccess(CommandContext& ctx, bool freq);
}  // namespace cmd
}  // namespace kvcg::server
