package keyvaluestore

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

// controllerRBAC holds the ClusterRole the controller runs with in a
// cluster, and in the local stack.
const controllerRBAC = "../../../artifacts/base/rbac-controller.yaml"

// rbacRequest is what RBAC authorizes of a request to kube-apiserver.
type rbacRequest struct{ group, resource, verb string }

// requestsSent are the requests the controller sent to kube-apiserver in
// this package's syncs, each with the first test that sent it.
var requestsSent = struct {
	sync.Mutex
	by map[rbacRequest]string
}{by: map[rbacRequest]string{}}

func recordRequests(test string, actions []core.Action) {
	requestsSent.Lock()
	defer requestsSent.Unlock()
	for _, a := range actions {
		r := rbacRequest{group: a.GetResource().Group, resource: a.GetResource().Resource, verb: a.GetVerb()}
		if s := a.GetSubresource(); s != "" {
			r.resource += "/" + s
		}
		if r.verb == "delete-collection" {
			r.verb = "deletecollection"
		}
		record := []rbacRequest{r}
		if p, ok := a.(core.PatchAction); ok && p.GetPatchType() == types.ApplyPatchType {
			// An apply that creates the object is authorized as a create too;
			// one that sets or changes an ownerReference (adoption, the
			// owner's version) needs delete where
			// OwnerReferencesPermissionEnforcement is on.
			record = append(record, rbacRequest{group: r.group, resource: r.resource, verb: "create"},
				rbacRequest{group: r.group, resource: r.resource, verb: "delete"})
		}
		for _, r := range record {
			if _, ok := requestsSent.by[r]; !ok {
				requestsSent.by[r] = test
			}
		}
	}
}

// TestMain checks, once the tests passed, that the controller's RBAC
// grants every request its syncs sent: a verb it lacks fails only in a
// cluster, and only on the path that needs it (found so: the teardown
// deletes a stalled data Pod, which the ClusterRole did not grant).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := checkControllerRBAC(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func checkControllerRBAC() error {
	data, err := os.ReadFile(controllerRBAC)
	if err != nil {
		return err
	}
	var rules []rbacv1.PolicyRule
	for _, doc := range strings.Split(string(data), "\n---") {
		var role struct {
			Kind  string              `json:"kind"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			return fmt.Errorf("%s: %w", controllerRBAC, err)
		}
		// The Role is the leader election's, in the server's namespace only.
		if role.Kind == "ClusterRole" {
			rules = append(rules, role.Rules...)
		}
	}
	requestsSent.Lock()
	defer requestsSent.Unlock()
	var missing []string
	for r, test := range requestsSent.by {
		if !slices.ContainsFunc(rules, func(p rbacv1.PolicyRule) bool { return allows(p, r) }) {
			missing = append(missing, fmt.Sprintf("%s %s (group %q, sent in %s)", r.verb, r.resource, r.group, test))
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%s does not grant what the controller sends:\n  %s", controllerRBAC, strings.Join(missing, "\n  "))
	}
	return nil
}

// allows: p grants r on every object (a rule limited to names does not).
func allows(p rbacv1.PolicyRule, r rbacRequest) bool {
	if len(p.ResourceNames) > 0 {
		return false
	}
	has := func(set []string, v string) bool {
		return slices.Contains(set, v) || slices.Contains(set, rbacv1.ResourceAll)
	}
	return has(p.APIGroups, r.group) && has(p.Resources, r.resource) && has(p.Verbs, r.verb)
}
