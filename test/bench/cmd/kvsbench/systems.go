package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// A system is one way to serve and reconcile KeyValueStores end to end:
// kvstore-apiserver with its embedded controller, or the CRD with the
// controller-runtime operator of test/bench/operator in a process of its
// own. The controller phase runs the same workload against each.
type system interface {
	name() string
	// namespace is where the system's stores of the phase live.
	namespace() string
	start(ctx context.Context) error
	stop(ctx context.Context) error
	create(ctx context.Context, name string, s *v1alpha1.KeyValueStore) error
	// stores returns every store of the namespace (decoded into the
	// kvstore.io Go type: the CRD has the same fields) and the list's
	// resourceVersion.
	stores(ctx context.Context) ([]v1alpha1.KeyValueStore, string, error)
	// watchStores watches the namespace's stores from resourceVersion rv;
	// decode turns one of its events' objects into the kvstore.io Go type.
	watchStores(ctx context.Context, rv string) (watch.Interface, error)
	decode(o k8sruntime.Object) (*v1alpha1.KeyValueStore, error)
	remove(ctx context.Context, name string) error
	// finalBackupsDone counts the completed final backups of the stores named.
	finalBackupsDone(ctx context.Context, names map[string]bool) (int, error)
	// controller reads the controller process's /metrics once.
	controller(ctx context.Context) (controllerReading, error)
	// process is the PID file name (or extra process) of the controller.
	process() string
	settings() string
}

const (
	sysKVS      = "kvstore-apiserver"
	sysOperator = "CRD + operator"
	// sysOperatorFlag names the operator system in --systems.
	sysOperatorFlag = "operator"
	pOperator       = "kvsbench-operator"
)

// ---- kvstore-apiserver and its embedded controller ---------------------------

type kvsSystem struct{ b *bench }

func (s kvsSystem) name() string                { return sysKVS }
func (s kvsSystem) namespace() string           { return s.b.cfg.namespace + "-ctrl" }
func (s kvsSystem) start(context.Context) error { return nil }
func (s kvsSystem) stop(context.Context) error  { return nil }
func (s kvsSystem) process() string             { return pKVSAPI }
func (s kvsSystem) settings() string            { return clientSettings(s.b.procs) }

func (s kvsSystem) create(ctx context.Context, name string, o *v1alpha1.KeyValueStore) error {
	_, err := s.b.kvsViaKube.KvstoreV1alpha1().KeyValueStores(s.namespace()).Create(ctx, o, metav1.CreateOptions{})
	return err
}

