// Package server turns command-line flags into a running kvstore-apiserver.
package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericfeatures "k8s.io/apiserver/pkg/features"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	basecompatibility "k8s.io/component-base/compatibility"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	"github.com/kvstore-io/kvstore-apiserver/pkg/admission/quota"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apiserver"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apiserver/quantityguard"
	kvsopenapi "github.com/kvstore-io/kvstore-apiserver/pkg/generated/openapi"
)

// kvstoreInternal is the version objects are decoded to from etcd.
var kvstoreInternal = kvstore.SchemeGroupVersion

// DefaultEtcdPathPrefix keeps our keys apart from kube-apiserver's if an etcd is shared.
const DefaultEtcdPathPrefix = "/registry/kvstore.io"

// MaxRequestBodyBytes bounds the body of every create, update, patch and
// delete: a longer one is refused with 413 before any of it is decoded. It is
// also the most a JSON patch may copy (its "copy" operations can otherwise
// grow a small patch into a huge object). kube-apiserver uses the same 3 MiB:
// room for a JSON or YAML body twice the size of etcd's 1.5 MiB request limit,
// since the object is stored as the smaller protobuf. Stated here, not taken
// from k8s.io/apiserver's defaults, so a library update cannot move it
// (docs/api.md, "Hostile input").
const MaxRequestBodyBytes = 3 * 1024 * 1024

func init() {
	// Off by default (--feature-gates=WatchListCompression=true turns it back
	// on): once an informer's watch-list stream is gzipped, every later event
	// is compressed on its own flush. Our watchers are informers in the
	// cluster (our controller over loopback, kube-controller-manager through
	// the aggregator, which decompresses again), so gzip only costs CPU at
	// both ends (docs/benchmarks.md). Set once, before any flag parsing.
	// Should the gate ever be locked upstream, say so and run with its default.
	if err := utilfeature.DefaultMutableFeatureGate.OverrideDefault(genericfeatures.WatchListCompression, false); err != nil {
		klog.Background().Error(err, "Cannot turn WatchListCompression off by default")
	}
}

// Options are every flag of kvstore-apiserver.
type Options struct {
	RecommendedOptions *genericoptions.RecommendedOptions
	ServerRun          *genericoptions.ServerRunOptions
	Logs               *logsapi.LoggingConfiguration
	Controller         *ControllerOptions

	// Standalone serves without a kube-apiserver: no delegated authn/authz
	// (every request allowed), no webhooks or APF, loopback addresses only.
	// For local development and tests against a bare etcd.
	Standalone bool

	// AlternateDNS are extra names for a self-signed serving certificate.
	AlternateDNS []string

	// StorageVersion is the kvstore.io version objects are written to etcd
	// in: apiserver.StorageVersion unless a rolling upgrade from a server
	// that cannot read it needs the old one for a while (docs/api.md,
	// "Upgrading").
	StorageVersion string

	componentGlobals basecompatibility.ComponentGlobalsRegistry
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	o := &Options{
		RecommendedOptions: genericoptions.NewRecommendedOptions(
			DefaultEtcdPathPrefix,
			apiserver.Codecs.LegacyCodec(apiserver.StorageVersion),
		),
		ServerRun:        genericoptions.NewServerRunOptions(),
		Logs:             logsapi.NewLoggingConfiguration(),
		Controller:       NewControllerOptions(),
		StorageVersion:   apiserver.StorageVersion.Version,
		componentGlobals: compatibility.DefaultComponentGlobalsRegistry,
	}
	// Stored as protobuf, like kube-apiserver's built-in types: smaller and
	// cheaper to decode than JSON. Objects written as JSON still read back.
	o.RecommendedOptions.Etcd.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	o.RecommendedOptions.Etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(
		apiserver.StorageVersion, schema.GroupKind{Group: apiserver.StorageVersion.Group})
	// Unprivileged port: the server runs as non-root.
	o.RecommendedOptions.SecureServing.BindPort = 8443
	// ResourceQuota object counts of our resources (count/keyvaluestores.kvstore.io)
	// can only be enforced here (see pkg/admission/quota).
	quota.Register(o.RecommendedOptions.Admission)
	o.RecommendedOptions.ExtraAdmissionInitializers = func(*genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		return []admission.PluginInitializer{quota.Initializer{}}, nil
	}
	// Close open watches (the aggregator keeps several) at shutdown instead of
	// waiting for them to time out, so a stopping replica exits in seconds.
	o.ServerRun.ShutdownWatchTerminationGracePeriod = 5 * time.Second
	o.ServerRun.MaxRequestBodyBytes = MaxRequestBodyBytes
	o.ServerRun.JSONPatchMaxCopyBytes = MaxRequestBodyBytes
	return o
}

