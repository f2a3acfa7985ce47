// The upstream connection each client holds, for every event loop of the process: CLIENT
// UNBLOCK and CLIENT TRACKING ... REDIRECT name a client by its proxy id, and with --threads the
// named client may live on another loop, whose objects this loop must not touch. An entry says
// where to find the client's connection in the upstream's CLIENT LIST (its local address) and
// its upstream id once known.
#pragma once

#include <cstdint>
#include <string>

namespace bloomproxy::proxy {

class PinRegistry {
 public:
  struct Entry {
    std::string address;      // the connection's local address ("ip:port"), may be empty
    int64_t upstream_id = 0;  // the upstream's CLIENT ID of it, 0 until known
  };

  // Client `client_id` holds a connection (address and id as far as known).
  static void Set(uint64_t client_id, const Entry& entry);
  // It holds none any more.
  static void Clear(uint64_t client_id);
  // The id learned for the connection of `client_id` at `address` (ignored if it moved on).
  static void LearnId(uint64_t client_id, const std::string& address, int64_t upstream_id);
  // False when the client holds no connection.
  static bool Find(uint64_t client_id, Entry* out);
};

}  // namespace bloomproxy::proxy
