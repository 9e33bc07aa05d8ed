// Remote sources against real servers on loopback: an HTTP server of shards (the project's
// fault proxy serving a directory, byte ranges and all) and s3rver. The storage layer must
// give the same listing order and the same bytes as the shards on disk, so a pipeline over a
// remote source yields the same batches and resumes from a saved position the same way;
// each sample costs one ranged GET of its own tar record; SigV4 matches the AWS
// documentation's example; the cache stays under its bound, survives a restart verified, and
// deletes nothing it did not create; faults are retried by cause without losing or repeating
// a sample, and a store that stays away ends the read with the reason.
#include "data_test_support.hpp"
#include "remote_io.hpp"
#include "remote_servers.hpp"
#include "remote_storage.hpp"
#include "shard_cache.hpp"
#include "support/test_skip.hpp"
#include "source_reader.hpp"

#include <doctest/doctest.h>

#include <sys/resource.h>

#include <csignal>
#include <deque>
#include <set>
#include <fstream>

using namespace msomni;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> subs{"images", "videos", "text"};

// A shards.txt beside every source's shards: what an http(s):// directory uri reads.
void write_shard_lists(const fs::path& root) {
  for (const auto& sub : subs) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(root / sub))
      if (e.path().extension() == ".tar") names.push_back(e.path().filename().string());
    std::sort(names.rbegin(), names.rend());  // any order: the storage sorts
    std::ofstream out(root / sub / "shards.txt");
    out << "# shards of " << sub << "\n";
    for (const auto& n : names) out << n << "\n";
  }
}

config::job_config with_uris(config::job_config c, const std::string& base, const std::string& tail) {
  for (size_t i = 0; i < c.data.sources.size(); ++i) c.data.sources[i].uri = base + "/" + subs[i] + tail;
  return c;
}

std::string file_name(const std::string& p) { return p.substr(p.rfind('/') + 1); }

std::vector<uint8_t> all_bytes(const data::byte_source& s) {
  std::vector<uint8_t> b(s.size());
  b.resize(s.read_at(0, b.data(), b.size()));
  return b;
}

// Every shard of `remote` has the name, size, members and bytes of its local namesake.
void check_same_shards(const data::storage& st, const std::string& local, const std::string& remote) {
  const auto a = st.list_shards(local), b = st.list_shards(remote);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(b[i]);
    CHECK(file_name(a[i]) == file_name(b[i]));
    const auto fa = st.open(a[i]), fb = st.open(b[i]);
    REQUIRE(fb);
    CHECK(fa->size() == fb->size());
    const auto la = data::list_tar(*fa), lb = data::list_tar(*fb);
    REQUIRE(la.members.size() == lb.members.size());
    for (size_t m = 0; m < la.members.size(); ++m) {
      CHECK(la.members[m].name == lb.members[m].name);
      CHECK(la.members[m].data_offset == lb.members[m].data_offset);
    }
    CHECK(all_bytes(*fa) == all_bytes(*fb));
  }
}

std::vector<data::micro_batch> batches(data::data_pipeline& p, size_t n) {
  std::vector<data::micro_batch> out;
  for (size_t i = 0; i < n; ++i) out.push_back(p.next_batch());
  return out;
}

// The remote job's batches equal the local job's, and a remote pipeline restored from a
// position saved after `k` batches continues with the same batches.
void check_same_batches(const config::job_config& local, const config::job_config& remote, size_t n, size_t k) {
  data::data_pipeline a(data::make_pipeline_setup(local), testing::slot(0, 1));
  const auto expected = batches(a, n);
  data::data_pipeline b(data::make_pipeline_setup(remote), testing::slot(0, 1));
  const auto got = batches(b, k);
  for (size_t i = 0; i < k; ++i) REQUIRE(got[i] == expected[i]);
  const auto state = b.save_state();
  data::data_pipeline c(data::make_pipeline_setup(remote), testing::slot(0, 1));
  c.restore_state(state);
  const auto tail = batches(c, n - k);
  for (size_t i = 0; i < tail.size(); ++i) REQUIRE(tail[i] == expected[k + i]);
  const auto ca = a.cursors(), cc = c.cursors();
  REQUIRE(ca.size() == cc.size());
  for (size_t s = 0; s < ca.size(); ++s) {
    CHECK(ca[s].epoch == cc[s].epoch);
    CHECK(ca[s].samples_read == cc[s].samples_read);
  }
}

