// Check macros: a failing library call reports the call, the code, the text and file:line.
#include "core/check.hpp"

#include <doctest/doctest.h>
#include <ucs/type/status.h>
#include <zstd.h>
extern "C" {
#include <libavformat/avformat.h>
}

#include <string>

namespace {
std::string failure_of(void (*fn)()) {
  try {
    fn();
  } catch (const msomni::call_error& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("zstd failures name the call, the error and the line") {
  const auto text = failure_of([] {
    const char garbage[16] = "not a zstd fram";
    char out[64];
    MSOMNI_CHECK_ZSTD(ZSTD_decompress(out, sizeof out, garbage, sizeof garbage));
  });
  CHECK(text.find("zstd call failed: ZSTD_decompress(out, sizeof out, garbage, sizeof garbage)") == 0);
  CHECK(text.find("Unknown frame descriptor") != std::string::npos);
  CHECK(text.find("check_test.cpp:") != std::string::npos);
}

TEST_CASE("FFmpeg failures carry av_strerror's text") {
  const auto text = failure_of([] {
    AVFormatContext* ctx = nullptr;
    MSOMNI_CHECK_FFMPEG(avformat_open_input(&ctx, "/nonexistent/clip.mp4", nullptr, nullptr));
  });
  CHECK(text.find("FFmpeg call failed: avformat_open_input") == 0);
  CHECK(text.find("No such file or directory") != std::string::npos);
}

TEST_CASE("UCX failures carry ucs_status_string's text and in-progress is not a failure") {
  CHECK(failure_of([] { MSOMNI_CHECK_UCX(UCS_INPROGRESS); }) == "no error");
  const auto text = failure_of([] { MSOMNI_CHECK_UCX(UCS_ERR_UNREACHABLE); });
  CHECK(text.find("UCX call failed: UCS_ERR_UNREACHABLE returned -6 (Destination is unreachable)") == 0);
}

TEST_CASE("successful calls pass their value through") {
  CHECK(MSOMNI_CHECK_ZSTD(ZSTD_compressBound(100)) > 100);
  CHECK(MSOMNI_CHECK_FFMPEG(7) == 7);
}
