// sg2 serve: images over HTTP, with the requests of concurrent clients merged into one GPU batch and
// every client answered with exactly the image it would get alone (docs/serving.md).
//
//   sg2 serve --network ffhq.pkl --device cuda:0,1 --port 8080
//   curl -o 42.png 'http://127.0.0.1:8080/v1/generate?seed=42'      # = sg2 generate --seeds 42's seed0042.png
//
// Layout: the options (serve_config, below, the one place they are declared and read), the routes
// (Routes), and apps/serve/: request.h (parameters, with the CLI's rules), batcher.h (the batching
// and the devices' workers), http_server.h (Boost.Beast), encode.h (PNG, JPEG), metrics.h
// (Prometheus), explorer.html (the page at /, compiled in).
#include <signal.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cli_util.h"
#include "commands.h"
#include "explorer_html.h"  // generated from apps/serve/explorer.html (apps/CMakeLists.txt)
#include "serve/batcher.h"
#include "serve/encode.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "sg2/text.h"
#include "task_pool.h"

namespace sg2::cli {
namespace {

using serve::HttpRequest;
using serve::HttpResponse;
using serve::json_error;

struct ServeConfig {
  Model model;
  std::string network;  ///< the file's name, for /v1/model
  GeneratorOptions gen_options;
  std::vector<Device> devices;
  serve::HttpOptions http;
  serve::BatcherOptions batch;
  int max_batch_option = 0;  ///< --max-batch, 0 when not given (the backend's default then)
  int jobs = 1;              ///< encoder threads
  int jpeg_threads = 1;      ///< threads sharing one JPEG (its strips); 1 = each JPEG on one thread
  bool quiet = false;
};

/// `sg2 serve`'s options, declared, parsed and checked, then the model loaded. nullopt after --help.
std::optional<ServeConfig> serve_config(int argc, char** argv) {
  Options opts = make_options(
      "serve",
      "Serves images over HTTP (docs/serving.md): GET /v1/generate?seed=S as sg2 generate --seeds S, style "
      "mixing as sg2 mix, POST a W/W+ .npy as --ws; an explorer page at /. Concurrent requests run as one batch "
      "per device, and each answer is the image of the same request made alone, bit for bit.");
  opts.option("host", "address to listen on (0.0.0.0 or :: for every interface)", "HOST", "127.0.0.1")
      .option("port", "TCP port (0: any free port; the listening line says which)", "N", "8080")
      .option("max-batch",
              "most requests run as one batch on a device (default: the backend's batch, 32 on a large GPU)", "N")
      .option("batch-window-ms",
              "how long a batch waits after its oldest request for more before it starts (0: at once; requests that "
              "arrive while a device computes form its next batch either way)",
              "MS", "0")
      .option("max-queue", "requests waiting at most; past it the answer is 503 with Retry-After", "N", "1024")
      .option("max-body", "largest POST body in bytes (413 beyond)", "BYTES", "1048576")
      .option("request-timeout-s", "a request not answered within this gets 503", "S", "30")
      .option("idle-timeout-s", "a connection without a whole request for this long is closed", "S", "15")
      .option("max-connections", "open connections at most (more are closed at once)", "N", "1024")
      .option("jobs", "threads encoding PNG and JPEG (default: the cores available)", "N")
      .option("jpeg-threads",
              "threads sharing one JPEG image, in strips joined by restart markers (default: the cores available, "
              "at most 16; 1: each image on one thread)",
              "N")
      .option("io-threads", "threads reading and writing connections (default: a quarter of the cores, 2 to 8)", "N");
  add_model_options(opts, /*with_batch=*/false, /*device_lists=*/true);
  opts.flag("q,quiet", "no access log lines (the listening line, warnings and errors stay)");
  const Args args = parse(opts, argc, argv);
  if (print_help_if_asked(opts, args)) return std::nullopt;

  ServeConfig c;
  c.http.host = get(args, "host");
  c.http.port = static_cast<int>(parse_int("port", get(args, "port"), 0, 65535));
  if (has(args, "max-batch"))
    c.max_batch_option = static_cast<int>(parse_int("max-batch", get(args, "max-batch"), 1, 1024));
  c.batch.window_ms = parse_float("batch-window-ms", get(args, "batch-window-ms"));
  if (c.batch.window_ms < 0 || c.batch.window_ms > 10000)
    fail(ErrorKind::invalid_argument, "--batch-window-ms: ", get(args, "batch-window-ms"),
         " is out of range [0, 10000]");
  c.batch.max_queue = static_cast<int>(parse_int("max-queue", get(args, "max-queue"), 1, 1 << 20));
  c.http.max_body = static_cast<size_t>(parse_int("max-body", get(args, "max-body"), 1, int64_t(1) << 30));
  c.http.request_timeout_s = parse_float("request-timeout-s", get(args, "request-timeout-s"));
  c.http.idle_timeout_s = parse_float("idle-timeout-s", get(args, "idle-timeout-s"));
  for (const char* o : {"request-timeout-s", "idle-timeout-s"}) {
    const double v = parse_float(o, get(args, o));
    if (v < 0.05 || v > 86400)
      fail(ErrorKind::invalid_argument, "--", o, ": ", get(args, o), " is out of range [0.05, 86400]");
  }
  c.http.max_connections = static_cast<int>(parse_int("max-connections", get(args, "max-connections"), 1, 1 << 20));
  c.http.io_threads = has(args, "io-threads")
                          ? static_cast<int>(parse_int("io-threads", get(args, "io-threads"), 1, 256))
                          : std::min(8, std::max(2, available_cores() / 4));
  c.jobs = has(args, "jobs") ? static_cast<int>(parse_int("jobs", get(args, "jobs"), 1, 1024)) : available_cores();
  c.jpeg_threads = has(args, "jpeg-threads")
                       ? static_cast<int>(parse_int("jpeg-threads", get(args, "jpeg-threads"), 1, 256))
                       : std::min(16, available_cores());
  c.quiet = has(args, "quiet");
  c.http.access_log = !c.quiet;
  c.gen_options = generator_options(args, /*device_lists=*/true);
  if (has(args, "device")) c.devices = parse_devices(get(args, "device"));
  if (const char* f = std::getenv("SG2_SERVE_FAULT_EVERY"))  // fault injection for tests and alerting checks
    c.batch.fault_every = static_cast<int>(parse_int("SG2_SERVE_FAULT_EVERY (environment)", f, 1, 1 << 30));
  const std::string path = network_path(args);
  c.network = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  c.model = load_network(args, "serve");  // the GPUs start meanwhile
  if (c.devices.empty()) c.devices = {Device::best_available()};
  return c;
}

std::string model_json(const ModelConfig& cfg, const ServeConfig& c, int max_batch) {
  nlohmann::json j;
  j["resolution"] = cfg.img_resolution;  // the larger side (block names); width / height: the image
  j["width"] = cfg.width();
  j["height"] = cfg.height();
  j["channels"] = cfg.img_channels;
  j["num_ws"] = cfg.num_ws;
  j["c_dim"] = cfg.c_dim;
  j["z_dim"] = cfg.z_dim;
  j["w_dim"] = cfg.w_dim;
  j["precision"] = to_string(c.gen_options.precision);
  j["batch_invariant"] = c.gen_options.batch_invariant;
  j["max_batch"] = max_batch;
  j["network"] = printable(c.network, 200);
  j["noise"] = cfg.synthesis.use_noise;
  std::vector<std::string> devices;
  for (const Device& d : c.devices) devices.push_back(d.str());
  j["devices"] = devices;
  j["version"] = version();
  return j.dump() + "\n";
}

/// The routes: what each path answers, and the hand-off of image requests to the batcher and the
/// encoders.
class Routes {
 public:
  Routes(const ModelConfig& cfg, serve::Batcher& batcher, boost::asio::thread_pool& encoders,
         boost::asio::thread_pool& strip_encoders, int jpeg_threads, serve::Metrics& metrics, std::string model_json,
         const std::atomic<bool>& stopping)
      : cfg_(cfg),
        batcher_(batcher),
        encoders_(encoders),
        strip_encoders_(strip_encoders),
        jpeg_threads_(jpeg_threads),
        metrics_(metrics),
        model_json_(std::move(model_json)),
        stopping_(stopping) {}