struct counters_snapshot {
  uint64_t requests, bytes, server, throttled, reset, timeout, short_body, hits, misses;
};
counters_snapshot snap() {
  auto& c = data::remote_counters();
  return {c.requests, c.bytes, c.retry_server, c.retry_throttled, c.retry_reset, c.retry_timeout, c.retry_short,
          c.cache_hits, c.cache_misses};
}

uint64_t padded(uint64_t n) { return (n + 511) / 512 * 512; }

struct env_var {
  std::string name;
  env_var(std::string n, const std::string& v) : name(std::move(n)) { ::setenv(name.c_str(), v.c_str(), 1); }
  ~env_var() { ::unsetenv(name.c_str()); }
};

// Uploads every shard of root/<sub> to s3://bucket/data/<sub>/ with a signed PUT.
void upload(const fs::path& root, const std::string& endpoint, const std::string& bucket) {
  for (const auto& sub : subs)
    for (const auto& e : fs::directory_iterator(root / sub)) {
      if (e.path().extension() != ".tar") continue;
      const auto r = testing::put_object(endpoint + "/" + bucket + "/data/" + sub + "/" + e.path().filename().string(),
                                         e.path());
      REQUIRE_MESSAGE(r.status == 200, r.body);
    }
}

data::remote_io_settings s3_settings(const std::string& endpoint) {
  data::remote_io_settings s;
  s.s3_endpoint = endpoint;
  s.s3_region = "us-east-1";
  return s;
}

// 600 small images in two shards of 300: each shard more samples than one run holds.
fs::path run_dataset(const fs::path& dir) {
  auto o = testing::tiny_dataset(dir);
  o.images = 600;
  o.videos = 0;
  o.texts = 0;
  o.samples_per_shard = 300;
  gen::write_dataset(o);
  std::ofstream list(dir / "images" / "shards.txt");
  for (const auto& e : fs::directory_iterator(dir / "images"))
    if (e.path().extension() == ".tar") list << e.path().filename().string() << "\n";
  return dir / "images";
}

// The bytes of every member's tar record (header and padded data) of the shards at `local`.
uint64_t record_bytes(const data::storage& st, const std::string& local) {
  uint64_t records = 0;
  for (const auto& p : st.list_shards(local))
    for (const auto& m : data::list_tar(*st.open(p)).members) records += 512 + padded(m.size);
  return records;
}

// The first `n` draws of source 0, read the way own_reader reads: the upcoming draws hinted
// ahead before each read.
std::vector<data::raw_sample> read_ahead(data::sample_fetcher& f, uint64_t n) {
  std::deque<uint64_t> upcoming;
  for (uint64_t d = 0; d < n; ++d) upcoming.push_back(d);
  std::vector<data::raw_sample> out;
  while (!upcoming.empty()) {
    f.hint_ahead(0, upcoming);
    out.push_back(f.read(0, upcoming.front(), true));
    upcoming.pop_front();
  }
  return out;
}

// `got` holds the first draws of source 0 as `local` reads them: in order, each sample once,
// the same bytes.
void check_same_samples(const std::vector<data::raw_sample>& got, data::sample_fetcher& local) {
  std::set<std::string> keys;
  for (uint64_t d = 0; d < got.size(); ++d) {
    const auto want = local.read(0, d, true);
    CAPTURE(d);
    CHECK_FALSE(got[d].bad);
    CHECK(got[d].key == want.key);
    CHECK(got[d].media == want.media);
    CHECK(got[d].caption == want.caption);
    keys.insert(got[d].key);
  }
  CHECK(keys.size() == got.size());
}

std::shared_ptr<data::source_list> image_source(const data::storage& st, const std::string& uri) {
  auto sources = std::make_shared<data::source_list>();
  sources->emplace_back(0, data::source_spec{"images", uri, modality::image}, 3, true, st);
  return sources;
}

}  // namespace

