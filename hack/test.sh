#!/usr/bin/env bash
# Runs the test suites: unit | integration | e2e | bench-quick | all.
# e2e and bench-quick use the local stack: a running one is reused; otherwise
# one is brought up for them and torn down afterwards.
set -o errexit -o nounset -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

unit()        { go test -count=1 $(go list ./... | grep -v -e /test/integration -e /test/e2e -e /test/bench); }
integration() { go test -count=1 -timeout 15m ./test/integration/...; }
e2e()         { go test -count=1 -timeout 30m ./test/e2e/...; }
bench_quick() { go run ./test/bench/cmd/kvsbench --quick; }

# with_stack CMD...: runs CMD against the local stack, starting it if needed.
with_stack() {
  local kubeconfig="${KVSTORE_LOCAL_DIR:-${ROOT}/_output/local}/admin.kubeconfig"
  if [[ -f "${kubeconfig}" ]] && _output/bin/kubectl --kubeconfig "${kubeconfig}" get --raw /readyz >/dev/null 2>&1; then
    "$@"
    return
  fi
  hack/local-up.sh up
  trap 'hack/local-up.sh down' EXIT
  "$@"
  hack/local-up.sh down
  trap - EXIT
}

case "${1:-all}" in
  unit) unit ;;
  integration) integration ;;
  e2e) with_stack e2e ;;
  bench-quick) with_stack bench_quick ;;
  all) unit; integration; with_stack bash -c "$(declare -f e2e bench_quick); bench_quick && e2e" ;;
  *) echo "usage: $0 unit|integration|e2e|bench-quick|all" >&2; exit 2 ;;
esac
