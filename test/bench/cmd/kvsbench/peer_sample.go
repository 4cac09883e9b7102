package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// The peer column S: k8s.io/sample-apiserver (wardle.example.com, Flunders),
// another aggregated API server behind the same kube-apiserver aggregator,
// started and stopped by the benchmark by PID, on the stack's kvstore etcd
// under sample-apiserver's own default prefix.
const (
	pSample = "sample-apiserver"
	// samplePort is sample-apiserver's secure port on 127.0.0.1: free in the
	// local stack (6443 kube-apiserver, 8443 kvstore-apiserver, 8444–8446
	// the e2e and fault tests' extra replicas, 10247/10257/10259 kwok,
	// kube-controller-manager and the scheduler, 32379–32585 the etcds).
	samplePort = 8453
	// sampleEtcdPrefix is sample-apiserver's default --etcd-prefix; the
	// benchmark wipes it before starting the peer and after stopping it.
	sampleEtcdPrefix = "/registry/wardle.example.com/"
	// sampleNS holds the peer's ServiceAccount and the Service its APIService names.
	sampleNS      = "kube-system"
	sampleService = "kvsbench-sample-apiserver"
	sampleAPISvc  = "v1alpha1.wardle.example.com"
)

var (
	flunderGVR    = schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}
	apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// samplePeer runs sample-apiserver for the S column.
type samplePeer struct {
	b      *bench
	bin    string
	cmd    *exec.Cmd
	exited chan error
	log    *os.File
	// keyPrefix is the etcd key prefix of the bench namespace's Flunders
	// (found by the probe), to count them cheaply while waiting for deletions.
	keyPrefix string
	// requestJSON and storedBytes describe one bench Flunder (from the probe).
	requestJSON, objectJSON, storedBytes int
	storedFormat                         string
	stopped                              bool
}

// sampleRules are what sample-apiserver reads from kube-apiserver (its
// artifacts/example/rbac.yaml, with the admission policies of 1.37).
var sampleRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"flowcontrol.apiserver.k8s.io"}, Resources: []string{"prioritylevelconfigurations", "flowschemas"}, Verbs: []string{"list", "watch"}},
}

