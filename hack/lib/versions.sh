# Pinned versions of the external components. The Go modules under hack/tools
# pin the same versions; keep them in step.
KUBE_VERSION=v1.37.2
KUBE_MAJOR=1
KUBE_MINOR=37
KUBE_BUILD_DATE=2026-11-01T00:00:00Z
ETCD_VERSION=v3.7.3
KWOK_VERSION=v0.8.0
# The benchmark's peer aggregated API server (hack/tools/go.mod pins it too).
SAMPLE_APISERVER_VERSION=v0.37.2
# protoc is a prerequisite of hack/update-codegen.sh, not built here (a C++
# program): the version the generated protobuf code is made and verified with,
# Debian 12's protobuf-compiler. See hack/lib/protoc.sh.
PROTOC_VERSION=3.21.12
