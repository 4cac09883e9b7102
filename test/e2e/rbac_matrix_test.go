package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// The RBAC matrix: who may do what to keyvaluestores and its /status and
// /scale, checked with real requests through kube-apiserver (which
// authorizes before it proxies, and kvstore-apiserver again after).

const (
	kvsResource    = "keyvaluestores"
	statusResource = "keyvaluestores/status"
	scaleResource  = "keyvaluestores/scale"
)

var (
	matrixResources = []string{kvsResource, statusResource, scaleResource}
	matrixVerbs     = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}
)

// grants is what the built-in ClusterRoles give on kvstore.io, by way of
// the aggregated kvstore.io:view and kvstore.io:edit of
// artifacts/base/rbac-aggregated.yaml: view reads everything; edit and admin
// also write the store and its /scale (update and patch, as kubectl scale
// and autoscalers do), but never /status, which is the controller's to
// write. Nothing else has any kvstore.io right; in particular the
// controller's ServiceAccount (artifacts/base/rbac-controller.yaml) only
// updates keyvaluestores/finalizers: it reads and writes stores through
// kvstore-apiserver's loopback client, never through kube-apiserver.
var grants = map[string]map[string][]string{
	"view": {
		kvsResource:    readVerbs,
		statusResource: readVerbs,
		scaleResource:  readVerbs,
	},
	"edit": {
		kvsResource:    slices.Concat(readVerbs, writeVerbs),
		statusResource: readVerbs,
		scaleResource:  slices.Concat(readVerbs, []string{"update", "patch"}),
	},
}

func init() { grants["admin"] = grants["edit"] }

// identity is who sends a row of the matrix.
type identity struct {
	name string
	// clusterRole is bound to the user in its namespace ("" for none).
	clusterRole string
	// user and groups are what kube-apiserver authorizes (for
	// SubjectAccessReviews); anonymous sends no credentials at all.
	user      string
	groups    []string
	anonymous bool
}

func (id identity) allowed(resource, verb string) bool {
	return slices.Contains(grants[id.clusterRole][resource], verb)
}

// config is the admin kubeconfig turned into id: impersonation, or no
// credentials for anonymous.
func (id identity) config(admin *rest.Config) *rest.Config {
	if id.anonymous {
		return rest.AnonymousClientConfig(admin)
	}
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: id.user, Groups: id.groups}
	return cfg
}

// denied: what a refused request looks like. kube-apiserver authenticates
// requests without credentials as system:anonymous (hack/local-up.sh leaves
// --anonymous-auth at its default, true), so they are forbidden like any
// other; were anonymous authentication off, they would be unauthorized.
func (id identity) denied(err error) bool {
	return apierrors.IsForbidden(err) || (id.anonymous && apierrors.IsUnauthorized(err))
}

var matrixIdentities = []identity{
	{name: "anonymous", user: "system:anonymous", groups: []string{"system:unauthenticated"}, anonymous: true},
	{name: "no role", user: "e2e-rbac-nobody", groups: []string{"system:authenticated"}},
	{name: "view", clusterRole: "view", user: "e2e-rbac-viewer", groups: []string{"system:authenticated"}},
	{name: "edit", clusterRole: "edit", user: "e2e-rbac-editor", groups: []string{"system:authenticated"}},
	{name: "admin", clusterRole: "admin", user: "e2e-rbac-admin", groups: []string{"system:authenticated"}},
	// The local stack runs the controller inside kvstore-apiserver with the
	// server's own identity: its kubeconfig's client certificate names the
	// ServiceAccount (hack/lib/certs.sh), as its token does in a cluster.
	{name: "controller", user: "system:serviceaccount:kvstore-system:kvstore-apiserver",
		groups: []string{"system:serviceaccounts", "system:serviceaccounts:kvstore-system", "system:authenticated"}},
}

