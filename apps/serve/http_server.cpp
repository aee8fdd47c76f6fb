// sg2 serve: HTTP/1.1 on Boost.Beast (http_server.h).
#include "serve/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "serve/metrics.h"
#include "sg2/error.h"
#include "sg2/model.h"
#include "sg2/text.h"

namespace sg2::cli::serve {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {
constexpr size_t kHeaderLimit = 16 * 1024;

std::chrono::milliseconds ms(double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); }

bool is_http_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::end_of_stream).category();
}
}  // namespace

HttpResponse json_error(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = nlohmann::json({{"error", printable(message, 2000)}}).dump() + "\n";
  if (status == 503) r.headers.emplace_back("Retry-After", "1");
  return r;
}

class Session;

struct HttpServer::Impl {
  HttpOptions opt;
  Handler handler;
  Metrics* metrics = nullptr;
  net::io_context io;
  tcp::acceptor acceptor{io};
  net::steady_timer retry_timer{io};
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> in_flight{0};
  std::mutex sessions_mu;
  std::map<Session*, std::weak_ptr<Session>> sessions;
  std::mutex log_mu;
  std::string host;
  int port = 0;

  void accept();
  void log(const std::string& line) {
    if (!opt.access_log) return;
    std::lock_guard<std::mutex> lock(log_mu);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl& srv)
      : stream_(std::move(socket)), srv_(srv), timer_(stream_.get_executor()) {
    beast::error_code ec;
    const tcp::endpoint ep = stream_.socket().remote_endpoint(ec);
    if (!ec) peer_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void start() {
    {
      std::lock_guard<std::mutex> lock(srv_.sessions_mu);
      srv_.sessions[this] = weak_from_this();
    }
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

  ~Session() {
    std::lock_guard<std::mutex> lock(srv_.sessions_mu);
    srv_.sessions.erase(this);
  }

  /// The server stops: an idle connection closes now, a busy one after its response.
  void on_stop() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->close();
    });
  }

 private:
  void read() {
    if (srv_.stopping) return close();
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(srv_.opt.max_body);
    stream_.expires_after(ms(srv_.opt.idle_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::on_header, shared_from_this()));
  }

  /// The header is in: a client that asks for "Expect: 100-continue" (curl does, for bodies over 1 KiB)
  /// is told to send its body (when it fits --max-body; else the body's read fails with body_limit and
  /// the client gets its 413), then the body is read.
  void on_header(beast::error_code ec, size_t bytes) {
    if (ec) return on_read(ec, bytes);
    const auto& h = parser_->get();
    const auto expect = h[http::field::expect];
    const bool fits = !parser_->content_length() || *parser_->content_length() <= srv_.opt.max_body;
    if (h.version() >= 11 && beast::iequals(expect, "100-continue") && fits) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, h.version());
      http::async_write(stream_, *cont, [self = shared_from_this(), cont](beast::error_code e, size_t n) {
        if (e) return self->on_read(e, n);
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t) {
    if (ec) {
      if (!is_http_error(ec) || ec == http::error::end_of_stream || ec == http::error::partial_message)
        return close();  // the client left, the idle timeout, or the server closed the socket
      begin_request();
      if (ec == http::error::body_limit)
        return send(id_,
                    json_error(413, "body: larger than --max-body (" + std::to_string(srv_.opt.max_body) + " bytes)"),
                    true);
      if (ec == http::error::header_limit)
        return send(id_, json_error(400, "request header larger than 16 KiB (a huge query?)"), true);
      return send(id_, json_error(400, "malformed HTTP request: " + ec.message()), true);
    }
    begin_request();
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    HttpRequest r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    const size_t q = r.target.find('?');
    r.path = r.target.substr(0, q);
    r.query = q == std::string::npos ? std::string() : r.target.substr(q + 1);
    r.body = std::move(req.body());
    r.peer = peer_;
    r.start = start_;
    r.cancelled = cancelled_;
    stream_.expires_never();  // the request timer covers the wait for the answer
    timer_.expires_after(ms(srv_.opt.request_timeout_s));
    timer_.async_wait([self = shared_from_this(), id = id_](beast::error_code e) {
      if (!e) self->on_timeout(id);
    });
    const uint64_t id = id_;
    Reply reply = [self = shared_from_this(), id](HttpResponse&& resp) {
      auto shared = std::make_shared<HttpResponse>(std::move(resp));
      net::post(self->stream_.get_executor(), [self, id, shared] { self->send(id, std::move(*shared), false); });
    };
    try {
      srv_.handler(std::move(r), std::move(reply));
    } catch (const std::exception& e) {
      send(id, json_error(500, std::string("internal error: ") + e.what()), false);
    }
  }

  void begin_request() {
    busy_ = true;
    answered_ = false;
    ++id_;
    start_ = Clock::now();
    cancelled_ = std::make_shared<std::atomic<bool>>(false);
    if (parser_ && parser_->is_header_done()) {
      const auto& h = parser_->get();
      method_ = std::string(h.method_string());
      target_ = std::string(h.target());
      version_ = h.version();
    } else {
      method_ = "-";
      target_ = "-";
      version_ = 11;
    }
    srv_.in_flight.fetch_add(1);
    if (srv_.metrics) srv_.metrics->in_flight(1);
  }

  void on_timeout(uint64_t id) {
    if (id != id_ || answered_) return;
    cancelled_->store(true);
    send(id,
         json_error(503, "no answer within --request-timeout-s (" +
                             printable(std::to_string(srv_.opt.request_timeout_s), 20) +
                             " s): the server is overloaded"),
         false);
  }

  void send(uint64_t id, HttpResponse&& r, bool close_after) {
    if (id != id_ || answered_) return;  // answered already (a timeout), or a stale answer
    answered_ = true;
    timer_.cancel();
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), version_);
    res->set(http::field::server, std::string("sg2/") + version());
    res->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive_ && !close_after && !srv_.stopping);
    res->prepare_payload();
    if (srv_.metrics)
      srv_.metrics->response(r.status, r.image_request, std::chrono::duration<double>(Clock::now() - start_).count());
    status_ = r.status;
    note_ = std::move(r.log_note);
    stream_.expires_after(ms(srv_.opt.request_timeout_s));
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t bytes) {
      self->on_write(ec, bytes, res->keep_alive());
    });
  }

  void on_write(beast::error_code ec, size_t bytes, bool keep) {
    srv_.in_flight.fetch_sub(1);
    if (srv_.metrics) srv_.metrics->in_flight(-1);
    if (srv_.opt.access_log) {
      char ms_buf[32];
      std::snprintf(ms_buf, sizeof ms_buf, "%.1f ms",
                    std::chrono::duration<double, std::milli>(Clock::now() - start_).count());
      std::string line = "sg2 serve: " + peer_ + " \"" + printable(method_, 16) + " " + printable(target_, 200) +
                         "\" " + std::to_string(status_) + " " + std::to_string(bytes) + " " + ms_buf;
      if (!note_.empty()) line += " " + note_;
      if (ec) line += " (write failed: " + ec.message() + ")";
      srv_.log(line + "\n");
    }
    busy_ = false;
    if (ec || !keep) return close();
    read();
  }

  void close() {
    beast::error_code ec;
    timer_.cancel();
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  HttpServer::Impl& srv_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string peer_ = "-", method_, target_, note_;
  unsigned version_ = 11;
  bool keep_alive_ = false, busy_ = false, answered_ = true;
  uint64_t id_ = 0;
  int status_ = 0;
  Clock::time_point start_;
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
};