  void handle(HttpRequest&& req, serve::Reply reply) {
    const std::string& p = req.path;
    const bool get = req.method == "GET", post = req.method == "POST";
    auto only = [&](bool ok, const char* allow) {
      if (ok) return true;
      HttpResponse r =
          json_error(405, "method " + req.method + " is not allowed on " + p + " (allowed: " + allow + ")");
      r.headers.emplace_back("Allow", allow);
      reply(std::move(r));
      return false;
    };
    if (p == "/" || p == "/index.html") {
      if (!only(get, "GET")) return;
      HttpResponse r;
      r.content_type = "text/html; charset=utf-8";
      r.body = kExplorerHtml;
      return reply(std::move(r));
    }
    if (p == "/healthz") {
      if (!only(get, "GET")) return;
      HttpResponse r;
      r.status = stopping_ ? 503 : 200;
      r.body = stopping_ ? "{\"status\":\"stopping\"}\n" : "{\"status\":\"ok\"}\n";
      r.headers.emplace_back("Cache-Control", "no-store");
      return reply(std::move(r));
    }
    if (p == "/metrics") {
      if (!only(get, "GET")) return;
      HttpResponse r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = metrics_.text();
      r.headers.emplace_back("Cache-Control", "no-store");
      return reply(std::move(r));
    }
    if (p == "/v1/model") {
      if (!only(get, "GET")) return;
      HttpResponse r;
      r.body = model_json_;
      return reply(std::move(r));
    }
    if (p == "/v1/generate" || p == "/v1/ws") {
      const bool ws_only = p == "/v1/ws";
      if (!only(get || (post && !ws_only), ws_only ? "GET" : "GET, POST")) return;
      serve::ImageRequest ir;
      try {
        const serve::Query q = serve::parse_query(req.query);
        ir = post ? serve::parse_post(q, req.body, cfg_) : serve::parse_get(q, cfg_, ws_only);
      } catch (const Error& e) {
        return reply(json_error(400, e.what()));
      }
      return submit(std::move(ir), std::move(req), std::move(reply));
    }
    reply(json_error(404, "no such path: " + p + " (the API: /v1/generate, /v1/ws, /v1/model, /healthz, /metrics)"));
  }