// TestRBACMatrix sends every verb on keyvaluestores, keyvaluestores/status
// and keyvaluestores/scale as each identity, in a namespace of its own
// holding a paused throwaway store, and requires what grants says: success
// where granted, 403 otherwise. Verbs that have no request of their own on a
// subresource (list, watch and deletecollection of /status and /scale) are
// checked with a SubjectAccessReview.
func TestRBACMatrix(t *testing.T) {
	admin, err := clientcmd.BuildConfigFromFlags("", stack.Kubeconfig)
	require.NoError(t, err)
	kube := kubernetes.NewForConfigOrDie(admin)
	adminKVS := versioned.NewForConfigOrDie(admin)

	for _, id := range matrixIdentities {
		t.Run(id.name, func(t *testing.T) {
			ctx := context.Background()
			ns := namespace(t)
			if id.clusterRole != "" {
				_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "e2e-rbac-" + id.clusterRole},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: id.clusterRole},
					Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: id.user}},
				}, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			target := matrixStore("target")
			require.NoError(t, retryUnavailable(ctx, func(ctx context.Context) error {
				_, err := adminKVS.KvstoreV1alpha1().KeyValueStores(ns).Create(ctx, target, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				return err
			}))

			// RBAC reaches kube-apiserver's authorizer eventually; the
			// SubjectAccessReviews also answer for the verbs that have no
			// request of their own.
			answers := waitForGrants(t, kube, id, ns)

			c := &matrixClient{kvs: versioned.NewForConfigOrDie(id.config(admin)), adminKVS: adminKVS, ns: ns, target: target.Name}
			check := func(verbs []string) {
				for _, verb := range verbs {
					for _, resource := range orderedResources {
						want := id.allowed(resource, verb)
						sent, err := c.do(ctx, resource, verb)
						if !sent {
							assert.Equal(t, want, answers[cell{resource, verb}], "%s %s (SubjectAccessReview)", verb, resource)
							continue
						}
						if want {
							assert.NoError(t, err, "%s %s must be allowed", verb, resource)
						} else {
							assert.True(t, id.denied(err), "%s %s must be forbidden, got %v", verb, resource, err)
						}
					}
				}
			}
			check(beforeDeletion)

			// Through kube-apiserver nobody writes status, editors and
			// admins included (the controller writes it through
			// kvstore-apiserver's loopback client): the phase the /status
			// writes above asked for is not there.
			got, err := adminKVS.KvstoreV1alpha1().KeyValueStores(ns).Get(ctx, target.Name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.NotEqual(t, v1alpha1.PhaseFailed, got.Status.Phase, "%s wrote status", id.name)

			// Last, as they end the target (for who may: its teardown
			// starts, and the namespace's deletion finishes it).
			check(deletions)
		})
	}
}

// The order requests are sent in: every verb but the deletions, then the
// deletions; for each, the subresources before the main resource, so that
// its deletion comes after every request to its subresources.
var (
	beforeDeletion   = []string{"get", "list", "watch", "update", "patch", "create"}
	deletions        = []string{"delete", "deletecollection"}
	orderedResources = []string{statusResource, scaleResource, kvsResource}
)

func TestMatrixCoversEveryVerbAndResource(t *testing.T) {
	assert.ElementsMatch(t, matrixResources, orderedResources)
	assert.ElementsMatch(t, matrixVerbs, slices.Concat(beforeDeletion, deletions))
	assert.ElementsMatch(t, matrixVerbs, slices.Concat(readVerbs, writeVerbs))
}

// matrixStore is a paused store: the controller leaves its workloads alone.
func matrixStore(name string) *v1alpha1.KeyValueStore {
	return &v1alpha1.KeyValueStore{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.KeyValueStoreSpec{Image: "redis:7.2", Replicas: ptr.To[int32](1), Paused: true},
	}
}

type cell struct{ resource, verb string }

// waitForGrants waits until kube-apiserver answers a SubjectAccessReview
// for every cell of id's row as grants says, and returns the answers.
func waitForGrants(t *testing.T, kube kubernetes.Interface, id identity, ns string) map[cell]bool {
	t.Helper()
	answers := map[cell]bool{}
	err := framework.WaitFor(context.Background(), eventually, func(ctx context.Context) error {
		var wrong []string
		for _, resource := range matrixResources {
			for _, verb := range matrixVerbs {
				name, sub, _ := strings.Cut(resource, "/")
				review, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
					Spec: authorizationv1.SubjectAccessReviewSpec{
						User: id.user, Groups: id.groups,
						ResourceAttributes: &authorizationv1.ResourceAttributes{
							Namespace: ns, Verb: verb, Group: v1alpha1.GroupName, Resource: name, Subresource: sub,
						},
					},
				}, metav1.CreateOptions{})
				if err != nil {
					return err
				}
				answers[cell{resource, verb}] = review.Status.Allowed
				if want := id.allowed(resource, verb); review.Status.Allowed != want {
					wrong = append(wrong, fmt.Sprintf("%s %s: allowed=%v, want %v (%s)", verb, resource, review.Status.Allowed, want, review.Status.Reason))
				}
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("%s in %s:\n%s", id.name, ns, strings.Join(wrong, "\n"))
		}
		return nil
	})
	require.NoError(t, err)
	return answers
}

