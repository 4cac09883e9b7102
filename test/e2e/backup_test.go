package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// The local stack's kwok stages complete Job Pods, except those of the
// fail image, which fail, and of the hang image, which run until deleted.
const (
	backupImageOK   = "kvstore.io/e2e-backup:ok"
	backupImageFail = "kvstore.io/e2e-backup:fail"
	backupImageHang = "kvstore.io/e2e-backup:hang"
)

func manualBackup(name, store string) *v1alpha1.KeyValueStoreBackup {
	return &v1alpha1.KeyValueStoreBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.KeyValueStoreBackupSpec{StoreName: store, Reason: v1alpha1.BackupReasonManual},
	}
}

// waitBackup waits until the backup reaches phase and returns it.
func waitBackup(t *testing.T, kvs versioned.Interface, ns, name string, phase v1alpha1.KeyValueStoreBackupPhase) *v1alpha1.KeyValueStoreBackup {
	t.Helper()
	var got *v1alpha1.KeyValueStoreBackup
	require.NoError(t, framework.WaitFor(context.Background(), readyTimeout, func(ctx context.Context) error {
		b, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if b.Status.Phase != phase {
			return fmt.Errorf("backup %s is %q (%s), want %s", name, b.Status.Phase, b.Status.Message, phase)
		}
		got = b
		return nil
	}))
	return got
}

// takeBackup creates the Manual backup name of store and waits until it
// is Completed.
func takeBackup(t *testing.T, kvs versioned.Interface, ns, name, store string) *v1alpha1.KeyValueStoreBackup {
	t.Helper()
	_, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(context.Background(), manualBackup(name, store), metav1.CreateOptions{})
	require.NoError(t, err)
	return waitBackup(t, kvs, ns, name, v1alpha1.BackupPhaseCompleted)
}

// waitBackupRunning waits until the backup runs with a message that has
// every one of parts, and returns it.
func waitBackupRunning(t *testing.T, kvs versioned.Interface, ns, name string, parts ...string) *v1alpha1.KeyValueStoreBackup {
	t.Helper()
	var got *v1alpha1.KeyValueStoreBackup
	require.NoError(t, framework.WaitFor(context.Background(), readyTimeout, func(ctx context.Context) error {
		b, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if b.Status.Phase != v1alpha1.BackupPhaseRunning || slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(b.Status.Message, p) }) {
			return fmt.Errorf("backup %s is %s: %q, want Running with %q", name, b.Status.Phase, b.Status.Message, parts)
		}
		got = b
		return nil
	}))
	return got
}

func TestBackupOnDemand(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("src", 2)
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageOK, Command: []string{"/backup"}}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "src", "Ready", isReady)

	_, err = kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("now", "src"), metav1.CreateOptions{})
	require.NoError(t, err)
	b := waitBackup(t, kvs, ns, "now", v1alpha1.BackupPhaseCompleted)
	assert.Equal(t, int32(1), b.Status.Attempts)
	assert.NotNil(t, b.Status.StartTime)
	assert.NotNil(t, b.Status.CompletionTime)
	assert.True(t, meta.IsStatusConditionTrue(b.Status.Conditions, "Completed"))

	job, err := kube.BatchV1().Jobs(ns).Get(ctx, b.Status.JobName, metav1.GetOptions{})
	require.NoError(t, err)
	assertControlledAsTheGarbageCollectorSeesIt(t, kube, job, "KeyValueStoreBackup", b.UID)
	env := map[string]string{}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "now", env["KVSTORE_BACKUP_NAME"])
	assert.Equal(t, "Manual", env["KVSTORE_BACKUP_REASON"])
	assert.Equal(t, "src-0.src-headless."+ns+".svc,src-1.src-headless."+ns+".svc", env["KVSTORE_ENDPOINTS"])
	waitStore(t, kvs, ns, "src", "lastBackupTime", func(k *v1alpha1.KeyValueStore) bool {
		return k.Status.LastBackupTime != nil && k.Status.LastBackupTime.Equal(b.Status.CompletionTime)
	})

	// kubectl lists it with its columns; the field selector finds it by store.
	out := mustKubectl(t, "get", "kvsbackup", "-n", ns, "--field-selector", "spec.storeName=src")
	header, rows := table(t, out)
	assert.Equal(t, []string{"NAME", "STORE", "PHASE", "STARTED", "COMPLETED", "AGE"}, header)
	require.Len(t, rows, 1)
	assert.Equal(t, "Completed", rows[0]["PHASE"])

	// Backups outlive their store: the store's deletion leaves "now" and
	// adds its Final backup, Completed.
	require.NoError(t, kvs.KvstoreV1alpha1().KeyValueStores(ns).Delete(ctx, "src", metav1.DeleteOptions{}))
	waitGone(t, kvs, ns, "src")
	list, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	reasons := map[v1alpha1.KeyValueStoreBackupReason]v1alpha1.KeyValueStoreBackupPhase{}
	for _, b := range list.Items {
		reasons[b.Spec.Reason] = b.Status.Phase
	}
	assert.Equal(t, map[v1alpha1.KeyValueStoreBackupReason]v1alpha1.KeyValueStoreBackupPhase{
		v1alpha1.BackupReasonManual: v1alpha1.BackupPhaseCompleted,
		v1alpha1.BackupReasonFinal:  v1alpha1.BackupPhaseCompleted,
	}, reasons)
}

