package keyvaluestore

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	v1beta1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
)

// preferredVersion is the apiVersion the controller names stores and
// backups in (the ownerReferences of what it creates, and events): the
// group's preferred version as kube-apiserver's discovery serves it, which
// the garbage collector observes owners in (a reference naming another
// version it takes for possibly dangling, and reads its owner back through
// the aggregator). During an upgrade, until the APIService of v1beta1
// exists, kube-apiserver cannot map kvstore.io/v1beta1: the garbage
// collector cannot resolve such references and
// OwnerReferencesPermissionEnforcement refuses every create carrying one
// with blockOwnerDeletion. One per process, like the group's APIServices
// per cluster; v1beta1 until discovery says otherwise.
var preferredVersion atomic.Pointer[string]

func init() { preferredVersion.Store(ptr.To(v1beta1.SchemeGroupVersion.String())) }

// ownerAPIVersion is the version the controller names the group's objects in.
func ownerAPIVersion() string { return *preferredVersion.Load() }

// refreshOwnerVersion reads the group's preferred version from discovery
// and reports whether it changed. Only a version served in full counts:
// both resources listed and not stale. A version that is only stale for a
// moment (kube-aggregator marks an APIService's versions stale one at a
// time while its Service has no ready endpoint) is kept, or every store's
// objects would be rewritten to another version and back. An error, or
// the group missing, keeps the version known.
func refreshOwnerVersion(ctx context.Context, d discovery.DiscoveryInterface) bool {
	logger := klog.FromContext(ctx)
	groups, resources, err := d.ServerGroupsAndResources()
	failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err)
	if err != nil && !partial {
		logger.V(2).Info("Discovery failed; the owner version stays", "version", ownerAPIVersion(), "err", err)
		return false
	}
	if gv, err := schema.ParseGroupVersion(ownerAPIVersion()); err == nil && failed[gv] != nil {
		return false
	}
	v, ok := servedVersion(groups, resources, failed)
	if !ok {
		return false
	}
	if old := preferredVersion.Swap(&v); *old != v {
		logger.Info("The group's preferred version changed: owner references and events name it", "from", *old, "to", v)
		return true
	}
	return false
}

// servedVersion is the group's most preferred version that discovery
// serves in full: not stale, and listing both resources (an APIService
// whose Service does not serve its version is listed current and empty).
func servedVersion(groups []*metav1.APIGroup, resources []*metav1.APIResourceList, failed map[schema.GroupVersion]error) (string, bool) {
	complete := map[string]bool{}
	for _, l := range resources {
		if l == nil {
			continue
		}
		names := map[string]bool{}
		for _, r := range l.APIResources {
			names[r.Name] = true
		}
		complete[l.GroupVersion] = names["keyvaluestores"] && names["keyvaluestorebackups"]
	}
	for _, g := range groups {
		if g.Name != v1alpha1.GroupName {
			continue
		}
		for _, v := range append([]metav1.GroupVersionForDiscovery{g.PreferredVersion}, g.Versions...) {
			if complete[v.GroupVersion] && failed[schema.GroupVersion{Group: g.Name, Version: v.Version}] == nil {
				return v.GroupVersion, true
			}
		}
	}
	return "", false
}
