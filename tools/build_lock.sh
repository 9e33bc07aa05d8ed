#!/usr/bin/env bash
# Serialises builds and test runs on this 2-core machine: `tools/build_lock.sh CMD...`
# waits for any other locked command to finish first.
exec flock /tmp/msomni-build.lock "$@"
