#!/usr/bin/env bash
# Builds, at pinned versions and from the Go module proxy only, every external
# binary the local stack and the tests run: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl and kwok; and
# sample-apiserver, the benchmark's peer aggregated API server.
#
# Binaries are cached by version outside the work tree (a fresh clone reuses
# them) and linked into _output/bin. A binary that exists is never rebuilt.
#
#   hack/build-tools.sh            # all of them
#   hack/build-tools.sh etcd       # only the named ones
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "${ROOT}/hack/lib/versions.sh"

CACHE=${KVSTORE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvstore-apiserver/tools}
BIN="${ROOT}/_output/bin"
mkdir -p "${BIN}"

kube_ldflags() {
  local pkg ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=${KUBE_MAJOR} -X ${pkg}.gitMinor=${KUBE_MINOR}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${KUBE_BUILD_DATE}"
  done
  echo "${ldflags}"
}

# build NAME VERSION CMD...: runs CMD with $OUT set unless the binary exists.
build() {
  local name=$1 version=$2; shift 2
  local dir="${CACHE}/${name}-${version}-$(go env GOOS)-$(go env GOARCH)"
  if [[ ! -x "${dir}/${name}" ]]; then
    echo ">> building ${name} ${version} (cold builds take minutes)" >&2
    mkdir -p "${dir}"
    local start=${SECONDS}
    OUT="${dir}/${name}.tmp" "$@"
    mv "${dir}/${name}.tmp" "${dir}/${name}"
    echo ">> built ${name} in $((SECONDS - start))s" >&2
  fi
  ln -sfn "${dir}/${name}" "${BIN}/${name}"
}

build_kube() { (cd "${ROOT}/hack/tools" && go build -trimpath -ldflags "$(kube_ldflags)" -o "${OUT}" "k8s.io/kubernetes/cmd/$1"); }
# sample-apiserver reports the Kubernetes version it is built from, as the
# kube binaries do (the same ldflags).
build_sample_apiserver() { (cd "${ROOT}/hack/tools" && go build -trimpath -ldflags "$(kube_ldflags)" -o "${OUT}" k8s.io/sample-apiserver); }
build_etcd() { (cd "${ROOT}/hack/tools/etcd" && go build -trimpath -ldflags "-s -w" -o "${OUT}" .); }
build_kwok() {
  local gobin; gobin=$(mktemp -d)
  GOBIN="${gobin}" GOFLAGS=-trimpath go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
  mv "${gobin}/kwok" "${OUT}"; rm -rf "${gobin}"
}

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok sample-apiserver)
for t in "${tools[@]}"; do
  case "$t" in
    etcd) build etcd "${ETCD_VERSION}" build_etcd ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl) build "$t" "${KUBE_VERSION}" build_kube "$t" ;;
    kwok) build kwok "${KWOK_VERSION}" build_kwok ;;
    sample-apiserver) build sample-apiserver "${SAMPLE_APISERVER_VERSION}" build_sample_apiserver ;;
    *) echo "unknown tool: $t" >&2; exit 2 ;;
  esac
done