 private:
  void submit(serve::ImageRequest&& ir, HttpRequest&& req, serve::Reply reply) {
    serve::Job job;
    job.cancelled = req.cancelled;
    const serve::Format format = ir.format;
    const int level = ir.png_level, quality = ir.jpeg_quality;
    const bool ws_only = ir.ws_only;
    const int num_ws = cfg_.num_ws, w_dim = cfg_.w_dim;
    job.request = std::move(ir);
    job.done = [this, reply, format, level, quality, ws_only, num_ws, w_dim](serve::JobResult&& res) {
      serve::Metrics* metrics = &metrics_;
      boost::asio::thread_pool* strips = &strip_encoders_;
      const int jpeg_threads = jpeg_threads_;
      auto shared = std::make_shared<serve::JobResult>(std::move(res));
      boost::asio::post(
          encoders_, [reply, shared, format, level, quality, ws_only, num_ws, w_dim, metrics, strips, jpeg_threads] {
            serve::JobResult& r = *shared;
            if (r.status != 200) {
              HttpResponse e = json_error(r.status, r.error);
              e.image_request = true;
              return reply(std::move(e));
            }
            HttpResponse out;
            out.image_request = true;
            const auto encode_start = std::chrono::steady_clock::now();
            try {
              if (ws_only) {
                const std::vector<uint8_t> npy = npy_bytes(Tensor({1, num_ws, w_dim}, std::move(r.ws)));
                out.body.assign(npy.begin(), npy.end());
                out.content_type = "application/octet-stream";
              } else if (format == serve::Format::png) {
                out.body = serve::encode_png_bytes(r.pixels, r.width, r.height, r.channels, level);
                out.content_type = "image/png";
              } else {
                out.body = serve::encode_jpeg_bytes(
                    r.pixels, r.width, r.height, r.channels, quality, serve::jpeg_strips(r.height, jpeg_threads),
                    [strips](std::function<void()> task) { boost::asio::post(*strips, std::move(task)); });
                out.content_type = "image/jpeg";
              }
            } catch (const Error& e) {
              r.hold.reset();
              HttpResponse err = json_error(500, std::string("encoding failed: ") + e.what());
              err.image_request = true;
              return reply(std::move(err));
            }
            r.hold.reset();  // the device's slot is free again before the bytes go out
            const double encode_ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - encode_start).count();
            out.headers.emplace_back("Server-Timing", serve::server_timing(r.queue_ms, r.compute_ms, encode_ms));
            metrics->stages(r.queue_ms / 1e3, r.compute_ms / 1e3, encode_ms / 1e3);
            out.headers.emplace_back("X-Sg2-Batch", std::to_string(r.batch));
            out.headers.emplace_back("X-Sg2-Device", r.device);
            out.log_note = "batch " + std::to_string(r.batch) + " " + r.device;
            reply(std::move(out));
          });
    };
    if (!batcher_.submit(std::move(job))) {
      HttpResponse r = stopping_ ? json_error(503, "the server is stopping")
                                 : json_error(503, "the queue is full (--max-queue): try again shortly");
      r.image_request = true;
      reply(std::move(r));
    }
  }

