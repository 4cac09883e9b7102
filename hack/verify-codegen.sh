#!/usr/bin/env bash
# Fails when generated code, or the OpenAPI violation report, is not what
# hack/update-codegen.sh makes from the current sources.
#
# The working tree is never written: the sources (tracked and untracked files,
# as they are now, without .git and ignored files) are copied twice into a
# temporary folder, update-codegen.sh runs in one copy, and the copies are
# compared. A failing, interrupted or killed run leaves nothing behind but
# that temporary folder, which is removed on exit.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kvstore-verify-codegen.XXXXXX")
GENERATOR_PID=
cleanup() {
  # The generators run in their own process group: stop all of it, so none
  # is left writing into (or recreating) the folder removed below.
  if [[ -n "${GENERATOR_PID}" ]]; then
    kill -TERM -- "-${GENERATOR_PID}" 2>/dev/null || true
    wait "${GENERATOR_PID}" 2>/dev/null || true
  fi
  rm -rf "${TMP}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# copy_sources DEST copies the repository's files as they are in the working
# tree.
copy_sources() {
  mkdir -p "$1"
  if git -C "${ROOT}" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "${ROOT}" ls-files -z --cached --others --exclude-standard \
      | while IFS= read -r -d '' f; do
          # A tracked file deleted in the working tree is listed but absent.
          if [[ -e "${f}" || -L "${f}" ]]; then printf '%s\0' "${f}"; fi
        done \
      | tar --null --files-from=- -cf - | tar -xf - -C "$1"
  else
    tar --exclude=./.git --exclude=./_output -cf - . | tar -xf - -C "$1"
  fi
}

copy_sources "${TMP}/current"
copy_sources "${TMP}/regenerated"

# The generators are installed once, into this checkout's _output (ignored by
# git), rather than again into every temporary copy; every temporary file of
# update-codegen.sh goes under TMP. It runs as a background job in its own
# process group (set -m) and is waited for, so a signal is handled at once
# instead of after the generators finish.
set -m
TMPDIR="${TMP}" KVSTORE_CODEGEN_BIN="${ROOT}/_output/codegen-bin" "${TMP}/regenerated/hack/update-codegen.sh" >"${TMP}/update-codegen.log" 2>&1 &
GENERATOR_PID=$!
set +m
status=0
wait "${GENERATOR_PID}" || status=$?
GENERATOR_PID=
if [[ ${status} -ne 0 ]]; then
  cat "${TMP}/update-codegen.log" >&2
  echo "hack/update-codegen.sh failed (output above); the working tree was not changed." >&2
  exit 1
fi

if ! (cd "${TMP}" && diff -Naupr -x _output current regenerated); then
  echo "Generated files are out of date: run hack/update-codegen.sh (and review api/api-rules/violation_exceptions.list)." >&2
  exit 1
fi
echo "Generated files are up to date."
