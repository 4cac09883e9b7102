// Package quota enforces ResourceQuota object counts such as
// count/keyvaluestores.kvstore.io on this server's own resources.
//
// kube-apiserver cannot: it proxies requests for an aggregated API without
// running its own admission on them. kube-controller-manager's quota
// controller already computes the usage of every discovered resource,
// aggregated ones included, into each ResourceQuota's status. The upstream
// ResourceQuota admission plugin, run here with kube's ResourceQuota
// informer, checks a create against that usage and records the increment in
// the quota's status, as kube-apiserver does for its own resources.
package quota

import (
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = resourcequota.PluginName

// Register adds the ResourceQuota plugin, last in order and on by default.
// It needs the server to list and watch resourcequotas and update
// resourcequotas/status in kube-apiserver (artifacts/base/rbac-server.yaml);
// --disable-admission-plugins=ResourceQuota turns it off.
func Register(o *genericoptions.AdmissionOptions) {
	resourcequota.Register(o.Plugins)
	o.RecommendedPluginOrder = append(o.RecommendedPluginOrder, PluginName)
}

// Initializer gives the plugin its quota configuration. The configuration is
// empty on purpose: for a resource with no evaluator of its own the plugin
// creates a generic object-count evaluator, which is all an object count
// quota needs.
type Initializer struct{}

var _ admission.PluginInitializer = Initializer{}

// Initialize sets the quota configuration of the plugins that want one.
func (Initializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(initializer.WantsQuotaConfiguration); ok {
		wants.SetQuotaConfiguration(generic.NewConfiguration(nil, nil))
	}
}
