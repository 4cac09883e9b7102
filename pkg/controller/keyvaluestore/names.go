package keyvaluestore

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

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

// backupJobName names attempt n (from 1) of a backup; each attempt is a
// Job of its own so a failed one stays for its logs.
func backupJobName(b *v1alpha1.KeyValueStoreBackup, attempt int) string {
	return boundedName(b.Name, "-"+strconv.Itoa(attempt), maxDNSLabel)
}

// bootstrapJobName names attempt n (from 1) of the store's bootstrap.
func bootstrapJobName(kvs *v1alpha1.KeyValueStore, attempt int) string {
	return boundedName(kvs.Name, "-bootstrap-"+strconv.Itoa(attempt), maxDNSLabel)
}

// finalBackupName names the Final KeyValueStoreBackup of one store: the
// store's UID in it keeps it apart from an earlier store of the same name.
func finalBackupName(kvs *v1alpha1.KeyValueStore) string {
	suffix := "-final"
	if uid := shortUID(kvs); uid != "" {
		suffix += "-" + uid
	}
	return boundedName(kvs.Name, suffix, maxDNSLabel)
}

// scheduledBackupName names the backup of one schedule slot: the same slot
// always gets the same name, so a restart or a new leader cannot take it twice.
func scheduledBackupName(kvs *v1alpha1.KeyValueStore, slot time.Time) string {
	return boundedName(kvs.Name, "-"+slot.UTC().Format("200601021504"), maxDNSLabel)
}

func shortUID(kvs *v1alpha1.KeyValueStore) string {
	uid := strings.ReplaceAll(string(kvs.UID), "-", "")
	return uid[:min(len(uid), 8)]
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