func (s kvsSystem) stores(ctx context.Context) ([]v1alpha1.KeyValueStore, string, error) {
	l, err := s.b.kvsViaKube.KvstoreV1alpha1().KeyValueStores(s.namespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	return l.Items, l.ResourceVersion, nil
}

func (s kvsSystem) watchStores(ctx context.Context, rv string) (watch.Interface, error) {
	return s.b.kvsViaKube.KvstoreV1alpha1().KeyValueStores(s.namespace()).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
}

func (s kvsSystem) decode(o k8sruntime.Object) (*v1alpha1.KeyValueStore, error) {
	k, ok := o.(*v1alpha1.KeyValueStore)
	if !ok {
		return nil, fmt.Errorf("watch event of %T, not a KeyValueStore", o)
	}
	return k, nil
}

func (s kvsSystem) remove(ctx context.Context, name string) error {
	return s.b.kvsViaKube.KvstoreV1alpha1().KeyValueStores(s.namespace()).Delete(ctx, name, metav1.DeleteOptions{})
}

// finalBackupsDone: the teardown's final backup is a KeyValueStoreBackup
// of reason Final that outlives its store.
func (s kvsSystem) finalBackupsDone(ctx context.Context, names map[string]bool) (int, error) {
	l, err := s.b.kvsViaKube.KvstoreV1alpha1().KeyValueStoreBackups(s.namespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, bk := range l.Items {
		if names[bk.Spec.StoreName] && bk.Spec.Reason == v1alpha1.BackupReasonFinal && bk.Status.Phase == v1alpha1.BackupPhaseCompleted {
			n++
		}
	}
	return n, nil
}

func (s kvsSystem) controller(ctx context.Context) (controllerReading, error) {
	metrics, err := s.b.raw[pKVSAPI].metrics(ctx)
	if err != nil {
		return controllerReading{}, err
	}
	return readingOf(metrics, metricReconc), nil
}

// ---- the CRD and the controller-runtime operator --------------------------------

type operatorSystem struct {
	b      *bench
	bin    string
	port   int
	cmd    *exec.Cmd
	exited chan error
	log    *os.File
	kubecf string
}

func (s *operatorSystem) name() string      { return sysOperator }
func (s *operatorSystem) namespace() string { return s.b.cfg.namespace + "-op" }
func (s *operatorSystem) process() string   { return pOperator }
func (s *operatorSystem) settings() string {
	return "operator: controller-runtime v0.25.2 defaults (1 concurrent reconcile, no client-side rate limit: ctrl.GetConfig sets QPS -1 and leaves the pacing to API priority and fairness, caches of every watched type cluster-wide), leader election on (a Lease in kube-system), a ServiceAccount token with a ClusterRole of what it writes; " +
		"kube-controller-manager and kube-scheduler as for kvstore-apiserver"
}

func (s *operatorSystem) create(ctx context.Context, _ string, o *v1alpha1.KeyValueStore) error {
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(crGVR.GroupVersion().String())
	u.SetKind("KeyValueStore")
	u.SetNamespace(s.namespace())
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	_, err = s.b.dyn.Resource(crGVR).Namespace(s.namespace()).Create(ctx, u, metav1.CreateOptions{})
	return err
}

func (s *operatorSystem) stores(ctx context.Context) ([]v1alpha1.KeyValueStore, string, error) {
	l, err := s.b.dyn.Resource(crGVR).Namespace(s.namespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	out := make([]v1alpha1.KeyValueStore, len(l.Items))
	for i := range l.Items {
		k, err := s.decode(&l.Items[i])
		if err != nil {
			return nil, "", err
		}
		out[i] = *k
	}
	return out, l.GetResourceVersion(), nil
}

func (s *operatorSystem) watchStores(ctx context.Context, rv string) (watch.Interface, error) {
	return s.b.dyn.Resource(crGVR).Namespace(s.namespace()).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
}

func (s *operatorSystem) decode(o k8sruntime.Object) (*v1alpha1.KeyValueStore, error) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("watch event of %T, not a custom resource", o)
	}
	var k v1alpha1.KeyValueStore
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

func (s *operatorSystem) remove(ctx context.Context, name string) error {
	return s.b.dyn.Resource(crGVR).Namespace(s.namespace()).Delete(ctx, name, metav1.DeleteOptions{})
}

// finalBackupsDone: the operator's final backup is a Job (labelled with
// its store) that outlives the store.
func (s *operatorSystem) finalBackupsDone(ctx context.Context, names map[string]bool) (int, error) {
	l, err := s.b.kube.BatchV1().Jobs(s.namespace()).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/component=backup,app.kubernetes.io/managed-by=" + pOperator})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, j := range l.Items {
		if !names[j.Labels["app.kubernetes.io/instance"]] {
			continue
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n, nil
}

func (s *operatorSystem) metrics(ctx context.Context) (framework.Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", s.port), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("operator /metrics: %s", resp.Status)
	}
	if err != nil {
		return nil, err
	}
	return framework.ParseMetrics(bytes.NewReader(body))
}

func (s *operatorSystem) controller(ctx context.Context) (controllerReading, error) {
	metrics, err := s.metrics(ctx)
	if err != nil {
		return controllerReading{}, err
	}
	return readingOf(metrics, "controller_runtime_reconcile_total"), nil
}

// controllerReading is what one read of a controller process's /metrics
// gives: running totals, so a window is two readings' difference.
type controllerReading struct {
	reconciles map[string]float64 // reconciles, by result ("error" among them)
	requests   map[string]float64 // requests sent, by method (client-go's rest_client_requests_total)
	times      map[string]float64 // where its reconciles wait (timesOf)
}

// readingOf parses a controller's /metrics; reconcileMetric is its
// reconcile counter.
func readingOf(metrics framework.Metrics, reconcileMetric string) controllerReading {
	return controllerReading{
		reconciles: metrics.Sum(reconcileMetric, "result"),
		requests:   metrics.Sum("rest_client_requests_total", "method"),
		times:      timesOf(metrics),
	}
}

// Running totals of timesOf. Both controllers' work queues are named
// keyvaluestore (controller-runtime names its queue after the For type).
const (
	timeLimiter      = "rate_limiter_s" // waits in client-go's rate limiters, all clients of the process
	timeLimiterCount = "rate_limiter_requests"
	timeQueue        = "queue_s" // from an item's add to a worker taking it
	timeQueueCount   = "queue_items"
	timeWork         = "work_s" // workers busy with items
	timeWorkCount    = "work_items"
)

// timesOf reads, from a controller process's /metrics, how long its
// requests waited in client-go's rate limiters and how long its work
// queue's items waited and were worked on: what paces a controller that is
// not waiting for kube. The operator opts in to the rate limiter's
// histogram (controller-runtime leaves it off); kvstore-apiserver registers
// client-go's metrics through component-base.
func timesOf(metrics framework.Metrics) map[string]float64 {
	queue := func(metric string) float64 { return metrics.Sum(metric, "name")["keyvaluestore"] }
	return map[string]float64{
		timeLimiter:      metrics.Sum("rest_client_rate_limiter_duration_seconds_sum", "")[""],
		timeLimiterCount: metrics.Sum("rest_client_rate_limiter_duration_seconds_count", "")[""],
		timeQueue:        queue("workqueue_queue_duration_seconds_sum"),
		timeQueueCount:   queue("workqueue_queue_duration_seconds_count"),
		timeWork:         queue("workqueue_work_duration_seconds_sum"),
		timeWorkCount:    queue("workqueue_work_duration_seconds_count"),
	}
}

// operatorRules are what the operator reads and writes (its kubebuilder
// RBAC markers), plus its Lease.
var operatorRules = []rbacv1.PolicyRule{
	{APIGroups: []string{benchGroup}, Resources: []string{"keyvaluestores", "keyvaluestores/status", "keyvaluestores/finalizers"}, Verbs: []string{"*"}},
	{APIGroups: []string{"apps"}, Resources: []string{"statefulsets", "deployments"}, Verbs: []string{"*"}},
	{APIGroups: []string{""}, Resources: []string{"services", "pods", "persistentvolumeclaims", "events", "namespaces"}, Verbs: []string{"*"}},
	{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"*"}},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"*"}},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"*"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"*"}},
}

