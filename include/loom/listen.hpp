// Where a server may listen: the checks and the reasons Loom's own HTTP endpoint (the executor's
// metrics) gives, for services built on Loom (loom-serve's front ends) to give the same errors for
// the same causes.
#pragma once

#include <string>

namespace loom {

// Throws Error(invalid_argument) "<where>: the address is empty (...)" or "<where>: the address
// does not resolve (<resolver's reason>)"; returns when `address` names this host or an interface.
void check_listen_address(const std::string& address, const std::string& where);

// Why binding or listening failed, from its errno: "the port is in use (...)", "this host has no
// such address (...)", "permission denied (...)", or "cannot listen there (...)".
std::string listen_failure_reason(int error);

}  // namespace loom