TEST_CASE("an http:// source lists and reads like its shards on disk, and a pipeline over it gives the same batches and resumes") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  write_shard_lists(dir.path());
  testing::fault_server http(dir.path().string(), false);
  data::set_remote_io({});
  const auto st = data::make_local_storage();
  for (const auto& sub : subs) {
    CAPTURE(sub);
    check_same_shards(*st, (dir.path() / sub).string(), http.url() + "/" + sub + "/");
    // A shard list named directly, and a single shard, name the same shards.
    CHECK(st->list_shards(http.url() + "/" + sub + "/shards.txt") == st->list_shards(http.url() + "/" + sub + "/"));
  }
  CHECK(st->list_shards(http.url() + "/nowhere/").empty());
  const auto local = testing::tiny_job(dir.path());
  const uint64_t used0 = data::remote_counters().prefetch_used;
  check_same_batches(local, with_uris(local, http.url(), "/"), 24, 9);
  CHECK(data::remote_counters().prefetch_used > used0);  // the reader's next draws were read ahead
  auto one_at_a_time = with_uris(local, http.url(), "/");
  one_at_a_time.io.remote_prefetch = 0;
  const uint64_t issued0 = data::remote_counters().prefetch_issued;
  check_same_batches(local, one_at_a_time, 12, 5);
  CHECK(data::remote_counters().prefetch_issued == issued0);
}

TEST_CASE("each remote sample costs one ranged GET of no more than its own tar record") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  write_shard_lists(dir.path());
  testing::fault_server http(dir.path().string(), false);
  data::set_remote_io({});
  const auto st = data::make_local_storage();
  for (const auto& [sub, kind] : {std::pair{std::string("images"), modality::image},
                                  std::pair{std::string("videos"), modality::video},
                                  std::pair{std::string("text"), modality::text}}) {
    CAPTURE(sub);
    auto sources = std::make_shared<data::source_list>();
    const auto before_index = snap();
    sources->emplace_back(0, data::source_spec{sub, http.url() + "/" + sub + "/", kind}, 3, true, *st);
    const auto after_index = snap();
    uint64_t records = 0, members = 0;
    for (const auto& p : st->list_shards((dir.path() / sub).string())) {
      for (const auto& m : data::list_tar(*st->open(p)).members) {
        records += 512 + padded(m.size);
        members += m.size;
      }
    }
    data::sample_fetcher f(sources, st);
    const uint64_t n = (*sources)[0].samples_per_epoch();
    uint64_t payload = 0;
    for (uint64_t d = 0; d < n; ++d) {
      const auto s = f.read(0, d, true);
      CHECK_FALSE(s.bad);
      payload += s.media.size() + s.caption.size();
    }
    const auto after = snap();
    MESSAGE(sub << ": index " << after_index.requests - before_index.requests << " requests "
                << after_index.bytes - before_index.bytes << " bytes; " << n << " samples: "
                << after.requests - after_index.requests << " requests " << after.bytes - after_index.bytes
                << " bytes for " << payload << " payload bytes (" << records << " record bytes)");
    CHECK(after.requests - after_index.requests == n);     // one GET per sample
    CHECK(after.bytes - after_index.bytes <= records);      // never past its tar record
    CHECK(double(after.bytes - after_index.bytes) <= 1.1 * double(payload) + 1024.0 * double(n));
  }
}

