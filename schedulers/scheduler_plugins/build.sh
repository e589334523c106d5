#!/usr/bin/env bash
# Builds (or reuses) kubernetes-sigs/scheduler-plugins' kube-scheduler (cmd/scheduler:
# the stock scheduler with the out-of-tree plugins, NodeResourceTopologyMatch among them)
# at v0.35.4-devel, from its unmodified go.mod (every module from the Go module proxy).
# Prints the directory. Cold: about 3 minutes (docs/schedulers/scheduler-plugins.md).
#
# Source: $NUMA_TESTKIT_SCHEDULER_PLUGINS_SOURCE - a directory or a .tar.gz - defaulting
# to the shared snapshot scheduler-plugins-2c75c8b5.tar.gz. Users point it at their clone:
#   git clone https://github.com/kubernetes-sigs/scheduler-plugins && git -C scheduler-plugins checkout 2c75c8b5cb943435e94ffd325d9f1542d01f175f
#   NUMA_TESTKIT_SCHEDULER_PLUGINS_SOURCE=$PWD/scheduler-plugins schedulers/scheduler_plugins/build.sh
# Binaries are cached by source (commit) under ~/.cache/numa-testkit/scheduler-plugins/.
# shellcheck disable=SC2034  # read by ../lib.sh
NAME=scheduler-plugins
SOURCE_VAR=NUMA_TESTKIT_SCHEDULER_PLUGINS_SOURCE
SNAPSHOT=scheduler-plugins-2c75c8b5.tar.gz
COMMIT=2c75c8b5cb943435e94ffd325d9f1542d01f175f
COMMANDS=(./cmd/scheduler)
# shellcheck disable=SC1091  # checked on its own
source "$(dirname "$0")/../lib.sh"

build_go_source
echo "$OUT"
