#!/usr/bin/env bash
# Fails when generated code, or the OpenAPI violation report, is not what
# hack/update-codegen.sh makes from the current sources.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT

paths=(pkg api)
for p in "${paths[@]}"; do mkdir -p "${TMP}/$(dirname "$p")"; cp -a "$p" "${TMP}/$p"; done

"${ROOT}/hack/update-codegen.sh" >/dev/null
status=0
for p in "${paths[@]}"; do
  if ! diff -Naupr "${TMP}/$p" "$p"; then status=1; fi
done
if [[ ${status} -ne 0 ]]; then
  # Put the tree back as it was; the diff above says what is stale.
  for p in "${paths[@]}"; do rm -rf "$p"; cp -a "${TMP}/$p" "$p"; done
  echo "Generated files are out of date: run hack/update-codegen.sh (and review api/api-rules/violation_exceptions.list)." >&2
fi
exit ${status}