// start gives sample-apiserver an identity (a ServiceAccount with upstream's
// RBAC: auth-delegator, the authentication reader and its own rules), a
// serving certificate signed by the stack's CA for the Service name the
// aggregator verifies, starts it, registers its APIService the way
// hack/local-up.sh registers kvstore.io's (an ExternalName Service for
// 127.0.0.1, the real port, the CA as caBundle) and waits until the
// APIService is Available and Flunders can be listed through kube-apiserver.
func (p *samplePeer) start(ctx context.Context, stack *framework.Stack) error {
	if _, err := os.Stat(p.bin); err != nil {
		return fmt.Errorf("sample-apiserver (the S column): %w; build it with hack/build-tools.sh sample-apiserver, or leave S out of --columns", err)
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", samplePort))
	if err != nil {
		return fmt.Errorf("sample-apiserver's port %d: %w", samplePort, err)
	}
	l.Close()
	dir := p.b.cfg.out
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := p.b.etcdKVS.Delete(ctx, sampleEtcdPrefix, clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("wipe %s in kvstore's etcd: %w", sampleEtcdPrefix, err)
	}
	kubeconfig, err := p.credentials(ctx, stack, dir)
	if err != nil {
		return err
	}
	crt, key := filepath.Join(dir, "sample-apiserver-serving.crt"), filepath.Join(dir, "sample-apiserver-serving.key")
	if err := signServing(filepath.Join(stack.CertDir, "ca.crt"), filepath.Join(stack.CertDir, "ca.key"), crt, key,
		[]string{sampleService + "." + sampleNS + ".svc", "localhost"}); err != nil {
		return fmt.Errorf("sample-apiserver serving certificate: %w", err)
	}
	if p.log, err = os.Create(filepath.Join(dir, "sample-apiserver.log")); err != nil {
		return err
	}
	p.cmd = exec.Command(p.bin,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", samplePort),
		"--tls-cert-file="+crt, "--tls-private-key-file="+key,
		"--etcd-servers="+framework.KVStoreEtcdURL,
		"--etcd-cafile="+filepath.Join(stack.CertDir, "kvstore-etcd-ca.crt"),
		"--etcd-certfile="+filepath.Join(stack.CertDir, "kvstore-etcd-client.crt"),
		"--etcd-keyfile="+filepath.Join(stack.CertDir, "kvstore-etcd-client.key"),
		"--kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	// Its default --cert-dir is relative; nothing is written there with
	// --tls-cert-file, but keep it out of the repository anyway.
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start sample-apiserver: %w", err)
	}
	p.exited = make(chan error, 1)
	go func() { p.exited <- p.cmd.Wait() }()
	p.b.procs.extra[pSample] = p.cmd.Process.Pid
	p.b.logf("peer: sample-apiserver started (pid %d, 127.0.0.1:%d, etcd %s prefix %s, log %s)", p.cmd.Process.Pid, samplePort, framework.KVStoreEtcdURL, sampleEtcdPrefix, p.log.Name())

	if err := p.register(ctx, stack); err != nil {
		return err
	}
	return awaitChild(ctx, p.exited, "sample-apiserver", "APIService "+sampleAPISvc+" usable", p.log.Name(), 250*time.Millisecond, p.available)
}

// available: the APIService says Available and a LIST through the aggregator works.
func (p *samplePeer) available(ctx context.Context) error {
	got, err := p.b.dyn.Resource(apiServiceGVR).Get(ctx, sampleAPISvc, metav1.GetOptions{})
	if err != nil {
		return err
	}
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if m["type"] == "Available" && m["status"] != "True" {
			return fmt.Errorf("not Available: %v", m["message"])
		}
	}
	_, err = p.b.dyn.Resource(flunderGVR).Namespace(p.b.cfg.namespace).List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

func (p *samplePeer) credentials(ctx context.Context, stack *framework.Stack, dir string) (string, error) {
	kube := p.b.kube
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: pSample, Namespace: sampleNS}}
	if _, err := kube.CoreV1().ServiceAccounts(sampleNS).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("sample-apiserver ServiceAccount: %w", err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kvsbench-" + pSample}, Rules: sampleRules}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if _, err := kube.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			return "", fmt.Errorf("sample-apiserver ClusterRole: %w", err)
		}
	} else if err != nil {
		return "", fmt.Errorf("sample-apiserver ClusterRole: %w", err)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: pSample, Namespace: sampleNS}}
	for name, ref := range map[string]string{"kvsbench-" + pSample: "kvsbench-" + pSample, "kvsbench-" + pSample + ":auth-delegator": "system:auth-delegator"} {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ref}, Subjects: subject}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("sample-apiserver ClusterRoleBinding %s: %w", name, err)
		}
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kvsbench-" + pSample + ":auth-reader", Namespace: "kube-system"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "extension-apiserver-authentication-reader"}, Subjects: subject}
	if _, err := kube.RbacV1().RoleBindings("kube-system").Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("sample-apiserver RoleBinding: %w", err)
	}
	tok, err := kube.CoreV1().ServiceAccounts(sampleNS).CreateToken(ctx, pSample, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](6 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("sample-apiserver token: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: kubeAPIURL, CertificateAuthority: filepath.Join(stack.CertDir, "ca.crt")}
	cfg.AuthInfos[pSample] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: pSample}
	cfg.CurrentContext = "local"
	path := filepath.Join(dir, "sample-apiserver.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// register creates the ExternalName Service and the APIService (replacing
// any left by an interrupted run).
func (p *samplePeer) register(ctx context.Context, stack *framework.Stack) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: sampleService, Namespace: sampleNS},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1"}}
	if _, err := p.b.kube.CoreV1().Services(sampleNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sample-apiserver Service: %w", err)
	}
	ca, err := os.ReadFile(filepath.Join(stack.CertDir, "ca.crt"))
	if err != nil {
		return err
	}
	apisvc := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]interface{}{"name": sampleAPISvc, "labels": map[string]interface{}{"app.kubernetes.io/part-of": "kvstore-bench"}},
		"spec": map[string]interface{}{
			"group": flunderGVR.Group, "version": flunderGVR.Version,
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service":  map[string]interface{}{"namespace": sampleNS, "name": sampleService, "port": int64(samplePort)},
			"caBundle": base64.StdEncoding.EncodeToString(ca),
		},
	}}
	c := p.b.dyn.Resource(apiServiceGVR)
	if err := c.Delete(ctx, sampleAPISvc, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove an old APIService %s: %w", sampleAPISvc, err)
	}
	if _, err := c.Create(ctx, apisvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("APIService %s: %w", sampleAPISvc, err)
	}
	return nil
}

// stop removes the APIService first (so nothing discovers a group that is
// going away), ends sample-apiserver with SIGTERM by PID, removes its
// Service and identity, and wipes its keys from kvstore's etcd.
func (p *samplePeer) stop(ctx context.Context) error {
	var errs []error
	errs = append(errs, ignoreNotFound(p.b.dyn.Resource(apiServiceGVR).Delete(ctx, sampleAPISvc, metav1.DeleteOptions{})))
	if p.cmd != nil && p.cmd.Process != nil {
		// After SIGTERM it stops listening at once but waits up to a minute
		// (its fixed shutdown timeout; it has no flag for it) for the watches
		// kube-controller-manager's informers keep open on every served
		// resource. Nothing is left to lose by then: SIGKILL after 10 s.
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.b.logf("peer: sample-apiserver still draining watches 10s after SIGTERM; killed (pid %d)", p.cmd.Process.Pid)
		}
		p.cmd = nil
		delete(p.b.procs.extra, pSample)
		p.log.Close()
	}
	kube := p.b.kube
	errs = append(errs,
		ignoreNotFound(kube.CoreV1().Services(sampleNS).Delete(ctx, sampleService, metav1.DeleteOptions{})),
		ignoreNotFound(kube.RbacV1().RoleBindings("kube-system").Delete(ctx, "kvsbench-"+pSample+":auth-reader", metav1.DeleteOptions{})),
		ignoreNotFound(kube.RbacV1().ClusterRoleBindings().Delete(ctx, "kvsbench-"+pSample+":auth-delegator", metav1.DeleteOptions{})),
		ignoreNotFound(kube.RbacV1().ClusterRoleBindings().Delete(ctx, "kvsbench-"+pSample, metav1.DeleteOptions{})),
		ignoreNotFound(kube.RbacV1().ClusterRoles().Delete(ctx, "kvsbench-"+pSample, metav1.DeleteOptions{})),
		ignoreNotFound(kube.CoreV1().ServiceAccounts(sampleNS).Delete(ctx, pSample, metav1.DeleteOptions{})),
	)
	if _, err := p.b.etcdKVS.Delete(ctx, sampleEtcdPrefix, clientv3.WithPrefix()); err != nil {
		errs = append(errs, fmt.Errorf("wipe %s: %w", sampleEtcdPrefix, err))
	}
	return errors.Join(errs...)
}

