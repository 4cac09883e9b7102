package keyvaluestore

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// maxDNSLabel is the longest DNS-1123/1035 label: Service names, Job names
// (copied into the batch.kubernetes.io/job-name label) and hostnames.
const maxDNSLabel = 63

// Names of the objects of a store. Each is derived by boundedName, so every
// name the API accepts yields valid, distinct names; the StatefulSet and the
// PodDisruptionBudget share the store's name, which validation already keeps
// short enough for the StatefulSet's "<name>-<revision hash>" label.
func headlessServiceName(kvs *v1alpha1.KeyValueStore) string {
	return boundedName(kvs.Name, "-headless", maxDNSLabel)
}
func proxyName(kvs *v1alpha1.KeyValueStore) string {
	return boundedName(kvs.Name, "-proxy", maxDNSLabel)
}

// finalBackupJobName names attempt n (from 1) of the final backup; each
// attempt is a Job of its own so a failed one stays for its logs.
func finalBackupJobName(kvs *v1alpha1.KeyValueStore, attempt int) string {
	return boundedName(kvs.Name, "-final-backup-"+strconv.Itoa(attempt), maxDNSLabel)
}

// boundedName is base+suffix when that fits max; otherwise base is cut and
// a hash of the whole of it keeps names of different stores apart.
func boundedName(base, suffix string, max int) string {
	if len(base)+len(suffix) <= max {
		return base + suffix
	}
	sum := sha256.Sum256([]byte(base))
	hash := hex.EncodeToString(sum[:])[:8]
	keep := max - len(suffix) - len(hash) - 1
	return strings.TrimRight(base[:keep], "-") + "-" + hash + suffix
}
