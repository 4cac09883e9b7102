package keyvaluestore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	kvsvalidation "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/validation"
)

// Item 3: every name derived from any accepted store name fits its limit.
// The longest accepted name (and a generateName'd one) walks through every
// builder and every name the workload controllers derive in turn.
func TestDerivedNamesFitForTheLongestAcceptedName(t *testing.T) {
	for _, name := range []string{
		strings.Repeat("a", kvsvalidation.MaxNameLength),
		strings.Repeat("a", kvsvalidation.MaxNameLength-5) + "xxxxx", // generateName: prefix + 5
		"a" + strings.Repeat("-b", (kvsvalidation.MaxNameLength-1)/2),
	} {
		t.Run(fmt.Sprint(len(name)), func(t *testing.T) {
			assert.Empty(t, kvsvalidation.ValidateName(name, false), "the test name must be one the API accepts")
			kvs := newStore(withProxy(kvsvalidation.MaxProxyReplicas), withBackup)
			kvs.Name = name
			kvs.Spec.Replicas = ptrInt32(kvsvalidation.MaxReplicas)
			check := func(what, value string, rules ...func(string) []string) {
				t.Helper()
				for _, rule := range rules {
					assert.Empty(t, rule(value), "%s %q (%d chars)", what, value, len(value))
				}
			}
			label := validation.IsValidLabelValue
			dns1035 := validation.IsDNS1035Label
			dns1123 := validation.IsDNS1123Label
			subdomain := validation.IsDNS1123Subdomain
			const hash10, suffix5 = "0123456789", "abcde"

			check("headless Service", *headlessService(kvs).Name, dns1035)
			check("client Service", *clientService(kvs, ComponentData).Name, dns1035)
			sts := *statefulSet(kvs, kvsvalidation.MaxReplicas).Name
			check("StatefulSet", sts, subdomain)
			check("controller-revision-hash label", sts+"-"+hash10, label)
			for i := range kvsvalidation.MaxReplicas {
				pod := fmt.Sprintf("%s-%d", sts, i)
				check("data Pod hostname and pod-name label", pod, dns1123, label)
				check("claim", fmt.Sprintf("%s-%s", dataVolumeName, pod), subdomain)
			}
			check("PodDisruptionBudget", *podDisruptionBudget(kvs).Name, subdomain)
			proxy := *proxyDeployment(kvs, 1).Name
			check("proxy Deployment", proxy, subdomain)
			check("proxy ReplicaSet", proxy+"-"+hash10, subdomain)
			check("proxy Pod", proxy+"-"+hash10+"-"+suffix5, subdomain)
			kvs.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: "restore:1"}
			kvs.UID = "0f5c6a7e-1b2c-4d3e-8f90-123456789abc"
			final := finalBackupName(kvs)
			check("Final backup", final, dns1123)
			slot := scheduledBackupName(kvs, testNow)
			check("scheduled backup", slot, dns1123)
			// A backup's own name is a DNS-1123 label of up to 63 characters.
			for _, b := range []*v1alpha1.KeyValueStoreBackup{newBackup(final, v1alpha1.BackupReasonFinal), newBackup(strings.Repeat("b", 63), v1alpha1.BackupReasonManual)} {
				for _, attempt := range []int{1, 99, 100000} {
					job := *backupJob(kvs, b, attempt, 3).Name
					check("backup Job and its job-name label", job, dns1123, label)
					check("backup Pod", job+"-"+suffix5, subdomain)
				}
				assert.NotEqual(t, backupJobName(b, 1), backupJobName(b, 2))
			}
			for _, attempt := range []int{1, 99, 100000} {
				job := *bootstrapJob(kvs, nil, attempt, false).Name
				check("bootstrap Job and its job-name label", job, dns1123, label)
				check("bootstrap Pod", job+"-"+suffix5, subdomain)
			}
			for _, labels := range []map[string]string{
				labelsFor(kvs, ComponentData), labelsFor(kvs, ComponentProxy), labelsFor(kvs, ComponentBackup),
				statefulSet(kvs, 1).Spec.Template.Labels, proxyDeployment(kvs, 1).Spec.Template.Labels,
				backupJob(kvs, newBackup("b", v1alpha1.BackupReasonManual), 1, 3).Spec.Template.Labels,
				bootstrapJob(kvs, nil, 1, false).Spec.Template.Labels,
			} {
				for k, v := range labels {
					check("label "+k, v, label)
				}
			}
		})
	}
}

func TestBoundedNameKeepsStoresApart(t *testing.T) {
	a := strings.Repeat("a", 60) + "x"
	b := strings.Repeat("a", 60) + "y"
	assert.Equal(t, "short-suffix", boundedName("short", "-suffix", 63))
	assert.NotEqual(t, boundedName(a, "-final-backup-1", 63), boundedName(b, "-final-backup-1", 63))
	assert.LessOrEqual(t, len(boundedName(a, "-final-backup-1", 63)), 63)
	assert.True(t, strings.HasSuffix(boundedName(a, "-final-backup-1", 63), "-final-backup-1"))
}
