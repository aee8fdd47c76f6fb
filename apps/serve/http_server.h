// sg2 serve: the HTTP/1.1 side, on Boost.Beast over Boost.Asio (Debian's libboost-dev; header-only).
//
// Asynchronous: a few I/O threads serve every connection, so a slow or stalled client holds no
// thread; it is cut off by the idle timeout (no whole request within --idle-timeout-s) and its
// responses by the request timeout. Keep-alive connections read their next request after the
// response is written. Limits: request header 16 KiB (400), body --max-body (413). stop() closes the
// listening socket and the idle connections, lets every request read so far get its response, and
// run() returns once the last one is written.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sg2::cli::serve {

struct HttpRequest {
  std::string method;  ///< "GET", "POST", ...
  std::string target;  ///< as sent: "/v1/generate?seed=1"
  std::string path;    ///< target up to '?'
  std::string query;   ///< after '?', undecoded
  std::string body;
  std::string peer;  ///< "127.0.0.1:54321"
  std::chrono::steady_clock::time_point start;
  /// Set when the server answered on its own (request timeout): work for it can be dropped.
  std::shared_ptr<std::atomic<bool>> cancelled;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string log_note;        ///< appended to the access-log line ("batch 8 cuda:0")
  bool image_request = false;  ///< counted in the latency histogram
};

/// Sends the response of one request; callable once, from any thread.
using Reply = std::function<void(HttpResponse&&)>;
using Handler = std::function<void(HttpRequest&&, Reply)>;

/// A one-line JSON error body {"error": "..."}.
HttpResponse json_error(int status, const std::string& message);

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  ///< 0: any free port (port() says which)
  size_t max_body = size_t(1) << 20;
  double idle_timeout_s = 15;
  double request_timeout_s = 30;
  int io_threads = 2;
  int max_connections = 1024;  ///< connections beyond it are closed at once
  bool access_log = true;
};

class Metrics;

class HttpServer {
 public:
  /// Binds and listens. Throws Error(io) "cannot listen on HOST:PORT: reason", Error(invalid_argument)
  /// for a host that is not an IP address.
  HttpServer(const HttpOptions& options, Handler handler, Metrics* metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  /// "http://HOST:PORT" (IPv6 hosts in brackets).
  std::string url() const;
  /// Serves on io_threads threads (this one included) until stop() and the last response.
  void run();
  /// Thread-safe (a signal thread calls it); idempotent.
  void stop();
  /// Ends run() now, answering nothing more (a second signal, or stop() taking too long).
  void abort();
  /// Requests read and not answered yet.
  int64_t in_flight() const;

  struct Impl;  ///< the io_context, acceptor and connections (http_server.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace sg2::cli::serve
