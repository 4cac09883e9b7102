#!/usr/bin/env bash
# A real local control plane on 127.0.0.1, without Docker: etcd,
# kube-apiserver (with the aggregation layer), kube-controller-manager,
# kube-scheduler, kwok with fake Nodes, and kvstore-apiserver with its own
# etcd, registered through an APIService.
#
#   hack/local-up.sh run    # foreground; Ctrl-C tears everything down
#   hack/local-up.sh up     # background; state under _output/local. On a
#                           # running stack it starts only what is not running.
#   hack/local-up.sh down   # stop a background stack (by PID files)
#   hack/local-up.sh reset  # down, remove the etcds' data, up: the same stack
#                           # on empty etcds (certificates and kubeconfigs stay)
#   hack/local-up.sh restart-kvstore   # rebuild-and-restart only kvstore-apiserver
#   hack/local-up.sh restart NAME      # start NAME again with the command line it
#                           # was started with (e.g. after a fault test killed it)
#
# KVSTORE_ETCD_MEMBERS=3 gives kvstore-apiserver a three-member etcd
# (etcd-kvstore, etcd-kvstore-2, etcd-kvstore-3 on client ports 32381,
# 32383, 32385; HTTP gateways 32581, 32583, 32585) instead of one; every
# replica is given all three endpoints.
# Use a fresh KVSTORE_LOCAL_DIR when changing it: an etcd data dir keeps its
# cluster membership.
#
# kube-apiserver writes an audit log (logs/kube-apiserver-audit.log: writes
# to the core, apps, policy and batch groups and to Leases, at Metadata
# level), and each kvstore-apiserver replica one of the writes its
# controller makes through its loopback client (logs/NAME-audit.log). A
# replica other than kvstore-apiserver runs through a symlink named after it
# (_output/local/bin/NAME), so its client's default user agent, and so the
# audit log, tells its writes apart from the other replicas'.
#
# A PID file is trusted only while the process it names still has the
# command line recorded when it was started (pids/NAME.cmdline): a PID that
# the kernel reused for another process is never signalled.
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
KVSTORE_ETCD_MEMBERS=${KVSTORE_ETCD_MEMBERS:-1}
[[ "${KVSTORE_ETCD_MEMBERS}" == 1 || "${KVSTORE_ETCD_MEMBERS}" == 3 ]] || { echo "local-up: KVSTORE_ETCD_MEMBERS must be 1 or 3" >&2; exit 1; }

log() { echo ">> $*" >&2; }
die() { echo "local-up: $*" >&2; exit 1; }
kubectl() { "${BIN}/kubectl" --kubeconfig "${KUBECONFIG_ADMIN}" "$@"; }

# STARTED lists what this invocation started; a failing `up` stops only those.
STARTED=()

# binary_of NAME: the binary a component runs.
binary_of() {
  case "$1" in
    etcd-*) echo etcd ;;
    kvstore-apiserver*) echo kvstore-apiserver ;;
    *) echo "$1" ;;
  esac
}