// matrixClient sends one verb on one resource as an identity.
type matrixClient struct {
	kvs, adminKVS versioned.Interface
	ns, target    string
}

// subresourceVerbs have a request of their own on /status and /scale; the
// others (list, watch, deletecollection) name no object, so a request for
// them is one on the main resource.
var subresourceVerbs = []string{"get", "update", "patch", "create", "delete"}

// do sends verb on resource and returns its error, or sent=false when the
// verb has no request of its own on that subresource.
func (c *matrixClient) do(ctx context.Context, resource, verb string) (sent bool, err error) {
	_, sub, _ := strings.Cut(resource, "/")
	if sub != "" && !slices.Contains(subresourceVerbs, verb) {
		return false, nil
	}
	return true, retryUnavailable(ctx, func(ctx context.Context) error {
		if sub == "" {
			return c.main(ctx, verb)
		}
		return c.subresource(ctx, sub, verb)
	})
}

func (c *matrixClient) main(ctx context.Context, verb string) error {
	stores := c.kvs.KvstoreV1alpha1().KeyValueStores(c.ns)
	switch verb {
	case "get":
		_, err := stores.Get(ctx, c.target, metav1.GetOptions{})
		return err
	case "list":
		_, err := stores.List(ctx, metav1.ListOptions{})
		return err
	case "watch":
		w, err := stores.Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptr.To[int64](1)})
		if err == nil {
			w.Stop()
		}
		return err
	case "create":
		_, err := stores.Create(ctx, matrixStore("created"), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // a retried create
			return nil
		}
		return err
	case "update":
		cur, err := c.current(ctx)
		if err != nil {
			return err
		}
		cur.Labels = map[string]string{"updated-by": "rbac-matrix"}
		_, err = stores.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	case "patch":
		_, err := stores.Patch(ctx, c.target, types.MergePatchType, []byte(`{"metadata":{"labels":{"patched-by":"rbac-matrix"}}}`), metav1.PatchOptions{})
		return err
	case "delete":
		return stores.Delete(ctx, c.target, metav1.DeleteOptions{})
	case "deletecollection":
		return stores.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	return fmt.Errorf("no request for %s", verb)
}

// subresource sends verb on /status or /scale. Writes ask for
// status.phase=Failed (which the controller never writes for a paused,
// valid store) and for the replicas the store already has.
func (c *matrixClient) subresource(ctx context.Context, sub, verb string) error {
	rc := c.kvs.KvstoreV1alpha1().RESTClient()
	named := func(r *rest.Request) *rest.Request {
		return r.Namespace(c.ns).Resource(kvsResource).Name(c.target).SubResource(sub)
	}
	body := fmt.Appendf(nil, `{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":%q,"namespace":%q},"status":{"phase":%q}}`,
		c.target, c.ns, v1alpha1.PhaseFailed)
	if sub == "scale" {
		body = fmt.Appendf(nil, `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":%q,"namespace":%q},"spec":{"replicas":1}}`, c.target, c.ns)
	}
	switch verb {
	case "get":
		return named(rc.Get()).Do(ctx).Error()
	case "update":
		return named(rc.Put()).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	case "patch":
		return named(rc.Patch(types.MergePatchType)).Body(body).Do(ctx).Error()
	case "create":
		// Were it allowed, it would be 405: neither subresource serves POST.
		return named(rc.Post()).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	case "delete":
		// Nor DELETE.
		return named(rc.Delete()).Do(ctx).Error()
	}
	return fmt.Errorf("no request for %s on /%s", verb, sub)
}

// current is the target as the admin reads it, without a resourceVersion:
// the update is unconditional, so the controller's status writes cannot
// make it conflict.
func (c *matrixClient) current(ctx context.Context) (*v1alpha1.KeyValueStore, error) {
	cur, err := c.adminKVS.KvstoreV1alpha1().KeyValueStores(c.ns).Get(ctx, c.target, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cur.ResourceVersion = ""
	cur.ManagedFields = nil
	return cur, nil
}

// retryUnavailable calls f until it returns anything but an error of a
// kvstore.io API that is briefly unavailable (see unavailable), and returns
// f's last error.
func retryUnavailable(ctx context.Context, f func(context.Context) error) error {
	var last error
	_ = framework.WaitFor(ctx, unavailableTimeout, func(ctx context.Context) error {
		last = f(ctx)
		if last != nil && (apierrors.IsServiceUnavailable(last) || unavailable.MatchString(last.Error())) {
			return last
		}
		return nil
	})
	return last
}