// A backup whose running Job is deleted (by a user, a TTL, a cleanup
// policy) counts that attempt as failed and starts the next one after the
// backoff; it neither waits forever nor starts at once.
func TestBackupWhoseJobIsDeletedIsRetried(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("lostjob", 1)
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageHang}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "lostjob", "Ready", isReady)
	_, err = kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("b", "lostjob"), metav1.CreateOptions{})
	require.NoError(t, err)
	first := waitBackup(t, kvs, ns, "b", v1alpha1.BackupPhaseRunning)
	require.NotEmpty(t, first.Status.JobName)

	// The next attempt may complete; the running one loses its Job.
	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Patch(ctx, "lostjob", types.MergePatchType,
		[]byte(`{"spec":{"backup":{"image":"`+backupImageOK+`"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, kube.BatchV1().Jobs(ns).Delete(ctx, first.Status.JobName, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))

	b := waitBackup(t, kvs, ns, "b", v1alpha1.BackupPhaseCompleted)
	assert.Equal(t, int32(2), b.Status.Attempts)
	assert.NotEqual(t, first.Status.JobName, b.Status.JobName)
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=b,reason=AttemptFailed"})
	require.NoError(t, err)
	require.NotEmpty(t, events.Items, "the lost attempt is reported")
	assert.Contains(t, events.Items[0].Message, "was deleted")
}

// A store deleted with its Final backup skipped while a Manual backup
// runs keeps its data tier, and its claims, until the real job controller
// ends that backup's Job (its activeDeadlineSeconds here); the backup
// then ends Failed without another attempt, and the teardown finishes.
func TestTeardownWaitsForARunningBackup(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("held", 1)
	obj.Annotations = map[string]string{v1alpha1.SkipFinalBackupAnnotation: "true"}
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageHang, ActiveDeadlineSeconds: ptr.To[int64](15)}
	obj.Spec.PersistentVolumeClaimRetentionPolicy = &v1alpha1.PersistentVolumeClaimRetentionPolicy{WhenDeleted: v1alpha1.DeletePersistentVolumeClaimRetentionPolicyType}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "held", "Ready", isReady)
	_, err = kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("b", "held"), metav1.CreateOptions{})
	require.NoError(t, err)
	running := waitBackup(t, kvs, ns, "b", v1alpha1.BackupPhaseRunning)

	require.NoError(t, kvs.KvstoreV1alpha1().KeyValueStores(ns).Delete(ctx, "held", metav1.DeleteOptions{}))
	waitStore(t, kvs, ns, "held", "waiting for the backup at the data tier", func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionProgressing)
		return c != nil && c.Reason == "TeardownScaleDownData" && strings.Contains(c.Message, "backup Job "+running.Status.JobName+" still reads the data")
	})
	job, err := kube.BatchV1().Jobs(ns).Get(ctx, running.Status.JobName, metav1.GetOptions{})
	require.NoError(t, err)
	require.False(t, jobComplete(job) || slices.ContainsFunc(job.Status.Conditions, func(c batchv1.JobCondition) bool { return c.Type == batchv1.JobFailed }),
		"the Job still runs")
	sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "held", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), ptr.Deref(sts.Spec.Replicas, 0), "not scaled down under the backup")
	_, err = kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-held-0", metav1.GetOptions{})
	require.NoError(t, err, "the claim stays while the backup may still succeed")

	waitGone(t, kvs, ns, "held")
	b := waitBackup(t, kvs, ns, "b", v1alpha1.BackupPhaseFailed)
	assert.Equal(t, int32(1), b.Status.Attempts, "no other attempt against a store being torn down")
	assert.Contains(t, []string{"StoreDeleted", "StoreNotFound"}, meta.FindStatusCondition(b.Status.Conditions, "Failed").Reason)
}

func TestBackupThatCannotRunFails(t *testing.T) {
	ctx := context.Background()
	_, kvs := clients(t)
	ns := namespace(t)
	_, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("orphan", "nosuchstore"), metav1.CreateOptions{})
	require.NoError(t, err)
	b := waitBackup(t, kvs, ns, "orphan", v1alpha1.BackupPhaseFailed)
	c := meta.FindStatusCondition(b.Status.Conditions, "Failed")
	require.NotNil(t, c)
	assert.Equal(t, "StoreNotFound", c.Reason)

	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, store("plain", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("unconfigured", "plain"), metav1.CreateOptions{})
	require.NoError(t, err)
	b = waitBackup(t, kvs, ns, "unconfigured", v1alpha1.BackupPhaseFailed)
	assert.Equal(t, "BackupNotConfigured", meta.FindStatusCondition(b.Status.Conditions, "Failed").Reason)
}

// A schedule of every minute takes a backup per slot, keeps only `keep`
// of them, and a leader change in the middle creates no slot twice.
func TestScheduledBackupsSurviveFailover(t *testing.T) {
	ctx := context.Background()
	_, kvs := clients(t)
	ns := namespace(t)
	obj := store("cron", 1)
	obj.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageOK, Schedule: "* * * * *", Keep: ptr.To[int32](2)}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)

	// Record every scheduled backup ever seen, by slot. Polled rather than
	// watched: the watch goes through the replica the failover restarts.
	pollCtx, stopPolling := context.WithCancel(ctx)
	var mu sync.Mutex
	seen := map[string]map[string]bool{} // slot → names of its backups
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for pollCtx.Err() == nil {
			if list, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).List(pollCtx, metav1.ListOptions{}); err == nil {
				mu.Lock()
				for _, b := range list.Items {
					if b.Spec.Reason != v1alpha1.BackupReasonScheduled {
						continue
					}
					slot := b.Annotations["kvstore.io/scheduled-at"]
					if seen[slot] == nil {
						seen[slot] = map[string]bool{}
					}
					seen[slot][b.Name] = true
				}
				mu.Unlock()
			}
			time.Sleep(framework.PollInterval)
		}
	}()
	slots := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}

	waitStore(t, kvs, ns, "cron", "Ready with a next backup time", func(k *v1alpha1.KeyValueStore) bool {
		return isReady(k) && k.Status.NextBackupTime != nil
	})
	require.NoError(t, framework.WaitFor(ctx, 2*time.Minute, func(context.Context) error {
		if n := slots(); n < 1 {
			return fmt.Errorf("%d slots", n)
		}
		return nil
	}))

	// Hand the controller to another replica (graceful: the Lease is released).
	extra := replica{"kvstore-apiserver-e2e-cron", 8446}
	localUp(t, "start-kvstore", extra.name, "8446")
	t.Cleanup(func() {
		localUp(t, "stop-kvstore", extra.name)
		localUp(t, "restart-kvstore")
	})
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: adminTLS(t)}}
	leader := waitLeader(t, httpClient, []replica{mainReplica, extra}, time.Minute)
	require.NoError(t, syscall.Kill(leader.pid(t), syscall.SIGTERM))
	waitLeader(t, httpClient, without([]replica{mainReplica, extra}, leader), time.Minute)
	if leader == mainReplica {
		// The aggregator reaches the stack's own replica: bring it back
		// (as a follower now).
		localUp(t, "restart-kvstore")
	}

	require.NoError(t, framework.WaitFor(ctx, 4*time.Minute, func(context.Context) error {
		if n := slots(); n < 3 {
			return fmt.Errorf("%d slots so far", n)
		}
		return nil
	}))
	// Pruned down to keep: exactly two Completed, and a scheduled backup
	// seen before is gone (before, "at most two Completed" held at once,
	// before the third slot's Job had finished, so pruning was never seen).
	require.NoError(t, framework.WaitFor(ctx, time.Minute, func(ctx context.Context) error {
		list, err := kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		listed, completed := map[string]bool{}, 0
		for _, b := range list.Items {
			listed[b.Name] = true
			if b.Spec.Reason == v1alpha1.BackupReasonScheduled && b.Status.Phase == v1alpha1.BackupPhaseCompleted {
				completed++
			}
		}
		mu.Lock()
		pruned := false
		for _, names := range seen {
			for name := range names {
				pruned = pruned || !listed[name]
			}
		}
		mu.Unlock()
		if completed != 2 || !pruned {
			return fmt.Errorf("%d Completed scheduled backups (keep is 2), one pruned: %v", completed, pruned)
		}
		return nil
	}))
	stopPolling()
	wg.Wait()
	for slot, names := range seen {
		assert.Len(t, names, 1, "slot %s has backups %v", slot, names)
	}
	k, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Get(ctx, "cron", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, meta.IsStatusConditionTrue(k.Status.Conditions, v1alpha1.ConditionScheduledBackupSucceeded))
	assert.NotNil(t, k.Status.LastBackupTime)
}

// Restore: data tier ready → bootstrap Job → proxy tier → Ready.
func TestRestoreBootstrapsBeforeTheProxy(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	src := store("origin", 1)
	src.Spec.Backup = &v1alpha1.BackupSpec{Image: backupImageOK}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, src, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "origin", "Ready", isReady)
	_, err = kvs.KvstoreV1alpha1().KeyValueStoreBackups(ns).Create(ctx, manualBackup("snap", "origin"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitBackup(t, kvs, ns, "snap", v1alpha1.BackupPhaseCompleted)

	// Record the order: bootstrap Job succeeded, then the client Service and
	// the proxy Deployment created.
	jobs, err := kube.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=bootstrap"})
	require.NoError(t, err)
	deploys, err := kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	services, err := kube.CoreV1().Services(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=restored"})
	require.NoError(t, err)
	// Each by the resourceVersion of its write: kube-apiserver's come from
	// one etcd counter and order writes across the three watches, which
	// deliver independently (their arrival times do not).
	var jobDone, proxyCreated, clientsServed uint64
	var phases []v1alpha1.KeyValueStorePhase
	var mu sync.Mutex
	added := func(e watch.Event) bool { return e.Type == watch.Added }
	recordFirst(jobs, &mu, &jobDone, func(e watch.Event) bool {
		j, ok := e.Object.(*batchv1.Job)
		return ok && jobComplete(j)
	})
	recordFirst(deploys, &mu, &proxyCreated, added)
	recordFirst(services, &mu, &clientsServed, added)
	defer jobs.Stop()
	defer deploys.Stop()
	defer services.Stop()

	restored := store("restored", 1)
	restored.Spec.Proxy = &v1alpha1.ProxySpec{Replicas: ptr.To[int32](1), Image: "envoyproxy/envoy:v1.31.0"}
	restored.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: backupImageOK, Command: []string{"/restore"}, FromBackup: "snap"}
	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, restored, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "restored", "Ready", func(k *v1alpha1.KeyValueStore) bool {
		if !slices.Contains(phases, k.Status.Phase) {
			phases = append(phases, k.Status.Phase)
		}
		return isReady(k) && k.Status.ProxyReadyReplicas == 1
	})
	mu.Lock()
	defer mu.Unlock()
	require.NotZero(t, jobDone, "the bootstrap Job never completed")
	require.NotZero(t, proxyCreated, "the proxy was never created")
	assert.Less(t, jobDone, proxyCreated, "the proxy comes only after the bootstrap succeeded")
	require.NotZero(t, clientsServed, "the client Service was never created")
	assert.Less(t, jobDone, clientsServed, "the client Service comes only after the bootstrap succeeded")
	k, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Get(ctx, "restored", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, meta.IsStatusConditionTrue(k.Status.Conditions, v1alpha1.ConditionBootstrapped))
	t.Logf("phases seen by polling: %v", phases)
	// Every phase transition is an event: the store went through Bootstrapping.
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=restored,reason=Bootstrapping"})
	require.NoError(t, err)
	require.NotEmpty(t, events.Items, "no phase change to Bootstrapping")
	assert.Contains(t, events.Items[0].Message, "-> Bootstrapping")
}

// A bootstrap whose Job is deleted while it runs is not run again from
// attempt 1 (a second restore could overwrite what was written since):
// the store fails with BootstrapJobLost and says how to go on.
func TestBootstrapWhoseJobIsDeletedIsNotRunAgain(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("lostboot", 1)
	obj.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: backupImageHang}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "lostboot", "bootstrap running", func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionBootstrapped)
		return c != nil && c.Reason == "BootstrapRunning"
	})
	bootstrapJobs := metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=bootstrap,app.kubernetes.io/instance=lostboot"}
	jobs, err := kube.BatchV1().Jobs(ns).List(ctx, bootstrapJobs)
	require.NoError(t, err)
	require.Len(t, jobs.Items, 1)
	require.NoError(t, kube.BatchV1().Jobs(ns).Delete(ctx, jobs.Items[0].Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))

	k := waitStore(t, kvs, ns, "lostboot", "Failed", func(k *v1alpha1.KeyValueStore) bool { return k.Status.Phase == v1alpha1.PhaseFailed })
	c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionBootstrapped)
	require.NotNil(t, c)
	assert.Equal(t, "BootstrapJobLost", c.Reason)
	jobs, err = kube.BatchV1().Jobs(ns).List(ctx, bootstrapJobs)
	require.NoError(t, err)
	assert.Empty(t, jobs.Items, "no second bootstrap Job")
}

// A store deleted and created again under the same name (kubectl replace
// --force, a GitOps tool changing an immutable field) finds the claims the
// first one kept (whenDeleted: Retain, the default), and its StatefulSet
// takes them over with their data: its bootstrap must not run over them.
func TestRecreatedStoreDoesNotBootstrapOverKeptClaims(t *testing.T) {
	ctx := context.Background()
	kube, kvs := clients(t)
	ns := namespace(t)
	obj := store("again", 1)
	obj.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: backupImageOK}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj.DeepCopy(), metav1.CreateOptions{})
	require.NoError(t, err)
	waitStore(t, kvs, ns, "again", "Ready", isReady)
	require.NoError(t, kvs.KvstoreV1alpha1().KeyValueStores(ns).Delete(ctx, "again", metav1.DeleteOptions{}))
	waitGone(t, kvs, ns, "again")
	kept, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-again-0", metav1.GetOptions{})
	require.NoError(t, err, "the claim is kept (Retain)")
	require.Nil(t, kept.DeletionTimestamp, "the claim is kept (Retain), not being deleted")
	first := kept.Labels["kvstore.io/store-uid"]
	require.NotEmpty(t, first, "the StatefulSet controller gave the claim its template's store-uid label")

	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj.DeepCopy(), metav1.CreateOptions{})
	require.NoError(t, err)
	// (Until the garbage collector has removed the first store's
	// StatefulSet, the new store is Failed for an object in the way.)
	k := waitStore(t, kvs, ns, "again", "refused to bootstrap", func(k *v1alpha1.KeyValueStore) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionBootstrapped)
		return c != nil && c.Reason == "ClaimsHoldData"
	})
	assert.Equal(t, v1alpha1.PhaseFailed, k.Status.Phase)
	assert.Contains(t, meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionBootstrapped).Message, "data-again-0")
	jobs, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=bootstrap,app.kubernetes.io/instance=again"})
	require.NoError(t, err)
	for _, j := range jobs.Items {
		if ref := metav1.GetControllerOf(&j); ref != nil {
			assert.NotEqual(t, k.UID, ref.UID, "no bootstrap Job of the new store: %s", j.Name)
		}
	}
	now, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-again-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, kept.UID, now.UID, "the kept claim is the one the new store's Pod uses")
	assert.NotEqual(t, string(k.UID), first, "it carries the first store's UID, not the new one's")
	_, err = kube.CoreV1().Services(ns).Get(ctx, "again", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no client Service for a store that did not bootstrap: %v", err)
}

// recordFirst sets *rv, under mu, to the resourceVersion of the first event
// w delivers that match accepts.
func recordFirst(w watch.Interface, mu *sync.Mutex, rv *uint64, match func(watch.Event) bool) {
	go func() {
		for e := range w.ResultChan() {
			if !match(e) {
				continue
			}
			o, err := meta.Accessor(e.Object)
			if err != nil {
				continue
			}
			v, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
			if err != nil {
				continue
			}
			mu.Lock()
			if *rv == 0 {
				*rv = v
			}
			mu.Unlock()
		}
	}()
}

func jobComplete(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestFailingBootstrapEndsFailed(t *testing.T) {
	ctx := context.Background()
	_, kvs := clients(t)
	ns := namespace(t)
	obj := store("badboot", 1)
	obj.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: backupImageFail}
	_, err := kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	// Three attempts, 10 s and 20 s apart.
	k := waitStore(t, kvs, ns, "badboot", "Failed", func(k *v1alpha1.KeyValueStore) bool {
		return k.Status.Phase == v1alpha1.PhaseFailed
	})
	c := meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionBootstrapped)
	require.NotNil(t, c)
	assert.Equal(t, "BootstrapFailed", c.Reason)
	assert.Contains(t, c.Message, "attempt 3 of 3 failed")

	// A restore from a backup that does not exist fails with its reason.
	obj = store("nosnap", 1)
	obj.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Image: backupImageOK, FromBackup: "missing"}
	_, err = kvs.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	k = waitStore(t, kvs, ns, "nosnap", "Failed", func(k *v1alpha1.KeyValueStore) bool {
		return k.Status.Phase == v1alpha1.PhaseFailed
	})
	assert.Equal(t, "BackupNotFound", meta.FindStatusCondition(k.Status.Conditions, v1alpha1.ConditionBootstrapped).Reason)
}
