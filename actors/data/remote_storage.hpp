// Shards in remote stores, behind the same storage calls as local files: the reader, the
// probe and `msomni dataset check` see the same listing (sorted by uri) and the same bytes.
//
// Where the shards are:
//   s3://bucket/prefix      every *.tar object directly under prefix/ (ListObjectsV2 with
//                           delimiter '/'), or the one object when the uri ends in .tar;
//                           signed with SigV4 (io.s3_endpoint, io.s3_region, credentials from
//                           io.s3_credentials_file or AWS_*), path-style addressing.
//   http(s)://host/path/    a directory: its shard list <uri>shards.txt;
//   http(s)://host/list.txt a shard list: one shard a line, relative to the list or a full
//                           http(s) url ('#' lines and blank lines skipped);
//   http(s)://host/a.tar    one shard.
//
// How a shard is read: its member index (the tar header walk, list_tar) is built on first
// open by ranged GETs of io-window size along the headers, kept in memory and in the cache
// (io.cache_dir). The reader hints its upcoming draws in runs (storage::prefetch; see
// sample_read_ahead.cpp): one ranged GET reads a run of samples lying together in the shard
// ahead of use, and the reads it was hinted with are served from it. A read not hinted is one
// ranged GET of exactly the bytes asked for (one sample's span of members). Either is served
// from the cache when held there.
#pragma once

#include "storage.hpp"

#include <memory>

namespace msomni::config {
struct job_config;
}

namespace msomni::data {

struct remote_io_settings;

// The io.* settings of a job config (remote_io.hpp says what each is).
remote_io_settings remote_io_of(const config::job_config& cfg);

// Storage for s3:// and http(s):// uris only.
std::shared_ptr<storage> make_remote_storage();

// Routes remote uris to one process-wide remote storage and everything else to `local`.
std::shared_ptr<storage> make_routing_storage(std::shared_ptr<storage> local);

// The local path of a cached remote listing entry, for tests: the cache's slot directory
// this process holds ("" when no cache is configured or none was opened yet).
std::string remote_cache_slot_dir();

}  // namespace msomni::data
