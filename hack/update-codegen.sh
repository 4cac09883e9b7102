#!/usr/bin/env bash
# Regenerates every generated file (protobuf, deepcopy, defaulters,
# conversions, OpenAPI, clientset, listers, informers, apply configurations)
# with the k8s.io/code-generator version go.mod pins, read from the module cache.
#
# Protobuf needs protoc, a prerequisite this script never installs:
# hack/lib/protoc.sh fails with what to install when it is missing
# (docs/local-development.md).
#
# KVSTORE_CODEGEN_BIN overrides where the generators are installed
# (hack/verify-codegen.sh runs this script in a temporary copy of the tree).
#
# UPDATE_API_KNOWN_VIOLATIONS=true accepts a changed OpenAPI violation report.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
# Every temporary file lives in one folder removed on exit, also those of
# kube_codegen.sh, which leaves its OpenAPI violation report in TMPDIR.
WORK_DIR=$(mktemp -d)
trap 'rm -rf "${WORK_DIR}"' EXIT
export TMPDIR="${WORK_DIR}"
MODULE=$(go list -m)
go mod download k8s.io/code-generator
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
# Generators install under the project's own folder, not the user's GOPATH.
export GOBIN="${KVSTORE_CODEGEN_BIN:-${ROOT}/_output/codegen-bin}"

source "${CODEGEN_PKG}/kube_codegen.sh"

BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

source "${ROOT}/hack/lib/protoc.sh"

# gen_protobuf writes generated.proto and generated.pb.go (marshalling for the
# protobuf wire format, in the same shape as k8s.io/api's) into every package
# under pkg/apis whose doc.go says +k8s:protobuf-gen=package, and adds the
# protobuf:"..." struct tags to its types. Only versioned packages carry that
# tag: the internal types are never serialized and get no protobuf.
#
# go-to-protobuf expects a GOPATH-like tree under --output-dir, so a temporary
# one links this module, k8s.io/apimachinery (whose generated.proto files ours
# import) and gogo/protobuf (gogo.proto and google/protobuf/descriptor.proto,
# which the intermediate IDL imports) from the module cache.
gen_protobuf() {
  local pkgs=() dir
  while read -r -d $'\0' dir; do
    pkgs+=("$(cd "$(dirname "${dir}")" && GO111MODULE=on go list -find .)")
  done < <(grep -rlZ --include=doc.go -e '^\s*//\s*+k8s:protobuf-gen=package\s*$' "${ROOT}/pkg/apis" | LC_ALL=C sort -z)
  if [[ ${#pkgs[@]} -eq 0 ]]; then
    return 0
  fi

  kvstore::protoc::ensure

  # The generator, its protoc plugin and goimports (which go-to-protobuf runs)
  # at the versions the pinned k8s.io/code-generator's own go.mod names.
  local goimports_version
  goimports_version=$(cd "${CODEGEN_PKG}" && go list -m -f '{{.Version}}' golang.org/x/tools)
  (
    cd "${CODEGEN_PKG}"
    GO111MODULE=on go install k8s.io/code-generator/cmd/go-to-protobuf k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo
    GO111MODULE=on go install "golang.org/x/tools/cmd/goimports@${goimports_version}"
  )
  local apimachinery_dir gogo_dir
  apimachinery_dir=$(go list -m -f '{{.Dir}}' k8s.io/apimachinery)
  gogo_dir=$(cd "${CODEGEN_PKG}" && go list -m -f '{{.Dir}}' github.com/gogo/protobuf)
  if [[ -z "${apimachinery_dir}" || -z "${gogo_dir}" ]]; then
    echo "cannot find k8s.io/apimachinery or github.com/gogo/protobuf in the module cache" >&2
    return 1
  fi

  local tree="${WORK_DIR}/proto-tree"
  mkdir -p "${tree}/$(dirname "${MODULE}")" "${tree}/k8s.io" "${tree}/github.com/gogo"
  ln -s "${ROOT}" "${tree}/${MODULE}"
  ln -s "${apimachinery_dir}" "${tree}/k8s.io/apimachinery"
  ln -s "${gogo_dir}" "${tree}/github.com/gogo/protobuf"

  # Stale output from an earlier run may no longer compile against the types,
  # and the generator loads (type checks) the packages before it writes.
  local pkg
  for pkg in "${pkgs[@]}"; do
    rm -f "${tree}/${pkg}/generated.proto" "${tree}/${pkg}/generated.pb.go"
  done

  # apimachinery's packages are inputs only ("-"): their generated.proto files
  # are imported, never rewritten.
  PATH="${GOBIN}:${PATH}" "${GOBIN}/go-to-protobuf" \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${tree}" \
    --proto-import "${tree}" \
    --proto-import "${gogo_dir}/protobuf" \
    --apimachinery-packages "-k8s.io/apimachinery/pkg/util/intstr,-k8s.io/apimachinery/pkg/api/resource,-k8s.io/apimachinery/pkg/runtime/schema,-k8s.io/apimachinery/pkg/runtime,-k8s.io/apimachinery/pkg/apis/meta/v1" \
    --packages "$(IFS=, ; echo "${pkgs[*]}")"
}

gen_protobuf

kube::codegen::gen_helpers \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"

report_args=()
[[ "${UPDATE_API_KNOWN_VIOLATIONS:-}" == "true" ]] && report_args=(--update-report)
# keyvaluestores/scale serves autoscaling/v1 Scale: the server needs its
# OpenAPI definition to publish the subresource and to track server-side apply
# field ownership through it. k8s.io/api is an input only: marked read-only,
# so the generator never writes its model names into the module cache.
KUBE_CODEGEN_READONLY_PKGS+=(k8s.io/api/autoscaling/v1)
kube::codegen::gen_openapi \
  --output-dir "${ROOT}/pkg/generated/openapi" \
  --output-pkg "${MODULE}/pkg/generated/openapi" \
  --extra-pkgs k8s.io/api/autoscaling/v1 \
  --report-filename "${ROOT}/api/api-rules/violation_exceptions.list" \
  --output-model-name-file zz_generated.model_name.go \
  "${report_args[@]}" \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"

kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --prefers-protobuf \
  --applyconfig-openapi-schema <(go run "${MODULE}/hack/openapi-schema") \
  --output-dir "${ROOT}/pkg/generated" \
  --output-pkg "${MODULE}/pkg/generated" \
  --boilerplate "${BOILERPLATE}" \
  "${ROOT}/pkg/apis"