// Flags returns the flags grouped as `--help` prints them.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	o.RecommendedOptions.AddFlags(fss.FlagSet("generic"))
	o.ServerRun.AddUniversalFlags(fss.FlagSet("server"))
	logsapi.AddFlags(o.Logs, fss.FlagSet("logs"))
	o.componentGlobals.AddFlags(fss.FlagSet("features"))

	o.Controller.AddFlags(fss.FlagSet("controller"))

	fs := fss.FlagSet("kvstore")
	fs.BoolVar(&o.Standalone, "standalone", o.Standalone,
		"Serve without a kube-apiserver: no delegated authentication or authorization (every request is allowed), no webhooks, no priority and fairness, no controller. Requires a loopback --bind-address. For local development only.")
	fs.StringVar(&o.StorageVersion, "storage-version", o.StorageVersion,
		"The kvstore.io version objects are written to etcd in (v1beta1 or v1alpha1); objects stored in either are read. "+
			"v1alpha1 only while replicas of a server that cannot read v1beta1 share the etcd, during a rolling upgrade.")
	fs.StringSliceVar(&o.AlternateDNS, "alternate-dns", o.AlternateDNS,
		"Extra DNS names for the self-signed serving certificate made when no --tls-cert-file is given.")
	return fss
}

// Complete fills in what depends on other flags.
func (o *Options) Complete() error {
	if err := o.componentGlobals.Set(); err != nil {
		return err
	}
	if o.Standalone {
		if o.RecommendedOptions.SecureServing.BindAddress == nil || o.RecommendedOptions.SecureServing.BindAddress.IsUnspecified() {
			o.RecommendedOptions.SecureServing.BindAddress = netutils.ParseIPSloppy("127.0.0.1")
		}
		o.RecommendedOptions.CoreAPI = nil
		o.Controller.Enabled = false
		o.RecommendedOptions.Admission = nil
		o.RecommendedOptions.Features.EnablePriorityAndFairness = false
		o.RecommendedOptions.Authentication.RemoteKubeConfigFileOptional = true
		o.RecommendedOptions.Authorization.RemoteKubeConfigFileOptional = true
		o.RecommendedOptions.Authorization.AlwaysAllowGroups = append(o.RecommendedOptions.Authorization.AlwaysAllowGroups,
			"system:unauthenticated", "system:authenticated")
	}
	return o.ServerRun.Complete()
}

// Validate reports every invalid flag at once.
func (o *Options) Validate() error {
	var errs []error
	errs = append(errs, o.RecommendedOptions.Validate()...)
	errs = append(errs, o.ServerRun.Validate()...)
	errs = append(errs, o.componentGlobals.Validate()...)
	errs = append(errs, o.Controller.Validate()...)
	if err := logsapi.ValidateAndApply(o.Logs, nil); err != nil {
		errs = append(errs, err)
	}
	if _, err := o.storageVersion(); err != nil {
		errs = append(errs, err)
	}
	if o.Standalone && !o.RecommendedOptions.SecureServing.BindAddress.IsLoopback() {
		errs = append(errs, fmt.Errorf("--standalone allows every request, so --bind-address must be a loopback address, not %s", o.RecommendedOptions.SecureServing.BindAddress))
	}
	return utilerrors.NewAggregate(errs)
}

