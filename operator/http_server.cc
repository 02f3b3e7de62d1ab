#include "operator/http_server.h"

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

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

  void serve(tcp::socket& socket) {
    // A slow or silent client must not hold the probe endpoint: 5 s to send its request.
    struct timeval tv{5, 0};
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    beast::error_code ec;
    http::read(socket, buffer, req, ec);
    if (ec) return;
    http::response<http::string_body> res;
    res.version(req.version());
    res.keep_alive(false);
    const std::string target(req.target());
    const std::string path = target.substr(0, target.find('?'));
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
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
    if (res.find(http::field::content_type) == res.end()) res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.prepare_payload();
    http::write(socket, res, ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }

  void run() {
    while (!stopping.load()) {
      tcp::socket socket(io);
      beast::error_code ec;
      acceptor.accept(socket, ec);
      if (ec) {
        if (stopping.load()) return;
        continue;
      }
      try {
        serve(socket);
      } catch (const std::exception& e) {
        spdlog::warn("http: {}", e.what());
      }
    }
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
}

HttpServer::~HttpServer() {
  impl_->stopping = true;
  beast::error_code ec;
  // Wake the blocking accept: shut the listening socket down, then close it.
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  impl_->acceptor.close(ec);
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace valley
