#!/usr/bin/env bash
# Runs the test suites: unit | integration | e2e | all.
set -o errexit -o nounset -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

unit()        { go test -count=1 $(go list ./... | grep -v -e /test/integration -e /test/e2e -e /test/bench); }
integration() { go test -count=1 -timeout 15m ./test/integration/...; }
e2e()         { [[ -d test/e2e ]] || return 0; go test -count=1 -timeout 30m ./test/e2e/...; }

case "${1:-all}" in
  unit) unit ;;
  integration) integration ;;
  e2e) e2e ;;
  all) unit; integration; e2e ;;
  *) echo "usage: $0 unit|integration|e2e|all" >&2; exit 2 ;;
esac
