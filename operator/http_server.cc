#include "operator/http_server.h"

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>

namespace valley {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpServer::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  HttpEndpoints endpoints;
  std::atomic<bool> stopping{false};
  std::thread thread;
  // Connections being served: their sockets' descriptors and the time each must be done by. A
  // reaper shuts a socket past its deadline, which ends its blocked read or write: a client that
  // trickles its request or never reads the answer holds one of kMaxConnections, for kDeadline.
  static constexpr int kMaxConnections = 8;
  static constexpr std::chrono::seconds kDeadline{5};
  std::mutex mu;
  std::condition_variable cv;
  std::map<int, std::chrono::steady_clock::time_point> serving;  // fd -> deadline
  std::thread reaper;
  std::mutex handlers_mu;  // the endpoints' functions run one at a time, as they always have

  void answer(http::verb method, const std::string& path, http::response<http::string_body>& res) {
    if (method != http::verb::get && method != http::verb::head) {
      res.result(http::status::method_not_allowed);
      res.body() = "GET only\n";
    } else if (path == "/metrics" && endpoints.metrics) {
      res.result(http::status::ok);
      res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      res.body() = endpoints.metrics();
    } else if (path == "/healthz" || path == "/livez") {
      res.result(http::status::ok);
      res.body() = "ok\n";
    } else if (path == "/readyz") {
      std::string why;
      bool ok = !endpoints.ready || endpoints.ready(&why);
      res.result(ok ? http::status::ok : http::status::service_unavailable);
      res.body() = ok ? "ok\n" : "not ready: " + why + "\n";
    } else {
      res.result(http::status::not_found);
      res.body() = "not found: /metrics, /healthz, /readyz\n";
    }
  }

  void serve(tcp::socket& socket) {
    beast::flat_buffer buffer;
    http::request_parser<http::string_body> parser;
    parser.header_limit(8 * 1024);
    parser.body_limit(0);  // probes and scrapes carry no body
    beast::error_code ec;
    http::read(socket, buffer, parser, ec);
    if (ec) return;
    const auto& req = parser.get();
    http::response<http::string_body> res;
    res.version(req.version());
    res.keep_alive(false);
    const std::string target(req.target());
    const std::string path = target.substr(0, target.find('?'));
    {
      std::lock_guard handlers(handlers_mu);  // only while the answer is made, never while it is sent
      answer(req.method(), path, res);
    }
    if (res.find(http::field::content_type) == res.end()) res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.prepare_payload();
    http::write(socket, res, ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }

  void serve_one(tcp::socket socket) {
    const int fd = socket.native_handle();
    try {
      serve(socket);
    } catch (const std::exception& e) {
      spdlog::warn("http: {}", e.what());
    }
    std::lock_guard lock(mu);
    serving.erase(fd);
    beast::error_code ec;
    socket.close(ec);  // under the lock: the reaper never shuts a descriptor reused meanwhile
    cv.notify_all();   // under the lock too: once it is released, the server may be gone
  }

  void reap() {
    std::unique_lock lock(mu);
    for (;;) {
      const bool stop = stopping.load();
      if (stop && serving.empty()) return;
      const auto now = std::chrono::steady_clock::now();
      for (const auto& [fd, deadline] : serving)
        if (stop || deadline <= now) ::shutdown(fd, SHUT_RDWR);
      cv.wait_for(lock, std::chrono::milliseconds(200));
    }
  }

  void run() {
    while (!stopping.load()) {
      tcp::socket socket(io);
      beast::error_code ec;
      acceptor.accept(socket, ec);
      if (ec) {
        if (stopping.load()) break;
        continue;
      }
      std::unique_lock lock(mu);
      if (static_cast<int>(serving.size()) >= kMaxConnections) {
        lock.unlock();
        socket.close(ec);  // busy: the client tries again (a probe's next period)
        continue;
      }
      serving[socket.native_handle()] = std::chrono::steady_clock::now() + kDeadline;
      lock.unlock();
      std::thread([this, s = std::move(socket)]() mutable { serve_one(std::move(s)); }).detach();
    }
    // Stopping: wait for the connections still being served (the reaper ends them by their deadline).
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return serving.empty(); });
  }
};

HttpServer::HttpServer(const std::string& address, HttpEndpoints endpoints) : impl_(std::make_unique<Impl>()) {
  impl_->endpoints = std::move(endpoints);
  auto colon = address.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("bind address \"" + address + "\" is not host:port");
  std::string host = address.substr(0, colon);
  int port = std::stoi(address.substr(colon + 1));
  if (host.empty()) host = "0.0.0.0";
  tcp::endpoint ep(asio::ip::make_address(host), static_cast<unsigned short>(port));
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
  impl_->acceptor.bind(ep);
  impl_->acceptor.listen();
  port_ = impl_->acceptor.local_endpoint().port();
  impl_->thread = std::thread([this] { impl_->run(); });
  impl_->reaper = std::thread([this] { impl_->reap(); });
}

HttpServer::~HttpServer() {
  impl_->stopping = true;
  beast::error_code ec;
  // Wake the blocking accept: shut the listening socket down, then close it.
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  impl_->acceptor.close(ec);
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->cv.notify_all();
  if (impl_->reaper.joinable()) impl_->reaper.join();
}

}  // namespace valley