// credentials gives the operator its own identity, as in a cluster: a
// ServiceAccount bound to a ClusterRole of its rules, and a token for it.
func (s *operatorSystem) credentials(ctx context.Context, stack *framework.Stack) error {
	const ns = "kube-system"
	kube := s.b.kube
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: pOperator, Namespace: ns}}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("operator ServiceAccount: %w", err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: pOperator}, Rules: operatorRules}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = kube.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("operator ClusterRole: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("operator ClusterRole: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: pOperator},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: pOperator},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: pOperator, Namespace: ns}}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("operator ClusterRoleBinding: %w", err)
	}
	tok, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, pOperator, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](6 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("operator token: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: kubeAPIURL, CertificateAuthority: filepath.Join(stack.CertDir, "ca.crt")}
	cfg.AuthInfos[pOperator] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: pOperator}
	cfg.CurrentContext = "local"
	if err := os.MkdirAll(s.b.cfg.out, 0o755); err != nil {
		return err
	}
	// One log per run: the repetitions append to it.
	if err := os.Remove(filepath.Join(s.b.cfg.out, "operator.log")); err != nil && !os.IsNotExist(err) {
		return err
	}
	s.kubecf = filepath.Join(s.b.cfg.out, "operator.kubeconfig")
	return clientcmd.WriteToFile(*cfg, s.kubecf)
}

// removeCredentials deletes what credentials made.
func (s *operatorSystem) removeCredentials(ctx context.Context) error {
	kube := s.b.kube
	return errors.Join(
		ignoreNotFound(kube.RbacV1().ClusterRoleBindings().Delete(ctx, pOperator, metav1.DeleteOptions{})),
		ignoreNotFound(kube.RbacV1().ClusterRoles().Delete(ctx, pOperator, metav1.DeleteOptions{})),
		ignoreNotFound(kube.CoreV1().ServiceAccounts("kube-system").Delete(ctx, pOperator, metav1.DeleteOptions{})),
	)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// buildOperator compiles test/bench/operator (its own module) into bin.
func buildOperator(ctx context.Context, bin string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(framework.RepoRoot(), "test", "bench", "operator")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build the operator (%s): %w", cmd.Dir, err)
	}
	return nil
}

// start runs the operator and waits until it leads (its Lease names it).
func (s *operatorSystem) start(ctx context.Context) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if s.log, err = os.OpenFile(filepath.Join(s.b.cfg.out, "operator.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return err
	}
	s.cmd = exec.Command(s.bin, "--kubeconfig="+s.kubecf, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", s.port))
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start the operator: %w", err)
	}
	s.exited = make(chan error, 1)
	go func() { s.exited <- s.cmd.Wait() }()
	s.b.procs.extra[pOperator] = s.cmd.Process.Pid
	s.b.logf("controller: operator started (pid %d, metrics on 127.0.0.1:%d, log %s)", s.cmd.Process.Pid, s.port, s.log.Name())
	return awaitChild(ctx, s.exited, "the operator", "its Lease taken and its metrics served", s.log.Name(), 200*time.Millisecond, func(ctx context.Context) error {
		lease, err := s.b.kube.CoordinationV1().Leases("kube-system").Get(ctx, "kvsbench-operator.bench.kvstore.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
			return errors.New("no Lease holder yet")
		}
		_, err = s.metrics(ctx)
		return err
	})
}

// stop ends the operator with SIGTERM (it releases its Lease), by PID.
func (s *operatorSystem) stop(context.Context) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	defer func() { s.cmd = nil; delete(s.b.procs.extra, pOperator); s.log.Close() }()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("the operator did not stop within 30s of SIGTERM; killed")
	}
}

// releaseCRs removes every finalizer of the namespace's custom resources,
// for a cleanup without the operator.
func (s *operatorSystem) releaseCRs(ctx context.Context) error {
	c := s.b.dyn.Resource(crGVR).Namespace(s.namespace())
	l, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		return ignoreNotFound(err)
	}
	var errs []error
	for _, o := range l.Items {
		if len(o.GetFinalizers()) == 0 {
			continue
		}
		if _, err := c.Patch(ctx, o.GetName(), types.MergePatchType, removeFinalizers, metav1.PatchOptions{}); ignoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
