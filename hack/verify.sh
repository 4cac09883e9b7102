#!/usr/bin/env bash
# gofmt, go vet, generated code current, go.mod tidy.
set -o errexit -o nounset -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

echo ">> gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n "${unformatted}" ]]; then echo "not gofmt'ed:"; echo "${unformatted}"; exit 1; fi

echo ">> go vet"
go vet ./...
# The benchmark's operator baseline is a module of its own (controller-runtime
# stays out of the product's go.mod).
(cd test/bench/operator && go vet ./...)

echo ">> codegen"
hack/verify-codegen.sh

echo ">> go mod tidy"
# go mod tidy -diff changes nothing and prints what tidying would change
# (comparing with git would count a user's own uncommitted edit as untidy).
for dir in . hack/tools hack/tools/etcd test/bench/operator; do
  if ! (cd "${dir}" && go mod tidy -diff); then
    echo "go.mod/go.sum in ${dir} are not tidy: run go mod tidy there"; exit 1
  fi
done
echo "verify: OK"
