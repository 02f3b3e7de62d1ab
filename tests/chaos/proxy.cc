#include "tests/chaos/proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace valley::chaos {
namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

bool send_all(int fd, const char* data, ssize_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, data, static_cast<size_t>(n), MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= w;
  }
  return true;
}

}  // namespace

Proxy::Proxy(std::string upstream_host, int upstream_port) : host_(std::move(upstream_host)), upstream_port_(upstream_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(0);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0)
    throw std::runtime_error("proxy: cannot listen on 127.0.0.1");
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

Proxy::~Proxy() {
  stop_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  acceptor_.join();
  std::lock_guard lock(mu_);
  for (auto& t : connections_) t.join();
}

void Proxy::drop_for(std::chrono::milliseconds d) {
  drop_until_ms_ = steady_ms() + d.count();
  ++generation_;
}

void Proxy::stall_open() {
  stalled_below_ = generation_.load() + 1;
  ++generation_;
}

bool Proxy::dropping() const { return steady_ms() < drop_until_ms_.load(); }

void Proxy::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    int client = ::accept(listen_fd_, nullptr, nullptr);
    if (client < 0) continue;
    if (dropping()) {  // the network is down: the connection is refused as it opens
      ::close(client);
      continue;
    }
    std::lock_guard lock(mu_);
    connections_.emplace_back([this, client] { pipe(client); });
  }
}

void Proxy::pipe(int client) {
  const uint64_t generation = generation_;
  int upstream = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(upstream_port_);
  if (::inet_pton(AF_INET, host_.c_str(), &a.sin_addr) != 1) a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(upstream, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(upstream);
    ::close(client);
    return;
  }
  pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
  char buf[64 * 1024];
  while (!stop_ && (generation_ == generation || generation < stalled_below_)) {
    if (generation < stalled_below_) {  // wedged: hold the connection open, forward nothing
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    if (::poll(fds, 2, 200) <= 0) continue;
    // Stalled while it waited: what just arrived is held too, not forwarded.
    if (generation < stalled_below_) continue;
    bool closed = false;
    for (int i = 0; i < 2 && !closed; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, 0);
      if (n <= 0) {
        closed = true;
        break;
      }
      if (int64_t d = delay_ms_.load(); d > 0) std::this_thread::sleep_for(std::chrono::milliseconds(d));
      if (!send_all(fds[1 - i].fd, buf, n)) closed = true;
    }
    if (closed) break;
  }
  ::close(upstream);
  ::close(client);
}

}  // namespace valley::chaos
