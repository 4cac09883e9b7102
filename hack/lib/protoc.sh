#!/usr/bin/env bash
# Makes sure protoc, the Protocol Buffers compiler go-to-protobuf runs, is on
# PATH. Sourced by hack/update-codegen.sh (and so by hack/verify-codegen.sh).
#
# protoc comes from Debian's package protobuf-compiler (libprotoc 3.21 on
# bookworm). It is installed here when missing, since CI machines and fresh
# developer machines start without it. go-to-protobuf only needs a protoc that
# understands proto2 files and plugins: any libprotoc 3.x or newer will do (the
# Kubernetes project pins 23.4 for its own tree; the generated Go code does not
# depend on protoc's version because go-to-protobuf drops the embedded file
# descriptor). Older protoc 2.x cannot parse the generated IDL, so it is refused.

# kvstore::protoc::version prints protoc's version, e.g. "3.21.12".
kvstore::protoc::version() {
  protoc --version 2>/dev/null | sed -n 's/^libprotoc \([0-9][0-9.]*\).*$/\1/p'
}

# kvstore::protoc::install installs Debian's protobuf-compiler.
kvstore::protoc::install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "protoc (libprotoc 3.x or newer) is required to generate protobuf code and apt-get is not available:" >&2
    echo "install the Protocol Buffers compiler with your package manager and put protoc on PATH." >&2
    return 1
  fi
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "protoc is missing; run as root or install it with: apt-get install protobuf-compiler" >&2
      return 1
    fi
    sudo=(sudo)
  fi
  echo ">> installing protoc (Debian package protobuf-compiler)" >&2
  # apt-get update only when the package is not known yet (a new machine has
  # empty lists).
  if ! apt-cache show protobuf-compiler >/dev/null 2>&1; then
    "${sudo[@]}" apt-get update -qq >&2
  fi
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends protobuf-compiler >&2 || {
    # The lists may be stale (an old version no longer on the mirror).
    "${sudo[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends protobuf-compiler >&2
  }
}

# kvstore::protoc::ensure installs protoc when missing and checks its version.
kvstore::protoc::ensure() {
  if ! command -v protoc >/dev/null 2>&1; then
    kvstore::protoc::install || return 1
  fi
  local version major
  version=$(kvstore::protoc::version)
  major=${version%%.*}
  if [[ -z "${version}" || ! "${major}" =~ ^[0-9]+$ || "${major}" -lt 3 ]]; then
    echo "protoc $(command -v protoc) reports '$(protoc --version 2>&1)': libprotoc 3.x or newer is required." >&2
    return 1
  fi
}
