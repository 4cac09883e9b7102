package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// A store's backup and bootstrap Jobs run as the ServiceAccounts their
// specs name and read their envFrom Secrets, through kube-apiserver's real
// ServiceAccount admission and the Job controller; a ServiceAccount that is
// missing holds the backup with a message saying so (set through kubectl,
// in v1beta1), and creating it lets the same attempt run.
func TestBackupsRunAsTheirServiceAccountWithTheirSecrets(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	serviceAccount(t, kube, ns, "backup-writer")
	serviceAccount(t, kube, ns, "backup-reader")
	_, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s3"},
		StringData: map[string]string{"ACCESS_KEY": "e2e"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	obj := store("creds", 1)
	secret := []v1alpha1.EnvFromSource{{Prefix: "S3_", SecretRef: &v1alpha1.EnvSourceReference{Name: "s3"}}}
	obj.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: backupImageOK, ServiceAccountName: "backup-reader", EnvFrom: secret}
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageOK, ServiceAccountName: "backup-writer", EnvFrom: secret}
	createReady(t, kvs, ns, obj)
	requireJobRanAs(t, kube, ns, "creds-bootstrap-1", "backup-reader", secret)

	b := takeBackup(t, kvs, ns, "first", "creds")
	requireJobRanAs(t, kube, ns, b.Status.JobName, "backup-writer", secret)

	mustKubectl(t, "patch", "keyvaluestores.v1beta1.kvstore.io", "creds", "-n", ns, "--type=merge",
		"-p", `{"spec":{"backup":{"serviceAccountName":"backup-mover"}}}`)
	_, err = kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("second", "creds"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitBackupRunning(t, kvs, ns, "second", `serviceaccount "backup-mover" not found`)
	waitStore(t, kvs, ns, "creds", "ReplicaFailure naming the backup Job", func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionReplicaFailure)
		return c != nil && strings.HasPrefix(c.Message, "Job second-1: ") && strings.Contains(c.Message, "backup-mover")
	})

	serviceAccount(t, kube, ns, "backup-mover")
	b = waitBackup(t, kvs, ns, "second", v1alpha1.BackupPhaseCompleted)
	assert.Equal(t, int32(1), b.Status.Attempts, "the attempt whose Pod was refused runs once its ServiceAccount exists")
	requireJobRanAs(t, kube, ns, b.Status.JobName, "backup-mover", secret)
	waitStore(t, kvs, ns, "creds", "no ReplicaFailure", func(k *v1alpha1.KeyValueStore) bool {
		return meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionReplicaFailure) == nil
	})
}

// A backup whose Job's Pod cannot start (kwok plays a kubelet that cannot
// pull its image) says so while it waits; the attempt fails at its
// deadline, and the next one, after the image is fixed, completes.
func TestABackupWhosePodCannotStartSaysWhy(t *testing.T) {
	ctx := context.Background()
	_, kvs := clients(t)
	ns := namespace(t)
	obj := store("pull", 1)
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: "kvstore.io/e2e-image:cannot-pull", ActiveDeadlineSeconds: ptr.To[int64](15)}
	createReady(t, kvs, ns, obj)
	_, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("now", "pull"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitBackupRunning(t, kvs, ns, "now", "attempt 1: Job now-1: its Pod now-1-", "cannot start: ImagePullBackOff")
	assert.Contains(t, mustKubectl(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=now,reason=PodCannotStart", "-o", "name"), "event")

	mustKubectl(t, "patch", "kvs", "pull", "-n", ns, "--type=merge", "-p", `{"spec":{"backup":{"image":"`+backupImageOK+`"}}}`)
	b := waitBackup(t, kvs, ns, "now", v1alpha1.BackupPhaseCompleted)
	assert.Equal(t, int32(2), b.Status.Attempts, "the first attempt failed at its deadline, the second ran the fixed image")
}

// serviceAccount creates the ServiceAccount name in ns.
func serviceAccount(t *testing.T, kube kubernetes.Interface, ns, name string) {
	t.Helper()
	_, err := kube.CoreV1().ServiceAccounts(ns).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// requireJobRanAs requires the Job ns/name to have run its Pod as
// serviceAccount, with envFrom.
func requireJobRanAs(t *testing.T, kube kubernetes.Interface, ns, name, serviceAccount string, envFrom []v1alpha1.EnvFromSource) {
	t.Helper()
	ctx := context.Background()
	job, err := kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	want := make([]corev1.EnvFromSource, 0, len(envFrom))
	for _, s := range envFrom {
		want = append(want, corev1.EnvFromSource{Prefix: s.Prefix, SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.SecretRef.Name}}})
	}
	assert.Equal(t, want, job.Spec.Template.Spec.Containers[0].EnvFrom, name)
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
	require.NoError(t, err)
	require.NotEmpty(t, pods.Items, "Job %s has no Pod", name)
	for _, p := range pods.Items {
		assert.Equal(t, serviceAccount, p.Spec.ServiceAccountName, p.Name)
		assert.Equal(t, ptr.To(corev1.PodSucceeded), ptr.To(p.Status.Phase), p.Name)
	}
}
