#!/usr/bin/env bash
# Runs this directory's Indexed Job of shards, then its merge Job, as local processes:
# each pod's environment (JOB_COMPLETION_INDEX, TSLOAD_SHARD_COUNT, the downward-API
# labels), its args after Kubernetes' $(VAR) expansion, and its volumes mapped to local
# directories. TSLOAD_TARGET, the Service address, becomes a testbed VictoriaMetrics on
# 127.0.0.1 unless given:  deploy/k8s/simulate.sh --env TSLOAD_TARGET=http://127.0.0.1:8428
# CI runs the same simulation, smaller, in crates/cli/tests/k8s.rs.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo xtask k8s-simulate "$@"