TEST_CASE("SigV4 signs the AWS documentation's example GET Object request to its published signature") {
  // docs.aws.amazon.com, "Signature Calculations for the Authorization Header: Transferring
  // Payload in a Single Chunk", example GET Object.
  data::sigv4_input in;
  in.method = "GET";
  in.host = "examplebucket.s3.amazonaws.com";
  in.path = "/test.txt";
  in.amz_date = "20130524T000000Z";
  in.region = "us-east-1";
  in.payload_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  in.headers = {{"Range", "bytes=0-9"},
                {"x-amz-content-sha256", in.payload_hash},
                {"x-amz-date", in.amz_date}};
  const data::sigv4_credentials cred{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  CHECK(data::sigv4_canonical_request(in) ==
        "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
        "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
        "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(data::sigv4_string_to_sign(in) ==
        "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  CHECK(data::sigv4_authorization(in, cred) ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");

  // The same page's GET Bucket (List Objects) example: a query, sorted and encoded.
  data::sigv4_input list;
  list.method = "GET";
  list.host = "examplebucket.s3.amazonaws.com";
  list.path = "/";
  list.query = {{"prefix", "J"}, {"max-keys", "2"}};
  list.amz_date = "20130524T000000Z";
  list.region = "us-east-1";
  list.payload_hash = in.payload_hash;
  list.headers = {{"x-amz-content-sha256", in.payload_hash}, {"x-amz-date", list.amz_date}};
  CHECK(data::sigv4_authorization(list, cred) ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
        "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST_CASE("an s3:// source on s3rver lists and reads like its shards on disk, and a pipeline over it gives the same batches") {
  if (const auto why = testing::s3rver_missing(); !why.empty()) MSOMNI_SKIP_TEST(why);
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  testing::s3rver_server s3("shards");
  env_var key("AWS_ACCESS_KEY_ID", "S3RVER"), secret("AWS_SECRET_ACCESS_KEY", "S3RVER");
  data::set_remote_io(s3_settings(s3.url()));
  upload(dir.path(), s3.url(), "shards");
  const auto st = data::make_local_storage();
  for (const auto& sub : subs) {
    CAPTURE(sub);
    check_same_shards(*st, (dir.path() / sub).string(), "s3://shards/data/" + sub);
    CHECK(st->list_shards("s3://shards/data/" + sub + "/") == st->list_shards("s3://shards/data/" + sub));
  }
  CHECK(st->list_shards("s3://shards/data").empty());  // only *.tar directly under the prefix
  auto local = testing::tiny_job(dir.path());
  auto remote = with_uris(local, "s3://shards/data", "");
  remote.io.s3_endpoint = s3.url();
  check_same_batches(local, remote, 16, 5);

  // An access key the store does not know is refused with its reason (s3rver checks the key
  // exists; it does not verify signatures: the AWS example above checks those).
  env_var wrong("AWS_ACCESS_KEY_ID", "NOT-A-KEY");
  data::set_remote_io(s3_settings(s3.url()));
  try {
    (void)data::make_remote_storage()->list_shards("s3://shards/data/images");
    FAIL("a wrong secret listed the bucket");
  } catch (const std::exception& e) {
    CHECK(std::string(e.what()).find("403") != std::string::npos);
    CHECK(std::string(e.what()).find("S3RVER") == std::string::npos);  // no secret in the reason
  }
}

TEST_CASE("the shard cache stays under its bound, evicts least recently used shards, survives a restart verified and deletes only its own files") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  write_shard_lists(dir.path());
  testing::fault_server http(dir.path().string(), false);
  const fs::path cache = dir.path() / "cache";
  fs::create_directories(cache);
  std::ofstream(cache / "mine.txt") << "not the cache's";  // a file the cache must leave alone
  const auto st = data::make_remote_storage();
  const std::string images = http.url() + "/images/";
  uint64_t largest = 0;
  for (const auto& p : data::make_local_storage()->list_shards((dir.path() / "images").string()))
    largest = std::max<uint64_t>(largest, fs::file_size(p));

  data::remote_io_settings s;
  s.cache_dir = cache.string();
  s.cache_bytes = largest - 1;
  data::set_remote_io(s);
  CHECK_THROWS_WITH_AS(st->list_shards(images), doctest::Contains("io.cache_bytes"), std::invalid_argument);

  s.cache_bytes = largest + largest / 2;  // room for about one shard
  data::set_remote_io(s);
  auto& c = data::remote_counters();
  const uint64_t evictions0 = c.cache_evictions;
  auto sources = std::make_shared<data::source_list>();
  sources->emplace_back(0, data::source_spec{"images", images, modality::image}, 3, false, *st);
  const uint64_t n = (*sources)[0].samples_per_epoch();
  std::vector<std::vector<uint8_t>> first;
  {
    data::sample_fetcher f(sources, st);
    for (uint64_t d = 0; d < n; ++d) {
      first.push_back(f.read(0, d, true).media);
      CHECK(c.cache_bytes <= s.cache_bytes);
    }
  }
  CHECK(c.cache_evictions > evictions0);
  const std::string slot = data::remote_cache_slot_dir();
  REQUIRE_FALSE(slot.empty());

  // A restart: a new cache over the same directory finds the last shard's bytes and serves
  // them after verifying them; a damaged range is dropped and read again from the store.
  s.cache_bytes += 1;  // another bound: the storage opens the directory afresh
  data::set_remote_io(s);
  {
    const auto hits0 = c.cache_hits.load();
    data::sample_fetcher f(sources, st);
    for (uint64_t d = n - 2; d < n; ++d) CHECK(f.read(0, d, true).media == first[d]);
    CHECK(c.cache_hits - hits0 == 2);
  }
  for (const auto& e : fs::directory_iterator(slot))
    if (e.path().extension() == ".data") {
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(std::streamoff(fs::file_size(e.path()) - 3));
      f.put('X');
    }
  s.cache_bytes += 1;
  data::set_remote_io(s);
  {
    const auto rejected0 = c.cache_rejected.load(), hits0 = c.cache_hits.load();
    data::sample_fetcher f(sources, st);
    CHECK(f.read(0, n - 1, true).media == first[n - 1]);
    CHECK(c.cache_rejected > rejected0);
    CHECK(c.cache_hits == hits0);
  }
  CHECK(testing::slurp(cache / "mine.txt") == "not the cache's");
  for (const auto& e : fs::recursive_directory_iterator(cache)) {
    const auto name = e.path().filename().string();
    const bool ours = name == "mine.txt" || name.rfind("slot-", 0) == 0 || name.size() > 16;
    CHECK_MESSAGE(ours, name);
  }
  data::set_remote_io({});
}

TEST_CASE("a full cache disk is counted and logged, and reads go on uncached") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  write_shard_lists(dir.path());
  testing::fault_server http(dir.path().string(), false);
  data::remote_io_settings s;
  s.cache_dir = (dir.path() / "cache").string();
  s.cache_bytes = uint64_t(1) << 30;
  data::set_remote_io(s);
  const auto st = data::make_remote_storage();
  auto sources = std::make_shared<data::source_list>();
  sources->emplace_back(0, data::source_spec{"images", http.url() + "/images/", modality::image}, 3, false, *st);
  auto& c = data::remote_counters();
  const uint64_t failed0 = c.cache_write_failed;
  // The cache's disk refuses every write past a few bytes (a file size limit, EFBIG).
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  rlimit tiny = old;
  tiny.rlim_cur = 64;
  ::setrlimit(RLIMIT_FSIZE, &tiny);
  data::sample_fetcher f(sources, st);
  uint64_t good = 0;
  for (uint64_t d = 0; d < (*sources)[0].samples_per_epoch(); ++d) good += !f.read(0, d, true).bad;
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, SIG_DFL);
  CHECK(good == (*sources)[0].samples_per_epoch());
  CHECK(c.cache_write_failed > failed0);
  data::set_remote_io({});
}

