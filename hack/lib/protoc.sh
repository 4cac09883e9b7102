#!/usr/bin/env bash
# Checks that protoc, the Protocol Buffers compiler go-to-protobuf runs, is on
# PATH. Sourced by hack/update-codegen.sh (and so by hack/verify-codegen.sh).
#
# protoc is a prerequisite, never installed here: codegen must not need root
# or change the machine. It is a C++ program, so neither the Go module proxy
# nor `go install` can provide it; install Debian's package protobuf-compiler
# (docs/local-development.md). PROTOC_VERSION (hack/lib/versions.sh) is the
# version the checked-in generated code was made and verified with. Any
# libprotoc 3.x or newer gives the same output: go-to-protobuf only needs a
# protoc that understands proto2 files and plugins, and the generated Go code
# does not depend on protoc's version because go-to-protobuf drops the
# embedded file descriptor (the Kubernetes project pins 23.4 for its own
# tree). protoc 2.x cannot parse the generated IDL and is refused.

source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

# kvstore::protoc::version prints protoc's version, e.g. "3.21.12".
kvstore::protoc::version() {
  protoc --version 2>/dev/null | sed -n 's/^libprotoc \([0-9][0-9.]*\).*$/\1/p'
}

kvstore::protoc::missing() {
  cat >&2 <<EOF
protoc (the Protocol Buffers compiler) is required to generate the protobuf
code of pkg/apis and is not on PATH. Install it, then run this again:

  apt-get install protobuf-compiler     # Debian 12: libprotoc ${PROTOC_VERSION}, the version tested

Any libprotoc 3.x or newer works (see docs/local-development.md).
EOF
}

# kvstore::protoc::ensure fails, saying what to install, unless a usable
# protoc is on PATH.
kvstore::protoc::ensure() {
  if ! command -v protoc >/dev/null 2>&1; then
    kvstore::protoc::missing
    return 1
  fi
  local version major
  version=$(kvstore::protoc::version)
  major=${version%%.*}
  if [[ -z "${version}" || ! "${major}" =~ ^[0-9]+$ || "${major}" -lt 3 ]]; then
    echo "protoc $(command -v protoc) reports '$(protoc --version 2>&1)': libprotoc 3.x or newer is required (tested: ${PROTOC_VERSION}; apt-get install protobuf-compiler)." >&2
    return 1
  fi
  if [[ "${version}" != "${PROTOC_VERSION}" ]]; then
    echo ">> protoc ${version} (tested with ${PROTOC_VERSION}); the output should not differ" >&2
  fi
}
