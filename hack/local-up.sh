#!/usr/bin/env bash
# A real local control plane on 127.0.0.1, without Docker: etcd,
# kube-apiserver (with the aggregation layer), kube-controller-manager,
# kube-scheduler, kwok with fake Nodes, and kvstore-apiserver with its own
# etcd, registered through an APIService.
#
#   hack/local-up.sh run    # foreground; Ctrl-C tears everything down
#   hack/local-up.sh up     # background; state under _output/local
#   hack/local-up.sh down   # stop a background stack (by PID files)
#   hack/local-up.sh restart-kvstore   # rebuild-and-restart only kvstore-apiserver
#
# Binaries come from hack/build-tools.sh and `make build`.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "${ROOT}/hack/lib/certs.sh"

BIN="${ROOT}/_output/bin"
STATE="${KVSTORE_LOCAL_DIR:-${ROOT}/_output/local}"
CERTS="${STATE}/certs"
LOGS="${STATE}/logs"
PIDS="${STATE}/pids"
KUBECONFIG_ADMIN="${STATE}/admin.kubeconfig"

KUBE_ETCD_PORT=32379
KVSTORE_ETCD_PORT=32381
KUBE_APISERVER_PORT=6443
KVSTORE_PORT=8443
KCM_PORT=10257
SCHEDULER_PORT=10259
KWOK_PORT=10247
NODES=${KVSTORE_LOCAL_NODES:-3}

log() { echo ">> $*" >&2; }
die() { echo "local-up: $*" >&2; exit 1; }
kubectl() { "${BIN}/kubectl" --kubeconfig "${KUBECONFIG_ADMIN}" "$@"; }

# start NAME CMD...: runs CMD in its own session, logging to logs/NAME.log.
start() {
  local name=$1; shift
  setsid "$@" >"${LOGS}/${name}.log" 2>&1 < /dev/null &
  echo $! > "${PIDS}/${name}.pid"
}

# wait_for WHAT SECONDS CMD...: polls CMD until it succeeds.
wait_for() {
  local what=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS > deadline )); then die "timed out after ${timeout}s waiting for ${what}; logs in ${LOGS}"; fi
    sleep 0.5
  done
}

stop_one() {
  local name=$1 pidfile="${PIDS}/$1.pid" pid
  [[ -f "${pidfile}" ]] || return 0
  pid=$(cat "${pidfile}")
  if kill -0 "${pid}" 2>/dev/null; then
    kill -TERM "${pid}" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "${pid}" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "${pid}" 2>/dev/null; then log "${name} did not stop; killing"; kill -KILL "${pid}" 2>/dev/null || true; fi
  fi
  rm -f "${pidfile}"
}

down() {
  # Clients first, then kube-apiserver, then the etcds: each then exits quickly.
  local n
  for n in $(cd "${PIDS}" 2>/dev/null && ls kvstore-apiserver*.pid 2>/dev/null | sed 's/\.pid$//') kwok kube-controller-manager kube-scheduler kube-apiserver etcd-kvstore etcd-kube; do
    stop_one "$n"
  done
}

check_binaries() {
  local b
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kvstore-apiserver; do
    [[ -x "${BIN}/${b}" ]] || die "${BIN}/${b} is missing: run make tools build"
  done
}

start_etcd() { # name client-port
  local name=$1 port=$2
  start "${name}" "${BIN}/etcd" --name "${name}" --data-dir "${STATE}/${name}" \
    --listen-client-urls "http://127.0.0.1:${port}" --advertise-client-urls "http://127.0.0.1:${port}" \
    --listen-peer-urls "http://127.0.0.1:$((port + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
    --initial-cluster "${name}=http://127.0.0.1:$((port + 1))" \
    --listen-metrics-urls "http://127.0.0.1:$((port + 100))" --log-level warn ${ETCD_EXTRA_FLAGS:-}
}

start_kvstore() { # name port [flags...]
  local name=$1 port=$2; shift 2
  start "${name}" "${BIN}/kvstore-apiserver" \
    --bind-address 127.0.0.1 --secure-port "${port}" \
    --tls-cert-file "${CERTS}/kvstore-apiserver-serving.crt" --tls-private-key-file "${CERTS}/kvstore-apiserver-serving.key" \
    --etcd-servers "http://127.0.0.1:${KVSTORE_ETCD_PORT}" \
    --kubeconfig "${STATE}/kvstore-apiserver.kubeconfig" \
    --authentication-kubeconfig "${STATE}/kvstore-apiserver.kubeconfig" \
    --authorization-kubeconfig "${STATE}/kvstore-apiserver.kubeconfig" \
    "$@"
}

