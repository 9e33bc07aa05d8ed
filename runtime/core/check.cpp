// call_error and the failure path of the check macros (see check.hpp).
#include "core/check.hpp"

extern "C" {
#include <libavutil/error.h>
}

namespace msomni {

namespace {
std::string describe(const std::string& library, const std::string& call, long code,
                     const std::string& text, const char* file, int line) {
  std::string f(file);
  if (auto slash = f.rfind('/'); slash != std::string::npos) f = f.substr(slash + 1);
  return library + " call failed: " + call + " returned " + std::to_string(code) + " (" + text +
         ") at " + f + ":" + std::to_string(line);
}
}  // namespace

call_error::call_error(std::string library, std::string call, long code, std::string text,
                       const char* file, int line)
    : std::runtime_error(describe(library, call, code, text, file, line)),
      library_(std::move(library)),
      code_(code) {}

void fail_call(const char* library, const char* call, long code, const char* text,
               const char* file, int line) {
  throw call_error(library, call, code, text ? text : "", file, line);
}

std::string ffmpeg_error_text(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

}  // namespace msomni