// Resets are counted in the read-ahead test below, where they are sure to meet a fresh
// connection (libcurl retries one met on a reused connection itself, uncounted).
TEST_CASE("faults are retried by cause and resumed by range with every sample arriving once, and a store that stays away ends the read with the reason") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  write_shard_lists(dir.path());
  const auto local = testing::tiny_job(dir.path());
  testing::fault_options f;
  f.every = 3;
  f.faults = "503,reset,short,500,429,stall";
  f.stall_s = 3;
  testing::fault_server faulty(dir.path().string(), false, f);
  auto remote = with_uris(local, faulty.url(), "/");
  remote.io.remote_request_timeout_ms = 1000;  // a stalled request ends after 1 s and is retried
  remote.io.remote_backoff_max_ms = 50;
  const auto before = snap();
  check_same_batches(local, remote, 16, 6);
  const auto after = snap();
  MESSAGE("injected: " << faulty.stats());
  CHECK(after.throttled > before.throttled);
  CHECK(after.server > before.server);
  CHECK(after.short_body > before.short_body);
  CHECK(after.timeout > before.timeout);

  // The store goes away: the read ends after io.remote_give_up_s with the cause.
  testing::fault_server gone(dir.path().string(), false);
  const std::string uri = gone.url() + "/images/";
  data::remote_io_settings s;
  s.give_up_s = 2;
  s.backoff_max_ms = 200;
  data::set_remote_io(s);
  const auto st = data::make_local_storage();
  auto sources = std::make_shared<data::source_list>();
  sources->emplace_back(0, data::source_spec{"images", uri, modality::image}, 3, false, *st);
  data::sample_fetcher fetch(sources, st);
  (void)fetch.read(0, 0, true);
  gone.stop();
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t failures0 = data::remote_counters().gave_up;
  CHECK_THROWS_WITH_AS(fetch.read(0, 1, true), doctest::Contains("io.remote_give_up_s"), data::remote_unreachable);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took >= 2.0);
  CHECK(took < 10.0);
  CHECK(data::remote_counters().gave_up == failures0 + 1);
  data::set_remote_io({});
}

