// loom-serve's HTTP front end in process (apps/serve/http_frontend.hpp): where it listens and the
// errors its constructor gives. The routes are driven over sockets by tritonclient
// (check_serve_http.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "http_frontend.hpp"
#include "loom/error.hpp"

namespace loom::serve {
namespace {

namespace fs = std::filesystem;

// A Service on an empty repository: the front end's binding does not depend on the models.
class HttpFrontendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = fs::temp_directory_path() / ("loom_serve_http_" + std::to_string(::getpid()));
    fs::create_directories(repo_);
    ServiceOptions options;
    options.repository = repo_.string();
    options.device = "cpu";
    options.executor.profile = "none";
    service_ = std::make_unique<Service>(options);
  }
  void TearDown() override {
    service_.reset();
    fs::remove_all(repo_);
  }

  // The message of the Error(invalid_argument) constructing a front end with these throws.
  std::string refusal(const std::string& address, int port, HttpOptions options = {}) {
    try {
      HttpFrontend frontend(*service_, address, port, options);
      ADD_FAILURE() << "listening on " << address << ":" << port;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      return e.what();
    }
    return {};
  }

  fs::path repo_;
  std::unique_ptr<Service> service_;
};

TEST_F(HttpFrontendTest, PortZeroTakesAFreePortAndAPortInUseIsRefusedByName) {
  HttpFrontend first(*service_, "127.0.0.1", 0);
  EXPECT_GT(first.port(), 0);
  EXPECT_EQ(first.address(), "127.0.0.1");
  const std::string message = refusal("127.0.0.1", first.port());
  EXPECT_NE(message.find("HTTP port " + std::to_string(first.port()) + " on 127.0.0.1"), std::string::npos) << message;
  EXPECT_NE(message.find("in use"), std::string::npos) << message;
}

TEST_F(HttpFrontendTest, StopFreesThePortAndIsIdempotent) {
  int port = 0;
  {
    HttpFrontend frontend(*service_, "127.0.0.1", 0);
    port = frontend.port();
    frontend.stop();
    frontend.stop();
  }  // and the destructor after two stops
  HttpFrontend again(*service_, "127.0.0.1", port);
  EXPECT_EQ(again.port(), port);
}

TEST_F(HttpFrontendTest, RefusesBadPortsAddressesAndOptions) {
  EXPECT_NE(refusal("127.0.0.1", 70000).find("HTTP port 70000 on 127.0.0.1: not a TCP port"), std::string::npos);
  EXPECT_NE(refusal("127.0.0.1", -1).find("not a TCP port"), std::string::npos);
  EXPECT_NE(refusal("", 0).find("the address is empty"), std::string::npos);
  // 192.0.2.1 (TEST-NET-1, RFC 5737) is a valid address that no host here has.
  const std::string absent = refusal("192.0.2.1", 0);
  EXPECT_NE(absent.find("HTTP port 0 on 192.0.2.1"), std::string::npos) << absent;
  EXPECT_NE(absent.find("no such address"), std::string::npos) << absent;
  HttpOptions no_threads;
  no_threads.threads = 0;
  EXPECT_NE(refusal("127.0.0.1", 0, no_threads).find("0 threads"), std::string::npos);
  HttpOptions no_bytes;
  no_bytes.max_request_bytes = 0;
  EXPECT_NE(refusal("127.0.0.1", 0, no_bytes).find("limit of 0 bytes"), std::string::npos);
}

}  // namespace
}  // namespace loom::serve