up() {
  check_binaries
  if [[ -f "${PIDS}/kube-apiserver.pid" ]] && kill -0 "$(cat "${PIDS}/kube-apiserver.pid")" 2>/dev/null; then
    die "a local stack is already running (make down first)"
  fi
  local t0=${SECONDS}
  mkdir -p "${LOGS}" "${PIDS}"
  make_certs "${CERTS}"
  local k="https://127.0.0.1:${KUBE_APISERVER_PORT}" n
  make_kubeconfig "${KUBECONFIG_ADMIN}" "$k" "${CERTS}/ca.crt" "${CERTS}/admin.crt" "${CERTS}/admin.key"
  for n in kube-controller-manager kube-scheduler kwok kvstore-apiserver; do
    make_kubeconfig "${STATE}/${n}.kubeconfig" "$k" "${CERTS}/ca.crt" "${CERTS}/${n}.crt" "${CERTS}/${n}.key"
  done

  log "starting etcd (kube) and etcd (kvstore)"
  start_etcd etcd-kube "${KUBE_ETCD_PORT}"
  start_etcd etcd-kvstore "${KVSTORE_ETCD_PORT}"

  log "starting kube-apiserver"
  start kube-apiserver "${BIN}/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:${KUBE_ETCD_PORT}" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "${KUBE_APISERVER_PORT}" \
    --endpoint-reconciler-type none \
    --tls-cert-file "${CERTS}/kube-apiserver.crt" --tls-private-key-file "${CERTS}/kube-apiserver.key" \
    --client-ca-file "${CERTS}/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "${CERTS}/sa.pub" --service-account-signing-key-file "${CERTS}/sa.key" \
    --service-cluster-ip-range 10.96.0.0/12 \
    --authorization-mode Node,RBAC \
    --requestheader-client-ca-file "${CERTS}/front-proxy-ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User \
    --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "${CERTS}/front-proxy-client.crt" --proxy-client-key-file "${CERTS}/front-proxy-client.key" \
    --enable-aggregator-routing=false
  wait_for "kube-apiserver /readyz" 90 kubectl get --raw /readyz

  log "starting kube-controller-manager, kube-scheduler and kwok"
  local kcm="${STATE}/kube-controller-manager.kubeconfig" sched="${STATE}/kube-scheduler.kubeconfig"
  # QPS above the default 20: at 20 the StatefulSet and volume controllers,
  # not kvstore-apiserver, set the pace of the benchmark's controller phase
  # (1000 stores, 3000 Pods and claims). Stated in its report.
  start kube-controller-manager "${BIN}/kube-controller-manager" \
    --kubeconfig "${kcm}" --authentication-kubeconfig "${kcm}" --authorization-kubeconfig "${kcm}" \
    --bind-address 127.0.0.1 --secure-port "${KCM_PORT}" \
    --controllers '*' --use-service-account-credentials=true \
    --service-account-private-key-file "${CERTS}/sa.key" --root-ca-file "${CERTS}/ca.crt" \
    --cluster-signing-cert-file "${CERTS}/ca.crt" --cluster-signing-key-file "${CERTS}/ca.key" \
    --enable-hostpath-provisioner=true \
    --kube-api-qps=100 --kube-api-burst=200 \
    --leader-elect=false
  start kube-scheduler "${BIN}/kube-scheduler" \
    --kubeconfig "${sched}" --authentication-kubeconfig "${sched}" --authorization-kubeconfig "${sched}" \
    --bind-address 127.0.0.1 --secure-port "${SCHEDULER_PORT}" --leader-elect=false
  start kwok "${BIN}/kwok" --kubeconfig "${STATE}/kwok.kubeconfig" -c "${ROOT}/hack/kwok/stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.244.0.0/16 --node-ip=10.0.0.1 --server-address "127.0.0.1:${KWOK_PORT}" \
    --node-lease-duration-seconds=40

  log "creating ${NODES} fake Nodes and a default StorageClass"
  for n in $(seq 1 "${NODES}"); do nodes_yaml "kwok-node-${n}"; done | kubectl apply -f - >/dev/null
  kubectl apply -f - >/dev/null <<EOT
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
# kube-controller-manager's test-only hostPath provisioner (under /tmp).
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOT

  log "registering kvstore.io (artifacts/local overlay) and starting kvstore-apiserver"
  apply_overlay
  start_kvstore kvstore-apiserver "${KVSTORE_PORT}" ${KVSTORE_EXTRA_FLAGS:-}
  wait_for "APIService v1alpha1.kvstore.io Available" 90 \
    kubectl wait --for=condition=Available --timeout=2s apiservice/v1alpha1.kvstore.io
  wait_for "discovery of keyvaluestores" 30 bash -c "'${BIN}/kubectl' --kubeconfig '${KUBECONFIG_ADMIN}' api-resources --api-group=kvstore.io | grep -q keyvaluestores"
  wait_for "kwok Nodes Ready" 60 kubectl wait --for=condition=Ready --timeout=2s node --all
  wait_for "default ServiceAccount" 60 kubectl get serviceaccount default -n default
  log "stack up in $((SECONDS - t0))s"
}

