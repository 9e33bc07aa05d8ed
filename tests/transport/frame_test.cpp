// Frame header and envelope: round trips and every decode error.
#include "frame/frame.hpp"

#include <doctest/doctest.h>

#include <cstring>

using namespace msomni::transport;

TEST_CASE("headers round-trip") {
  frame_header h{frame_kind::actor_message, 0, 11, 22, 33, 44};
  auto bytes = encode_header(h);
  decode_error why;
  auto back = decode_header(bytes, why);
  REQUIRE(back);
  CHECK(*back == h);
  CHECK(why == decode_error::none);
}

TEST_CASE("each malformed header is refused with its reason") {
  decode_error why;
  auto good = encode_header({frame_kind::hello, 0, 0, 0, 0, 5});
  CHECK_FALSE(decode_header(std::span(good).first(39), why));
  CHECK(why == decode_error::short_header);
  auto bad = good;
  bad[0] = std::byte{0};
  CHECK_FALSE(decode_header(bad, why));
  CHECK(why == decode_error::bad_magic);
  bad = good;
  bad[4] = std::byte{9};
  CHECK_FALSE(decode_header(bad, why));
  CHECK(why == decode_error::bad_version);
  bad = good;
  bad[5] = std::byte{99};
  CHECK_FALSE(decode_header(bad, why));
  CHECK(why == decode_error::unknown_kind);
  auto big = encode_header({frame_kind::hello, 0, 0, 0, 0, max_node_name + 1});
  CHECK_FALSE(decode_header(big, why));
  CHECK(why == decode_error::payload_too_large);
  auto ka = encode_header({frame_kind::keepalive, 0, 0, 0, 0, 1});
  CHECK_FALSE(decode_header(ka, why));
}

TEST_CASE("envelopes round-trip and refuse truncation") {
  const std::byte msg[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
  auto env = encode_envelope("sink", msg);
  decode_error why;
  auto back = decode_envelope(env, why);
  REQUIRE(back);
  CHECK(back->receiver_name == "sink");
  CHECK(back->message_bytes.size() == 3);
  CHECK_FALSE(decode_envelope(std::span(env).first(5), why));
  CHECK(why == decode_error::bad_envelope);
  CHECK_FALSE(decode_envelope(std::span(env).first(1), why));
  auto no_msg = encode_envelope("sink", {});
  CHECK_FALSE(decode_envelope(no_msg, why));
}