  const ModelConfig& cfg_;
  serve::Batcher& batcher_;
  boost::asio::thread_pool& encoders_;
  boost::asio::thread_pool& strip_encoders_;  // a JPEG's strips 1.. (tasks that never wait)
  int jpeg_threads_;
  serve::Metrics& metrics_;
  std::string model_json_;
  const std::atomic<bool>& stopping_;
};

int run_serve(int argc, char** argv) {
  // SIGINT and SIGTERM go to one thread (below) that stops the server gracefully: blocked here,
  // before any thread starts, so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that leaves mid-response is a write error, not a signal

  std::optional<ServeConfig> config = serve_config(argc, argv);
  if (!config) return 0;
  ServeConfig& c = *config;
  if (!c.gen_options.batch_invariant)
    say("serve", "warning",
        "--batch-invariance off: an answer may differ in its last bits from the same request made alone");
  std::vector<Generator> gens;
  for (const Device& d : c.devices) {
    GeneratorOptions o = c.gen_options;
    o.device = d;
    gens.push_back(open_generator(c.model, o));
  }
  c.model = Model();
  const ModelConfig& cfg = gens[0].config();
  // How big a batch fits is the engine's decision (Generator::plan_batch), for the generators that
  // share the first one's device; the CLI words a refusal.
  int sharing = 0;
  for (const Generator& g : gens) sharing += g.device().str() == gens[0].device().str();
  const BatchPlan plan = gens[0].plan_batch(0, c.max_batch_option, sharing);
  if (!plan.fits)
    fail(ErrorKind::invalid_argument, "--max-batch ", c.max_batch_option, " needs about ",
         (plan.bytes_per_image * c.max_batch_option * sharing) >> 20, " MiB of ", plan.memory, ", but ",
         plan.bytes_available >> 20, " MiB are available: use --max-batch ", std::max(1, plan.largest_fitting),
         " or less");
  const int max_batch = plan.batch;
  c.batch.max_batch = max_batch;
  std::vector<Generator*> gen_ptrs;
  for (Generator& g : gens) gen_ptrs.push_back(&g);

  serve::Metrics metrics;
  serve::Batcher batcher(gen_ptrs, c.batch, &metrics);
  batcher.start();  // pipes, and every batch size once (a GPU's graphs), before the first request
  // The strips' pool outlives the encoders' (declared first): an encoder waits for its strips.
  boost::asio::thread_pool strip_encoders(static_cast<size_t>(std::max(1, c.jpeg_threads - 1)));
  boost::asio::thread_pool encoders(static_cast<size_t>(c.jobs));
  std::atomic<bool> stopping{false};
  Routes routes(cfg, batcher, encoders, strip_encoders, c.jpeg_threads, metrics, model_json(cfg, c, max_batch),
                stopping);
  serve::HttpServer server(
      c.http, [&routes](HttpRequest&& r, serve::Reply reply) { routes.handle(std::move(r), std::move(reply)); },
      &metrics);

  std::atomic<bool> done{false};
  std::thread signals([&] {
    const timespec tick{0, 200 * 1000 * 1000};
    bool asked = false;
    std::chrono::steady_clock::time_point deadline;
    while (!done) {
      const int sig = sigtimedwait(&stop_signals, nullptr, &tick);
      if (sig == SIGINT || sig == SIGTERM) {
        if (asked) {
          std::fprintf(stderr, "sg2 serve: %s again: stopping now\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
          server.abort();
          continue;
        }
        asked = true;
        stopping = true;
        std::fprintf(stderr, "sg2 serve: %s: no new connections; finishing %lld requests in flight\n",
                     sig == SIGINT ? "SIGINT" : "SIGTERM", static_cast<long long>(server.in_flight()));
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>((c.http.request_timeout_s + 5) * 1000));
        server.stop();
      }
      if (asked && std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "sg2 serve: requests still open %.0f s after the signal: stopping now\n",
                     c.http.request_timeout_s + 5);
        server.abort();
        asked = false;  // once
        deadline = std::chrono::steady_clock::time_point::max();
      }
    }
  });

  if (!c.quiet) {
    std::string where;
    for (const Generator& g : gens) where += (where.empty() ? "" : ",") + g.device().str();
    std::fprintf(stderr, "sg2 serve: %s (%dx%d, %d %s, %s, %s), max batch %d, queue %d\n",
                 printable(c.network, 80).c_str(), cfg.width(), cfg.height(), cfg.img_channels,
                 cfg.img_channels == 1 ? "channel" : "channels", where.c_str(), to_string(c.gen_options.precision),
                 max_batch, c.batch.max_queue);
  }
  std::fprintf(stderr, "sg2 serve: listening on %s\n", server.url().c_str());
  try {
    server.run();
  } catch (...) {
    done = true;
    signals.join();
    throw;
  }
  done = true;
  signals.join();
  batcher.stop();
  encoders.join();
  strip_encoders.join();
  if (!c.quiet) std::fprintf(stderr, "sg2 serve: stopped\n");
  return 0;
}

}  // namespace

SG2_COMMAND(serve, 35, "serves images over HTTP, batching concurrent requests (docs/serving.md)", run_serve);

}  // namespace sg2::cli