// Config turns the options into a server configuration.
func (o *Options) Config() (*apiserver.Config, error) {
	if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", o.AlternateDNS,
		[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("create self-signed certificates: %w", err)
	}

	serverConfig := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	// Innermost, so authentication and authorization run first.
	serverConfig.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return genericapiserver.DefaultBuildHandlerChain(quantityguard.WithFilter(h, apiserver.Codecs, c.MaxRequestBodyBytes), c)
	}
	namer := openapi.NewDefinitionNamer(apiserver.Scheme)
	serverConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(kvsopenapi.GetOpenAPIDefinitions, namer)
	serverConfig.OpenAPIConfig.Info.Title = "kvstore-apiserver"
	serverConfig.OpenAPIConfig.Info.Version = apiserver.ServedVersions[0].Version
	serverConfig.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(kvsopenapi.GetOpenAPIDefinitions, namer)
	serverConfig.OpenAPIV3Config.Info.Title = "kvstore-apiserver"
	serverConfig.OpenAPIV3Config.Info.Version = apiserver.ServedVersions[0].Version
	serverConfig.FeatureGate = o.componentGlobals.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	serverConfig.EffectiveVersion = o.componentGlobals.EffectiveVersionFor(basecompatibility.DefaultKubeComponent)

	if err := o.ServerRun.ApplyTo(&serverConfig.Config); err != nil {
		return nil, err
	}
	// Etcd is applied below through a storage factory instead of the simple
	// one RecommendedOptions would build.
	etcd := o.RecommendedOptions.Etcd
	o.RecommendedOptions.Etcd = nil
	err := o.RecommendedOptions.ApplyTo(serverConfig)
	o.RecommendedOptions.Etcd = etcd
	if err != nil {
		return nil, err
	}
	if err := etcd.ApplyWithStorageFactoryTo(o.storageFactory(serverConfig), &serverConfig.Config); err != nil {
		return nil, err
	}

	hooks := serverHooks{postStart: map[string]genericapiserver.PostStartHookFunc{}, preShutdown: map[string]genericapiserver.PreShutdownHookFunc{}}
	if err := o.Controller.apply(serverConfig, hooks); err != nil {
		return nil, err
	}
	return &apiserver.Config{GenericConfig: serverConfig,
		ExtraConfig: apiserver.ExtraConfig{PostStartHooks: hooks.postStart, PreShutdownHooks: hooks.preShutdown}}, nil
}

// storageFactory picks each resource's storage (encoding) version:
// --storage-version, apiserver.StorageVersion by default. Objects stored in
// any other registered version still decode.
func (o *Options) storageFactory(c *genericapiserver.RecommendedConfig) *serverstorage.DefaultStorageFactory {
	storageConfig := o.RecommendedOptions.Etcd.StorageConfig
	if storageConfig.StorageObjectCountTracker == nil {
		storageConfig.StorageObjectCountTracker = c.StorageObjectCountTracker
	}
	resourceConfig := serverstorage.NewResourceConfig()
	resourceConfig.EnableVersions(apiserver.ServedVersions...)
	encoding := serverstorage.NewDefaultResourceEncodingConfigForEffectiveVersion(apiserver.Scheme, c.EffectiveVersion)
	// Stated, not left to the scheme's priority and the emulation-version
	// rules, so the storage version changes only by a change here.
	storageVersion, _ := o.storageVersion() // checked by Validate
	for _, resource := range []string{"keyvaluestores", "keyvaluestorebackups"} {
		encoding.SetResourceEncoding(storageVersion.WithResource(resource).GroupResource(), storageVersion, kvstoreInternal)
	}
	return serverstorage.NewDefaultStorageFactory(
		storageConfig,
		o.RecommendedOptions.Etcd.DefaultStorageMediaType,
		apiserver.Codecs,
		encoding,
		resourceConfig,
		nil,
	)
}

// storageVersion is --storage-version as a group version, if it is served.
func (o *Options) storageVersion() (schema.GroupVersion, error) {
	var versions []string
	for _, gv := range apiserver.ServedVersions {
		if gv.Version == o.StorageVersion {
			return gv, nil
		}
		versions = append(versions, gv.Version)
	}
	return schema.GroupVersion{}, fmt.Errorf("--storage-version %q is not a served version of %s: %s", o.StorageVersion, apiserver.StorageVersion.Group, strings.Join(versions, ", "))
}
