#!/usr/bin/env bash
# Regenerates every generated file (deepcopy, defaulters, conversions, OpenAPI,
# clientset, listers, informers, apply configurations) with the
# k8s.io/code-generator version go.mod pins, read from the module cache.
#
# UPDATE_API_KNOWN_VIOLATIONS=true accepts a changed OpenAPI violation report.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=$(go list -m)
go mod download k8s.io/code-generator
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
# Generators install under the project's own folder, not the user's GOPATH.
export GOBIN="${ROOT}/_output/codegen-bin"

source "${CODEGEN_PKG}/kube_codegen.sh"

BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

kube::codegen::gen_helpers \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"

report_args=()
[[ "${UPDATE_API_KNOWN_VIOLATIONS:-}" == "true" ]] && report_args=(--update-report)
kube::codegen::gen_openapi \
  --output-dir "${ROOT}/pkg/generated/openapi" \
  --output-pkg "${MODULE}/pkg/generated/openapi" \
  --report-filename "${ROOT}/api/api-rules/violation_exceptions.list" \
  --output-model-name-file zz_generated.model_name.go \
  "${report_args[@]}" \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"

kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --applyconfig-openapi-schema <(go run "${MODULE}/hack/openapi-schema") \
  --output-dir "${ROOT}/pkg/generated" \
  --output-pkg "${MODULE}/pkg/generated" \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"