TEST_CASE("read ahead, a shard read start to end costs one GET per run of its samples, within 1.1x their records besides the index") {
  testing::temp_dir dir;
  const fs::path images = run_dataset(dir.path());
  testing::fault_server http(dir.path().string(), false);
  data::remote_io_settings io;
  io.prefetch_samples = 1024;
  data::set_remote_io(io);
  const auto st = data::make_local_storage();
  const auto local = image_source(*st, images.string());
  const auto remote = image_source(*st, http.url() + "/images/");
  const uint64_t n = (*remote)[0].samples_per_epoch();
  REQUIRE(n == 600);
  auto& c = data::remote_counters();
  const auto before = snap();
  const uint64_t issued0 = c.prefetch_issued, reads0 = c.prefetch_samples, used0 = c.prefetch_used;
  data::sample_fetcher f(remote, st), g(local, st);
  const auto got = read_ahead(f, n);
  const auto after = snap();
  const uint64_t issued = c.prefetch_issued - issued0, records = record_bytes(*st, images.string());
  MESSAGE(n << " samples: " << after.requests - before.requests << " requests, " << issued << " runs, "
            << after.bytes - before.bytes << " bytes for " << records << " record bytes");
  // Two shards of 300: each two runs (at most 256 samples a run), one GET each.
  CHECK(issued == 4);
  CHECK(after.requests - before.requests == issued);
  CHECK(c.prefetch_samples - reads0 == n);
  CHECK(c.prefetch_used - used0 == n);
  CHECK(double(after.bytes - before.bytes) <= 1.1 * double(records));
  CHECK(c.prefetch_held <= c.prefetch_capacity);
  // In order, each sample once, the bytes of the shards on disk.
  check_same_samples(got, g);

  // Two epochs: the window reaches into the second while the first's runs are held; a run
  // hinted again for the same span serves both epochs' reads, and nothing is read alone.
  const auto before2 = snap();
  const uint64_t used2 = c.prefetch_used;
  data::sample_fetcher f2(remote, st);
  const auto twice = read_ahead(f2, 2 * n);
  const auto after2 = snap();
  CHECK(after2.requests - before2.requests <= 8);
  CHECK(c.prefetch_used - used2 == 2 * n);
  for (uint64_t d = 0; d < 2 * n; d += 7) {
    CAPTURE(d);
    CHECK(twice[d].key == g.read(0, d, true).key);
  }
  data::set_remote_io({});
}

TEST_CASE("read ahead through cut bodies, resets and 503s, every sample of a run arrives once, in order, whole") {
  testing::temp_dir dir;
  const fs::path images = run_dataset(dir.path());
  testing::fault_options faults;
  // Every request faulted but each fifth: a body cut halfway (resumed by range), a 503, and
  // two resets in a row (libcurl itself retries a reset met on a reused connection once, so
  // the second one is the client's to count).
  faults.every = 1;
  faults.faults = "short,503,reset,reset,none";
  testing::fault_server faulty(dir.path().string(), false, faults);
  data::remote_io_settings io;
  io.prefetch_samples = 1024;
  io.backoff_max_ms = 50;
  data::set_remote_io(io);
  const auto st = data::make_local_storage();
  const auto local = image_source(*st, images.string());
  const auto before = snap();
  const auto remote = image_source(*st, faulty.url() + "/images/");
  const uint64_t n = (*remote)[0].samples_per_epoch();
  auto& c = data::remote_counters();
  const uint64_t issued0 = c.prefetch_issued, used0 = c.prefetch_used;
  data::sample_fetcher f(remote, st), g(local, st);
  const auto got = read_ahead(f, n);
  const auto after = snap();
  MESSAGE("injected: " << faulty.stats());
  CHECK(after.short_body > before.short_body);
  CHECK(after.throttled > before.throttled);
  CHECK(after.reset > before.reset);
  CHECK(c.prefetch_issued - issued0 == 4);
  CHECK(c.prefetch_used - used0 == n);  // every read served by its run, none read again alone
  check_same_samples(got, g);
  data::set_remote_io({});
}
