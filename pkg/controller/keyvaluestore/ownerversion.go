package keyvaluestore

import (
	"context"
	"sync/atomic"

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

// refreshOwnerVersion reads the group's preferred version from discovery and
// reports whether it changed. An error, or the group missing (its
// APIServices unavailable), keeps the version known.
func refreshOwnerVersion(ctx context.Context, d discovery.DiscoveryInterface) bool {
	groups, err := d.ServerGroups()
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Discovery failed; the owner version stays", "version", ownerAPIVersion(), "err", err)
		return false
	}
	for _, g := range groups.Groups {
		if g.Name != v1alpha1.GroupName || g.PreferredVersion.GroupVersion == "" {
			continue
		}
		v := g.PreferredVersion.GroupVersion
		if old := preferredVersion.Swap(&v); *old != v {
			klog.FromContext(ctx).Info("The group's preferred version changed: owner references and events name it", "from", *old, "to", v)
			return true
		}
		return false
	}
	return false
}
