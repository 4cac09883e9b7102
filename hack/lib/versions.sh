# Pinned versions of the external components. The Go modules under hack/tools
# pin the same versions; keep them in step.
KUBE_VERSION=v1.37.2
KUBE_MAJOR=1
KUBE_MINOR=37
KUBE_BUILD_DATE=2026-11-01T00:00:00Z
ETCD_VERSION=v3.7.3
KWOK_VERSION=v0.8.0