nodes_yaml() {
  cat <<EOT
---
apiVersion: v1
kind: Node
metadata:
  name: $1
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: $1
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
EOT
}

# The overlay that applies artifacts/local plus this machine's caBundle.
apply_overlay() {
  local dir="${STATE}/overlay"
  mkdir -p "${dir}"
  local rel
  rel=$(realpath --relative-to="${dir}" "${ROOT}/artifacts/local")
  cat > "${dir}/kustomization.yaml" <<EOT
# Generated by hack/local-up.sh: artifacts/local plus the local CA.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ${rel}
patches:
- target:
    kind: APIService
    name: v1alpha1.kvstore.io
  patch: |-
    - op: add
      path: /spec/caBundle
      value: $(base64 -w0 < "${CERTS}/ca.crt")
EOT
  kubectl apply -k "${dir}" >/dev/null
}

usage() {
  cat <<EOT

The local stack is up. kvstore-apiserver serves kvstore.io behind kube-apiserver.

  export KUBECONFIG=${KUBECONFIG_ADMIN}
  kubectl get apiservice v1alpha1.kvstore.io
  kubectl get kvs -A
  kubectl explain keyvaluestore.spec
  kubectl describe kvs example
  kubectl get statefulsets,deployments,pods -n default

Logs: ${LOGS}
EOT
}

create_example() {
  kubectl apply -f "${ROOT}/artifacts/examples/keyvaluestore.yaml" >/dev/null
  kubectl get kvs -A
}

case "${1:-}" in
  up)
    trap 'down' EXIT
    up
    trap - EXIT
    create_example
    usage
    echo "  make down   # stops it"
    ;;
  run)
    trap 'echo; log "tearing down"; down; exit 0' INT TERM
    trap 'down' EXIT
    up
    create_example
    usage
    echo "  Ctrl-C tears it down."
    while kill -0 "$(cat "${PIDS}/kube-apiserver.pid")" 2>/dev/null; do sleep 1; done
    log "kube-apiserver exited; tearing down"; down; exit 1
    ;;
  down) down ;;
  start-kvstore)
    # start-kvstore NAME PORT [FLAGS...]: one more kvstore-apiserver replica
    # on the same etcd and Lease (used by the leader-election tests).
    [[ $# -ge 3 ]] || die "usage: $0 start-kvstore NAME PORT [FLAGS...]"
    name=$2 port=$3; shift 3
    start_kvstore "${name}" "${port}" "$@"
    wait_for "${name} /readyz" 60 curl -fsk "https://127.0.0.1:${port}/readyz"
    ;;
  stop-kvstore)
    # stop-kvstore NAME: stop a replica started by start-kvstore.
    stop_one "$2"
    ;;
  restart-kvstore)
    stop_one kvstore-apiserver
    start_kvstore kvstore-apiserver "${KVSTORE_PORT}" ${KVSTORE_EXTRA_FLAGS:-}
    wait_for "APIService Available" 90 kubectl wait --for=condition=Available --timeout=2s apiservice/v1alpha1.kvstore.io
    ;;
  *) echo "usage: $0 run|up|down|restart-kvstore|start-kvstore|stop-kvstore" >&2; exit 2 ;;
esac
