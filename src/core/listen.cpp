// check_listen_address() and listen_failure_reason() (loom/listen.hpp).
#include "loom/listen.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "loom/error.hpp"

namespace loom {

// The address must resolve before a server library sees it, so the error can say why it does not.
void check_listen_address(const std::string& address, const std::string& where) {
  if (address.empty())
    throw Error(ErrorCode::invalid_argument,
                where + ": the address is empty (127.0.0.1: this host only; 0.0.0.0: every interface)");
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(address.c_str(), nullptr, &hints, &found);
  if (rc != 0)
    throw Error(ErrorCode::invalid_argument,
                where + ": the address does not resolve (" + std::string(gai_strerror(rc)) + ")");
  freeaddrinfo(found);
}

std::string listen_failure_reason(int error) {
  if (error == EADDRINUSE) return "the port is in use (another process, or another Executor, listens on it)";
  if (error == EADDRNOTAVAIL) return "this host has no such address (" + std::string(std::strerror(error)) + ")";
  if (error == EACCES) return "permission denied (ports below 1024 need privileges)";
  if (error != 0) return "cannot listen there (" + std::string(std::strerror(error)) + ")";
  return "cannot listen there";
}

}  // namespace loom
