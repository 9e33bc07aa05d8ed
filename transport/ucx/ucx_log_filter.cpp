// The UCX log filter (see ucx_log_filter.hpp).
#include "ucx/ucx_log_filter.hpp"

#include "core/log.hpp"

#include <ucs/debug/log_def.h>

#include <array>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string_view>

namespace msomni::transport {

namespace {

std::atomic<int> g_closing{0};
std::atomic<uint64_t> g_quieted{0};

// What a peer that has already gone looks like to a flush (ucs_status_string texts).
bool peer_gone(std::string_view text) {
  static constexpr std::array<std::string_view, 4> signs{"Endpoint timeout", "Connection reset by remote peer",
                                                         "Destination is unreachable", "Remote access error"};
  for (const auto s : signs)
    if (text.find(s) != std::string_view::npos) return true;
  return false;
}

ucs_log_func_rc_t filter(const char* file, unsigned line, const char*, ucs_log_level_t level,
                         const ucs_log_component_config_t*, const char* format, va_list ap) {
  if (level > UCS_LOG_LEVEL_WARN || g_closing.load(std::memory_order_acquire) == 0) return UCS_LOG_FUNC_RC_CONTINUE;
  std::array<char, 512> text{};
  va_list copy;
  va_copy(copy, ap);
  std::vsnprintf(text.data(), text.size(), format, copy);
  va_end(copy);
  if (!peer_gone(text.data())) return UCS_LOG_FUNC_RC_CONTINUE;
  g_quieted.fetch_add(1, std::memory_order_relaxed);
  MSOMNI_LOG(debug, "ucx") << "while closing (the peer had already gone; nothing was owed to it): " << text.data()
                           << " [" << (file ? file : "?") << ":" << line << "]";
  return UCS_LOG_FUNC_RC_STOP;
}

}  // namespace

void install_ucx_log_filter() {
  static std::once_flag once;
  std::call_once(once, [] { ucs_log_push_handler(filter); });
}

ucx_closing_scope::ucx_closing_scope() { g_closing.fetch_add(1, std::memory_order_acq_rel); }
ucx_closing_scope::~ucx_closing_scope() { g_closing.fetch_sub(1, std::memory_order_acq_rel); }

uint64_t ucx_close_errors_quieted() { return g_quieted.load(std::memory_order_relaxed); }

}  // namespace msomni::transport