void HttpServer::Impl::accept() {
  acceptor.async_accept(net::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping) return;
    if (ec) {  // e.g. out of file descriptors: try again shortly instead of spinning
      retry_timer.expires_after(std::chrono::milliseconds(100));
      retry_timer.async_wait([this](beast::error_code e) {
        if (!e && !stopping) accept();
      });
      return;
    }
    beast::error_code opt_ec;
    size_t open_sessions = 0;
    {
      std::lock_guard<std::mutex> lock(sessions_mu);
      open_sessions = sessions.size();
    }
    if (open_sessions >= static_cast<size_t>(opt.max_connections)) {  // over --max-connections: closed at once
      socket.close(opt_ec);
      return accept();
    }
    socket.set_option(tcp::no_delay(true), opt_ec);
    std::make_shared<Session>(std::move(socket), *this)->start();
    accept();
  });
}

HttpServer::HttpServer(const HttpOptions& options, Handler handler, Metrics* metrics)
    : impl_(std::make_unique<Impl>()) {
  impl_->opt = options;
  impl_->handler = std::move(handler);
  impl_->metrics = metrics;
  beast::error_code ec;
  const net::ip::address addr = net::ip::make_address(options.host, ec);
  if (ec)
    fail(ErrorKind::invalid_argument, "--host ", printable(options.host, 80),
         ": not an IP address (for example 127.0.0.1, 0.0.0.0 or ::)");
  const tcp::endpoint ep(addr, static_cast<unsigned short>(options.port));
  const std::string where =
      (addr.is_v6() ? "[" + options.host + "]" : options.host) + ":" + std::to_string(options.port);
  impl_->acceptor.open(ep.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(ep, ec);
  if (!ec) impl_->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) fail(ErrorKind::io, "cannot listen on ", printable(where, 100), ": ", ec.message());
  impl_->port = impl_->acceptor.local_endpoint().port();
  impl_->host = addr.is_v6() ? "[" + addr.to_string() + "]" : addr.to_string();
}

HttpServer::~HttpServer() = default;

int HttpServer::port() const { return impl_->port; }
std::string HttpServer::url() const { return "http://" + impl_->host + ":" + std::to_string(impl_->port); }
int64_t HttpServer::in_flight() const { return impl_->in_flight.load(); }

void HttpServer::run() {
  impl_->accept();
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, impl_->opt.io_threads); ++i) threads.emplace_back([this] { impl_->io.run(); });
  impl_->io.run();
  for (std::thread& t : threads) t.join();
}

void HttpServer::stop() {
  if (impl_->stopping.exchange(true)) return;
  net::post(impl_->io, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
    impl_->retry_timer.cancel();
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard<std::mutex> lock(impl_->sessions_mu);
      for (auto& [p, w] : impl_->sessions)
        if (auto s = w.lock()) live.push_back(std::move(s));
    }
    for (auto& s : live) s->on_stop();
  });
}

void HttpServer::abort() {
  impl_->stopping = true;
  impl_->io.stop();
}

}  // namespace sg2::cli::serve
