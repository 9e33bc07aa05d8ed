// Check macros for calls into CUDA, NCCL, UCX, FFmpeg and zstd. A failed call throws
// msomni::call_error whose message names the call, the library's error code and text, and
// the file:line it was made from. The macros expand only where the library header is
// included, so this header itself depends on none of them.
#pragma once

#include <stdexcept>
#include <string>

namespace msomni {

class call_error : public std::runtime_error {
 public:
  call_error(std::string library, std::string call, long code, std::string text, const char* file,
             int line);
  const std::string& library() const noexcept { return library_; }
  long code() const noexcept { return code_; }

 private:
  std::string library_;
  long code_;
};

[[noreturn]] void fail_call(const char* library, const char* call, long code, const char* text,
                            const char* file, int line);

// Text of an FFmpeg error code (av_strerror), kept out of line so FFmpeg headers stay local.
std::string ffmpeg_error_text(int code);

}  // namespace msomni

#define MSOMNI_CHECK_CUDA(call)                                                           \
  do {                                                                                    \
    const cudaError_t msomni_rc_ = (call);                                                \
    if (msomni_rc_ != cudaSuccess)                                                        \
      ::msomni::fail_call("CUDA", #call, static_cast<long>(msomni_rc_),                   \
                          cudaGetErrorString(msomni_rc_), __FILE__, __LINE__);            \
  } while (0)

#define MSOMNI_CHECK_NCCL(call)                                                           \
  do {                                                                                    \
    const ncclResult_t msomni_rc_ = (call);                                               \
    if (msomni_rc_ != ncclSuccess)                                                        \
      ::msomni::fail_call("NCCL", #call, static_cast<long>(msomni_rc_),                   \
                          ncclGetErrorString(msomni_rc_), __FILE__, __LINE__);            \
  } while (0)

#define MSOMNI_CHECK_UCX(call)                                                            \
  do {                                                                                    \
    const ucs_status_t msomni_rc_ = (call);                                               \
    if (msomni_rc_ != UCS_OK && msomni_rc_ != UCS_INPROGRESS)                             \
      ::msomni::fail_call("UCX", #call, static_cast<long>(msomni_rc_),                    \
                          ucs_status_string(msomni_rc_), __FILE__, __LINE__);             \
  } while (0)

// FFmpeg calls return a negative AVERROR on failure; the value is returned on success.
#define MSOMNI_CHECK_FFMPEG(call)                                                         \
  ([&]() {                                                                                \
    const int msomni_rc_ = (call);                                                        \
    if (msomni_rc_ < 0)                                                                   \
      ::msomni::fail_call("FFmpeg", #call, msomni_rc_,                                    \
                          ::msomni::ffmpeg_error_text(msomni_rc_).c_str(), __FILE__,      \
                          __LINE__);                                                      \
    return msomni_rc_;                                                                    \
  }())

// zstd calls return a size or an error code; the size is returned on success.
#define MSOMNI_CHECK_ZSTD(call)                                                           \
  ([&]() {                                                                                \
    const size_t msomni_rc_ = (call);                                                     \
    if (ZSTD_isError(msomni_rc_))                                                         \
      ::msomni::fail_call("zstd", #call, -static_cast<long>(msomni_rc_), \
                          ZSTD_getErrorName(msomni_rc_), __FILE__, __LINE__);             \
    return msomni_rc_;                                                                    \
  }())