// probe creates one bench Flunder, finds where sample-apiserver stores the
// namespace's Flunders in etcd and how large one is, and deletes it.
func (p *samplePeer) probe(ctx context.Context, t *sampleTarget) error {
	const set = "probe"
	name := objName(set, 0)
	if _, err := t.Create(ctx, name, set); err != nil {
		return fmt.Errorf("create probe Flunder: %w", err)
	}
	obj, err := t.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	resp, err := p.b.etcdKVS.Get(ctx, sampleEtcdPrefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	suffix := "/" + p.b.cfg.namespace + "/" + name
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); strings.HasSuffix(k, suffix) && strings.Contains(k, "/flunders/") {
			p.keyPrefix = strings.TrimSuffix(k, name)
			p.storedBytes, p.storedFormat = len(kv.Value), storedFormat(kv.Value)
		}
	}
	if p.keyPrefix == "" {
		return fmt.Errorf("probe Flunder %s not found under %s in kvstore's etcd", name, sampleEtcdPrefix)
	}
	p.requestJSON, p.objectJSON = jsonSize(newFlunder(p.b.cfg.namespace, name, set).Object), jsonSize(obj.Object)
	p.b.logf("peer: a Flunder is %d B of JSON in the create request, %d B as JSON, %d B stored (%s) at %s",
		p.requestJSON, p.objectJSON, p.storedBytes, p.storedFormat, p.keyPrefix)
	return p.b.cleanupSample(ctx, set)
}

// signServing writes a serving certificate for names (and 127.0.0.1)
// signed by the CA, as hack/lib/certs.sh signs kvstore-apiserver's: RSA
// 2048, SHA-256.
func signServing(caCrt, caKey, crtOut, keyOut string, names []string) error {
	ca, err := tls.LoadX509KeyPair(caCrt, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(crtOut, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyOut, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
}

// startPeer starts sample-apiserver, probes its objects and adds the S
// column to the timed targets and LIST variants. The returned function
// stops it (safe to call more than once, and after a failed start).
func (b *bench) startPeer(ctx context.Context, stack *framework.Stack) (func(), error) {
	b.sample = &samplePeer{b: b, bin: b.cfg.sampleBin}
	stop := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := b.stopPeer(cctx); err != nil {
			b.logf("cleanup: peer: %v", err)
		}
	}
	if err := b.sample.start(ctx, stack); err != nil {
		return stop, err
	}
	if err := b.sample.probe(ctx, b.s); err != nil {
		return stop, err
	}
	for _, t := range []*sampleTarget{b.s, b.ds} {
		if b.cfg.columns[t.ID()] {
			b.targets = append(b.targets, t)
		}
	}
	p := b.sample
	b.meta.Peer = fmt.Sprintf("sample-apiserver %s on 127.0.0.1:%d (pid %d), kvstore etcd prefix %s; a Flunder: %d B of JSON in the create request, %d B as JSON, %d B stored (%s)",
		sampleVersion, samplePort, p.cmd.Process.Pid, sampleEtcdPrefix, p.requestJSON, p.objectJSON, p.storedBytes, p.storedFormat)
	path := fmt.Sprintf("/apis/%s/namespaces/%s/flunders", flunderGVR.GroupVersion(), b.cfg.namespace)
	for _, gz := range []bool{true, false} {
		b.lists = append(b.lists,
			listVariant{col: colS, raw: b.raw[pKubeAPI], path: path, gzip: gz},
			listVariant{col: colDS, raw: b.raw[pSample], path: path, gzip: gz})
	}
	return stop, nil
}

// peerRunning says whether the S column is being measured.
func (b *bench) peerRunning() bool { return b.sample != nil && !b.sample.stopped }

// stopPeer stops sample-apiserver once; the report still describes it.
func (b *bench) stopPeer(ctx context.Context) error {
	if !b.peerRunning() {
		return nil
	}
	b.sample.stopped = true
	b.logf("peer: stopping sample-apiserver and removing APIService %s", sampleAPISvc)
	return b.sample.stop(ctx)
}
