# Certificates of the local stack, made with openssl. Sourced by local-up.sh.
# make_certs DIR: creates (once) three CAs (cluster, front proxy, kvstore's
# etcd), serving, peer and client certificates and the service-account key
# pair under DIR. Files that exist are kept, so new ones appear on the next run.

_cert_ext() { # name sans eku
  cat <<EOT
[req]
distinguished_name = dn
[dn]
[ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = $3
${2:+subjectAltName = $2}
EOT
}

# _sign DIR CA NAME SUBJ EKU [SANS]
_sign() {
  local dir=$1 ca=$2 name=$3 subj=$4 eku=$5 sans=${6:-}
  [[ -f "${dir}/${name}.crt" ]] && return 0
  openssl genrsa -out "${dir}/${name}.key" 2048 2>/dev/null
  openssl req -new -key "${dir}/${name}.key" -subj "${subj}" -out "${dir}/${name}.csr" 2>/dev/null
  _cert_ext "${name}" "${sans}" "${eku}" > "${dir}/${name}.ext"
  openssl x509 -req -in "${dir}/${name}.csr" -CA "${dir}/${ca}.crt" -CAkey "${dir}/${ca}.key" \
    -CAcreateserial -days 365 -sha256 -extfile "${dir}/${name}.ext" -extensions ext \
    -out "${dir}/${name}.crt" 2>/dev/null
  rm -f "${dir}/${name}.csr" "${dir}/${name}.ext"
}

_ca() { # DIR NAME CN
  [[ -f "$1/$2.crt" ]] && return 0
  openssl req -x509 -new -nodes -newkey rsa:2048 -keyout "$1/$2.key" -out "$1/$2.crt" \
    -days 3650 -subj "/CN=$3" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
}

make_certs() {
  local d=$1
  mkdir -p "${d}"
  _ca "${d}" ca "kvstore-local-ca"
  # The aggregator's client certificate comes from a separate CA, so no
  # cluster client certificate can pose as the front proxy.
  _ca "${d}" front-proxy-ca "kvstore-local-front-proxy-ca"

  _sign "${d}" ca kube-apiserver "/CN=kube-apiserver" serverAuth \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1"
  # The aggregator checks exactly <service>.<namespace>.svc against caBundle.
  _sign "${d}" ca kvstore-apiserver-serving "/CN=kvstore-apiserver.kvstore-system.svc" serverAuth \
    "DNS:kvstore-apiserver.kvstore-system.svc,DNS:kvstore-apiserver.kvstore-system.svc.cluster.local,DNS:localhost,IP:127.0.0.1"

  _sign "${d}" ca admin "/O=system:masters/CN=kubernetes-admin" clientAuth
  _sign "${d}" ca kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
  _sign "${d}" ca kube-scheduler "/CN=system:kube-scheduler" clientAuth
  _sign "${d}" ca kwok "/O=system:masters/CN=kwok" clientAuth
  # kvstore-apiserver authenticates as its ServiceAccount, so the RBAC of the
  # base manifests applies to the local process unchanged.
  _sign "${d}" ca kvstore-apiserver "/O=system:serviceaccounts/O=system:serviceaccounts:kvstore-system/CN=system:serviceaccount:kvstore-system:kvstore-apiserver" clientAuth
  _sign "${d}" front-proxy-ca front-proxy-client "/CN=front-proxy-client" clientAuth

  # kvstore-apiserver's etcd has a CA of its own, as in artifacts/base, and
  # admits only client certificates of that CA: no cluster client
  # certificate reaches it. The names are those of the base's Secrets.
  _ca "${d}" kvstore-etcd-ca "kvstore-local-etcd-ca"
  # clientAuth too: etcd's gRPC gateway dials etcd itself with this certificate.
  _sign "${d}" kvstore-etcd-ca kvstore-etcd-server "/CN=kvstore-etcd" serverAuth,clientAuth \
    "DNS:localhost,IP:127.0.0.1"
  _sign "${d}" kvstore-etcd-ca kvstore-etcd-peer "/CN=kvstore-etcd-peer" serverAuth,clientAuth \
    "DNS:localhost,IP:127.0.0.1"
  _sign "${d}" kvstore-etcd-ca kvstore-etcd-client "/CN=kvstore-apiserver" clientAuth

  if [[ ! -f "${d}/sa.key" ]]; then
    openssl genrsa -out "${d}/sa.key" 2048 2>/dev/null
    openssl rsa -in "${d}/sa.key" -pubout -out "${d}/sa.pub" 2>/dev/null
  fi
}

# make_kubeconfig FILE SERVER CA CERT KEY
make_kubeconfig() {
  cat > "$1" <<EOT
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $2
    certificate-authority: $3
users:
- name: user
  user:
    client-certificate: $4
    client-key: $5
contexts:
- name: local
  context:
    cluster: local
    user: user
current-context: local
EOT
}