# pid_of NAME: the PID in pids/NAME.pid; fails without a valid one.
pid_of() {
  local pid
  pid=$(cat "${PIDS}/$1.pid" 2>/dev/null) || return 1
  [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
  echo "${pid}"
}

# ours NAME: pids/NAME.pid names a live process that this stack started: its
# command line is byte for byte the one recorded at start (PID files without
# a record, from older scripts, fall back to the executable's path). A zombie
# has an empty command line, so it never matches.
ours() {
  local pid exe
  pid=$(pid_of "$1") || return 1
  if [[ -f "${PIDS}/$1.cmdline" ]]; then
    # Not cmp: /proc files report size 0, and cmp -s trusts sizes.
    [[ "$(tr '\0' '\n' 2>/dev/null < "/proc/${pid}/cmdline")" == "$(tr '\0' '\n' < "${PIDS}/$1.cmdline")" ]]
  else
    exe=$(readlink "/proc/${pid}/exe" 2>/dev/null) || return 1
    [[ "${exe% (deleted)}" == "$(readlink -f "${BIN}/$(binary_of "$1")")" ]]
  fi
}

# keep_log NAME: moves a non-empty logs/NAME.log aside as NAME.log.<time>,
# keeping the newest five of those.
keep_log() {
  local log="${LOGS}/$1.log" old
  [[ -s "${log}" ]] || return 0
  mv "${log}" "${log}.$(date +%s%N)"
  while read -r old; do rm -f "${old}"; done < <(ls -1 "${log}".* 2>/dev/null | sort -r | tail -n +6)
}

# start NAME CMD...: runs CMD in its own session, logging to logs/NAME.log
# (a previous log is kept as logs/NAME.log.<time>: a test that restarts a
# component must not wipe what it logged before, which a failure needs),
# and records its PID and command line.
start() {
  local name=$1; shift
  keep_log "${name}"
  printf '%s\0' "$@" > "${PIDS}/${name}.cmdline"
  setsid "$@" >"${LOGS}/${name}.log" 2>&1 < /dev/null &
  echo $! > "${PIDS}/${name}.pid"
  STARTED+=("${name}")
  # Until setsid has exec'd CMD, the PID shows this shell's command line.
  local _
  for _ in $(seq 1 40); do ours "${name}" && return 0; kill -0 $! 2>/dev/null || break; sleep 0.05; done
  ours "${name}" || die "${name} exited at once; the end of ${LOGS}/${name}.log:
$(tail -n 5 "${LOGS}/${name}.log")"
}

# ensure NAME FUNC [ARGS...]: FUNC ARGS starts NAME, unless it is running.
ensure() {
  local name=$1; shift
  if ours "${name}"; then
    log "${name} is running (PID $(pid_of "${name}"))"
    if [[ "$(readlink "/proc/$(pid_of "${name}")/exe" 2>/dev/null)" == *" (deleted)" ]]; then
      log "  note: its binary was rebuilt since it started; restart it to run the new one (hack/local-up.sh restart-kvstore for kvstore-apiserver)"
    fi
    return 0
  fi
  if [[ -f "${PIDS}/${name}.pid" ]]; then
    log "${name}: PID $(cat "${PIDS}/${name}.pid") is gone or no longer ${name}; starting it again"
  else
    log "starting ${name}"
  fi
  rm -f "${PIDS}/${name}.pid" "${PIDS}/${name}.cmdline"
  "$@"
}

# check_started: dies at once, with its log, if something started by this
# invocation has exited (e.g. its port is taken), instead of timing out.
check_started() {
  local n
  for n in "${STARTED[@]}"; do
    ours "$n" || die "${n} exited; the end of ${LOGS}/${n}.log:
$(tail -n 5 "${LOGS}/${n}.log")"
  done
}

# wait_for WHAT SECONDS CMD...: polls CMD until it succeeds.
wait_for() {
  local what=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    check_started
    if (( SECONDS > deadline )); then die "timed out after ${timeout}s waiting for ${what}; logs in ${LOGS}"; fi
    sleep 0.5
  done
}

# stop_one NAME: SIGTERM, then SIGKILL after 15 s, to the process of
# pids/NAME.pid, and only while it is still the process this stack started.
stop_one() {
  local name=$1 pid _
  pid=$(pid_of "${name}") || { rm -f "${PIDS}/${name}.pid" "${PIDS}/${name}.cmdline"; return 0; }
  if ours "${name}"; then
    kill -TERM "${pid}" 2>/dev/null || true
    for _ in $(seq 1 60); do ours "${name}" || break; sleep 0.25; done
    if ours "${name}"; then
      log "${name} did not stop; killing"
      kill -KILL "${pid}" 2>/dev/null || true
      for _ in $(seq 1 20); do ours "${name}" || break; sleep 0.25; done
    fi
  elif [[ -d "/proc/${pid}" ]]; then
    log "${name}: PID ${pid} is another process now; not signalled"
  fi
  rm -f "${PIDS}/${name}.pid" "${PIDS}/${name}.cmdline"
}

# Clients first (every kvstore-apiserver replica, whatever start-kvstore
# named it), then kube-apiserver, then the etcds: each then exits quickly.
STOP_LAST=(kwok kube-controller-manager kube-scheduler kube-apiserver etcd-kvstore etcd-kvstore-2 etcd-kvstore-3 etcd-kube)
stop_order() {
  local f n
  for f in "${PIDS}"/*.pid; do
    [[ -e "$f" ]] || continue
    n=$(basename "$f" .pid)
    [[ " ${STOP_LAST[*]} " == *" $n "* ]] || echo "$n"
  done
  echo "${STOP_LAST[@]}"
}

down() {
  local n
  for n in $(stop_order); do stop_one "$n"; done
}

# stop_started: what this invocation started, in stop order.
stop_started() {
  local n s
  for n in $(stop_order); do
    for s in "${STARTED[@]}"; do
      if [[ "$n" == "$s" ]]; then stop_one "$n"; fi
    done
  done
}

# running_any: whether any component of the stack is running.
running_any() {
  local n
  for n in $(stop_order); do ours "$n" && return 0; done
  return 1
}

check_binaries() {
  local b
  for b in openssl curl setsid; do
    command -v "$b" >/dev/null || die "$b is missing: the local stack needs it (Debian: apt-get install openssl curl util-linux)"
  done
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kvstore-apiserver; do
    [[ -x "${BIN}/${b}" ]] || die "${BIN}/${b} is missing: run make tools build"
  done
}

# start_etcd NAME CLIENT-PORT [FLAGS...]: one member; peer port +1, metrics +100.
start_etcd() {
  local name=$1 port=$2; shift 2
  start "${name}" "${BIN}/etcd" --name "${name}" --data-dir "${STATE}/${name}" \
    --listen-metrics-urls "http://127.0.0.1:$((port + 100))" --log-level warn "$@" ${ETCD_EXTRA_FLAGS:-}
}

start_etcd_kube() {
  local port=${KUBE_ETCD_PORT}
  start_etcd etcd-kube "${port}" \
    --listen-client-urls "http://127.0.0.1:${port}" --advertise-client-urls "http://127.0.0.1:${port}" \
    --listen-peer-urls "http://127.0.0.1:$((port + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
    --initial-cluster "etcd-kube=http://127.0.0.1:$((port + 1))"
}

# kvstore_etcd_members: the names of the kvstore etcd's members.
kvstore_etcd_members() {
  echo etcd-kvstore
  if (( KVSTORE_ETCD_MEMBERS == 3 )); then echo etcd-kvstore-2 etcd-kvstore-3; fi
}

# kvstore_etcd_port NAME: the client port of a kvstore etcd member.
kvstore_etcd_port() {
  case "$1" in
    etcd-kvstore) echo "${KVSTORE_ETCD_PORT}" ;;
    etcd-kvstore-2) echo $((KVSTORE_ETCD_PORT + 2)) ;;
    etcd-kvstore-3) echo $((KVSTORE_ETCD_PORT + 4)) ;;
  esac
}

# kvstore_etcd_servers: the client URLs of every member, comma-separated.
kvstore_etcd_servers() {
  local m urls=()
  for m in $(kvstore_etcd_members); do urls+=("https://127.0.0.1:$(kvstore_etcd_port "$m")"); done
  (IFS=,; echo "${urls[*]}")
}

# kvstore-apiserver's etcd, as in artifacts/base: TLS on the client and peer
# ports, and only certificates of its own CA get in. The client port serves
# gRPC alone (--listen-client-http-urls moves etcd's HTTP gateway to port
# +200): with TLS and both on one port, etcd serves gRPC through Go's HTTP
# server, which costs it and its clients about twice the CPU per request
# (etcd-io/etcd#15402). start_etcd_kvstore NAME starts one member (of one or
# of three).
start_etcd_kvstore() {
  local name=${1:-etcd-kvstore} c="${CERTS}/kvstore-etcd" m cluster=()
  local port
  port=$(kvstore_etcd_port "${name}")
  for m in $(kvstore_etcd_members); do cluster+=("${m}=https://127.0.0.1:$(($(kvstore_etcd_port "$m") + 1))"); done
  start_etcd "${name}" "${port}" \
    --listen-client-urls "https://127.0.0.1:${port}" --advertise-client-urls "https://127.0.0.1:${port}" \
    --listen-client-http-urls "https://127.0.0.1:$((port + 200))" \
    --cert-file "${c}-server.crt" --key-file "${c}-server.key" --trusted-ca-file "${c}-ca.crt" --client-cert-auth \
    --listen-peer-urls "https://127.0.0.1:$((port + 1))" --initial-advertise-peer-urls "https://127.0.0.1:$((port + 1))" \
    --peer-cert-file "${c}-peer.crt" --peer-key-file "${c}-peer.key" --peer-trusted-ca-file "${c}-ca.crt" \
    --peer-client-cert-auth --peer-cert-allowed-cn kvstore-etcd-peer \
    --initial-cluster "$(IFS=,; echo "${cluster[*]}")" --initial-cluster-state new
}

# write_audit_policies: kube-apiserver's (writes of workload objects and
# Leases) and kvstore-apiserver's (its controller's writes, which come
# through the loopback client as system:apiserver). Metadata level: who,
# what, when, with which user agent; no bodies.
write_audit_policies() {
  cat > "${STATE}/audit-policy.yaml" <<EOT
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources: [{group: "", resources: [events]}]
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
  resources:
  - {group: ""}
  - {group: apps}
  - {group: policy}
  - {group: batch}
  - {group: coordination.k8s.io, resources: [leases]}
- level: None
EOT
  cat > "${STATE}/kvstore-audit-policy.yaml" <<EOT
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["system:apiserver"]
  verbs: [create, update, patch, delete, deletecollection]
  resources: [{group: kvstore.io}]
- level: None
EOT
}

# KUBE_APISERVER_EXTRA_FLAGS, e.g.
# --enable-admission-plugins=OwnerReferencesPermissionEnforcement to check
# the controller's RBAC on keyvaluestores/finalizers. Not on by default: that
# plugin refuses the controller's writes whenever kvstore.io is not
# discoverable, and the leader-election test stops the only replica the
# local APIService reaches.
start_kube_apiserver() {
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
    --enable-aggregator-routing=false \
    --audit-policy-file "${STATE}/audit-policy.yaml" --audit-log-path "${LOGS}/kube-apiserver-audit.log" \
    --audit-log-format json --audit-log-mode blocking ${KUBE_APISERVER_EXTRA_FLAGS:-}
}

start_kube_controller_manager() {
  local kcm="${STATE}/kube-controller-manager.kubeconfig"
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
}

start_kube_scheduler() {
  local sched="${STATE}/kube-scheduler.kubeconfig"
  start kube-scheduler "${BIN}/kube-scheduler" \
    --kubeconfig "${sched}" --authentication-kubeconfig "${sched}" --authorization-kubeconfig "${sched}" \
    --bind-address 127.0.0.1 --secure-port "${SCHEDULER_PORT}" --leader-elect=false
}

start_kwok() {
  start kwok "${BIN}/kwok" --kubeconfig "${STATE}/kwok.kubeconfig" -c "${ROOT}/hack/kwok/stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.244.0.0/16 --node-ip=10.0.0.1 --server-address "127.0.0.1:${KWOK_PORT}" \
    --node-lease-duration-seconds=40
}

# start_kvstore NAME PORT [FLAGS...]: a kvstore-apiserver replica on the
# stack's kvstore etcd, with that etcd's client certificate. Replicas other
# than kvstore-apiserver run through a symlink named NAME: the user agent of
# their clients starts with NAME. KVSTORE_GOGC sets GOGC for kvstore-apiserver
# alone (the benchmark's GC lever; GOGC itself would reach every process).
start_kvstore() {
  local name=$1 port=$2; shift 2
  local exe="${BIN}/kvstore-apiserver"
  if [[ "${name}" != kvstore-apiserver ]]; then
    mkdir -p "${STATE}/bin"
    ln -sfn "${exe}" "${STATE}/bin/${name}"
    exe="${STATE}/bin/${name}"
  fi
  GOGC="${KVSTORE_GOGC:-${GOGC:-}}" start "${name}" "${exe}" \
    --bind-address 127.0.0.1 --secure-port "${port}" \
    --tls-cert-file "${CERTS}/kvstore-apiserver-serving.crt" --tls-private-key-file "${CERTS}/kvstore-apiserver-serving.key" \
    --etcd-servers "$(kvstore_etcd_servers)" \
    --audit-policy-file "${STATE}/kvstore-audit-policy.yaml" --audit-log-path "${LOGS}/${name}-audit.log" \
    --audit-log-format json --audit-log-mode blocking \
    --etcd-cafile "${CERTS}/kvstore-etcd-ca.crt" \
    --etcd-certfile "${CERTS}/kvstore-etcd-client.crt" --etcd-keyfile "${CERTS}/kvstore-etcd-client.key" \
    --kubeconfig "${STATE}/kvstore-apiserver.kubeconfig" \
    --authentication-kubeconfig "${STATE}/kvstore-apiserver.kubeconfig" \
    --authorization-kubeconfig "${STATE}/kvstore-apiserver.kubeconfig" \
    "$@"
}

# up starts whatever of the stack is not running (everything, the first
# time), then waits until the whole stack serves.
up() {
  check_binaries
  local t0=${SECONDS}
  mkdir -p "${LOGS}" "${PIDS}"
  make_certs "${CERTS}"
  write_audit_policies
  local k="https://127.0.0.1:${KUBE_APISERVER_PORT}" n
  make_kubeconfig "${KUBECONFIG_ADMIN}" "$k" "${CERTS}/ca.crt" "${CERTS}/admin.crt" "${CERTS}/admin.key"
  for n in kube-controller-manager kube-scheduler kwok kvstore-apiserver; do
    make_kubeconfig "${STATE}/${n}.kubeconfig" "$k" "${CERTS}/ca.crt" "${CERTS}/${n}.crt" "${CERTS}/${n}.key"
  done

  ensure etcd-kube start_etcd_kube
  for n in $(kvstore_etcd_members); do ensure "${n}" start_etcd_kvstore "${n}"; done
  for n in $(kvstore_etcd_members); do
    wait_for "etcd (${n}) /health" 30 curl -fs "http://127.0.0.1:$(($(kvstore_etcd_port "$n") + 100))/health"
  done
  ensure kube-apiserver start_kube_apiserver
  wait_for "kube-apiserver /readyz" 90 kubectl get --raw /readyz

  ensure kube-controller-manager start_kube_controller_manager
  ensure kube-scheduler start_kube_scheduler
  ensure kwok start_kwok

  log "applying ${NODES} fake Nodes and a default StorageClass"
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
# Claims may be grown (a store's spec.storage); with no resizer for hostPath,
# kube-controller-manager leaves the growth to an external one, which the
# e2e tests play.
allowVolumeExpansion: true
EOT

  log "registering kvstore.io (artifacts/local overlay)"
  apply_overlay
  ensure kvstore-apiserver start_kvstore kvstore-apiserver "${KVSTORE_PORT}" ${KVSTORE_EXTRA_FLAGS:-}
  wait_for "APIServices v1beta1 and v1alpha1.kvstore.io Available" 90 \
    kubectl wait --for=condition=Available --timeout=2s apiservice/v1beta1.kvstore.io apiservice/v1alpha1.kvstore.io
  # In the preferred version, v1beta1: kube-apiserver's aggregated
  # discovery may list only v1alpha1 for a moment after kvstore-apiserver
  # restarts, and the example (v1beta1) would then not map.
  wait_for "discovery of keyvaluestores in kvstore.io/v1beta1" 30 bash -c "'${BIN}/kubectl' --kubeconfig '${KUBECONFIG_ADMIN}' api-resources --api-group=kvstore.io --no-headers | grep '^keyvaluestores ' | grep -q ' kvstore.io/v1beta1 '"
  wait_for "kwok Nodes Ready" 60 kubectl wait --for=condition=Ready --timeout=2s node --all
  wait_for "default ServiceAccount" 60 kubectl get serviceaccount default -n default
  # A condition seen before a restart (Available) may pass while what was
  # just started has already exited.
  check_started
  if (( ${#STARTED[@]} == 0 )); then
    log "stack already up; nothing started"
  else
    log "stack up in $((SECONDS - t0))s (started: ${STARTED[*]})"
  fi
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

  # Take a backup now, and list backups (scheduled ones appear at 03:00 UTC):
  kubectl create -f ${ROOT}/artifacts/examples/keyvaluestorebackup.yaml
  kubectl wait kvsbackup/example-now --for=condition=Completed
  kubectl get kvsbackup -A

Logs: ${LOGS}
EOT
}

create_example() {
  # kube-apiserver's discovery of kvstore.io can lag a restart of
  # kvstore-apiserver by a moment ("no matches for kind"): try again for a
  # while, and show the error of the last try.
  local try
  for try in $(seq 1 20); do
    kubectl apply -f "${ROOT}/artifacts/examples/keyvaluestore.yaml" >/dev/null 2>&1 && break
    sleep 0.5
  done
  kubectl apply -f "${ROOT}/artifacts/examples/keyvaluestore.yaml" >/dev/null
  kubectl get kvs -A
}

case "${1:-}" in
  up)
    # A failure stops only what this run started: a running stack stays up.
    trap 'stop_started' EXIT
    up
    create_example
    trap - EXIT
    usage
    echo "  make down   # stops it"
    ;;
  run)
    # run owns the whole stack, since Ctrl-C tears all of it down.
    if running_any; then die "a local stack is (partly) running: make down first, or make up to complete it"; fi
    trap 'echo; log "tearing down"; down; exit 0' INT TERM
    trap 'down' EXIT
    up
    create_example
    usage
    echo "  Ctrl-C tears it down."
    while ours kube-apiserver; do sleep 1; done
    log "kube-apiserver exited; tearing down"; down; exit 1
    ;;
  down) down ;;
  reset)
    # The benchmark's --fresh-stack: each system it compares starts on empty
    # etcds and freshly started processes, not on the state the previous
    # one left behind.
    down
    rm -rf "${STATE}/etcd-kube" "${STATE}"/etcd-kvstore "${STATE}"/etcd-kvstore-[0-9]
    trap 'stop_started' EXIT
    up
    trap - EXIT
    ;;
  start-kvstore)
    # start-kvstore NAME PORT [FLAGS...]: one more kvstore-apiserver replica
    # on the same etcd and Lease (used by the leader-election tests).
    [[ $# -ge 3 ]] || die "usage: $0 start-kvstore NAME PORT [FLAGS...]"
    name=$2 port=$3; shift 3
    mkdir -p "${LOGS}" "${PIDS}"
    ensure "${name}" start_kvstore "${name}" "${port}" "$@"
    wait_for "${name} /readyz" 60 curl -fsk "https://127.0.0.1:${port}/readyz"
    ;;
  stop-kvstore)
    # stop-kvstore NAME: stop a replica started by start-kvstore.
    [[ $# -ge 2 ]] || die "usage: $0 stop-kvstore NAME"
    stop_one "$2"
    ;;
  restart-kvstore)
    stop_one kvstore-apiserver
    start_kvstore kvstore-apiserver "${KVSTORE_PORT}" ${KVSTORE_EXTRA_FLAGS:-}
    wait_for "APIService Available" 90 kubectl wait --for=condition=Available --timeout=2s apiservice/v1beta1.kvstore.io apiservice/v1alpha1.kvstore.io
    check_started
    ;;
  restart)
    # restart NAME: stop NAME if it runs, then start it again with the
    # command line recorded when it was last started. Used by the fault
    # tests after a kill -9.
    [[ $# -ge 2 ]] || die "usage: $0 restart NAME"
    name=$2
    [[ "${name}" =~ ^[a-z0-9-]+$ ]] || die "restart: bad name ${name}"
    [[ -f "${PIDS}/${name}.cmdline" ]] || die "restart: ${name} was never started here (no ${PIDS}/${name}.cmdline)"
    mapfile -d '' cmd < "${PIDS}/${name}.cmdline"
    stop_one "${name}"
    start "${name}" "${cmd[@]}"
    ;;
  *) echo "usage: $0 run|up|down|reset|restart NAME|restart-kvstore|start-kvstore|stop-kvstore" >&2; exit 2 ;;
esac
