package quota

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

const countKVS = corev1.ResourceName("count/keyvaluestores.kvstore.io")

func TestRegisterIsLastAndOnByDefault(t *testing.T) {
	o := genericoptions.NewAdmissionOptions()
	Register(o)
	assert.Contains(t, o.Plugins.Registered(), PluginName)
	assert.Equal(t, PluginName, o.RecommendedPluginOrder[len(o.RecommendedPluginOrder)-1])
	assert.False(t, o.DefaultOffPlugins.Has(PluginName))
}

type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }

// TestObjectCountQuota builds the plugin the way the server's admission
// options do and checks that a count/keyvaluestores.kvstore.io quota, whose
// usage kube-controller-manager has computed, is enforced and charged.
func TestObjectCountQuota(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "stores", Namespace: "team", ResourceVersion: "1"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{countKVS: resource.MustParse("1")}},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{countKVS: resource.MustParse("1")},
			Used: corev1.ResourceList{countKVS: resource.MustParse("0")},
		},
	}
	kube := fake.NewClientset(quota)
	factory := informers.NewSharedInformerFactory(kube, 0)

	o := genericoptions.NewAdmissionOptions()
	Register(o)
	initializers := admission.PluginInitializers{
		initializer.New(kube, nil, factory, nil, nil, nil, ctx.Done(), nil),
		Initializer{},
	}
	plugin, err := o.Plugins.NewFromPlugins([]string{PluginName}, noConfig{}, initializers, nil)
	require.NoError(t, err)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	validator := plugin.(admission.ValidationInterface)

	create := func(namespace, name string) error {
		attrs := admission.NewAttributesRecord(
			&kvstore.KeyValueStore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}, nil,
			kvstore.SchemeGroupVersion.WithKind("KeyValueStore"), namespace, name,
			kvstore.SchemeGroupVersion.WithResource("keyvaluestores"), "",
			admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
		return validator.Validate(ctx, attrs, nil)
	}

	require.NoError(t, create("team", "first"), "within quota")
	var charged *corev1.ResourceQuota
	for _, a := range kube.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			charged = u.GetObject().(*corev1.ResourceQuota)
		}
	}
	require.NotNil(t, charged, "the admitted create is charged to the quota's status; actions: %v", kube.Actions())
	used := charged.Status.Used[countKVS]
	assert.Equal(t, "1", used.String())
	// The plugin reads quotas from the informer: let it see the charge, as
	// it would before a later request (otherwise a loaded machine races it).
	lister := factory.Core().V1().ResourceQuotas().Lister()
	require.Eventually(t, func() bool {
		q, err := lister.ResourceQuotas("team").Get("stores")
		if err != nil {
			return false
		}
		u := q.Status.Used[countKVS]
		return u.Value() == 1
	}, 10*time.Second, 10*time.Millisecond)

	err = create("team", "second")
	require.True(t, apierrors.IsForbidden(err), "want 403 Forbidden, got %v", err)
	assert.Contains(t, err.Error(), "exceeded quota: stores")
	assert.Contains(t, err.Error(), string(countKVS))

	assert.NoError(t, create("other-team", "first"), "a namespace without a quota is not limited")
}
