// Package apiserver assembles the kvstore.io API server from a generic
// apiserver config: Config → Complete() → New().
package apiserver

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
	kvsregistry "github.com/kvstore-io/kvstore-apiserver/pkg/registry/keyvaluestore"
	backupregistry "github.com/kvstore-io/kvstore-apiserver/pkg/registry/keyvaluestorebackup"
)

// ComponentName names the server in logs, metrics and version reports.
const ComponentName = "kvstore-apiserver"

// ServedVersions are the kvstore.io versions the server serves, preferred
// first (the scheme's version priority, which discovery reports).
var ServedVersions = []schema.GroupVersion{v1beta1.SchemeGroupVersion, v1alpha1.SchemeGroupVersion}

// StorageVersion is the version objects are written to etcd in. It is
// v1beta1: the preferred version, so the common read and write needs the
// least conversion, and the version that will outlive v1alpha1, so dropping
// v1alpha1 later needs no data migration first. Objects stored as v1alpha1
// by an older server still decode (the storage codec reads every
// registered version) and are rewritten as v1beta1 on their next write or
// by `kvstore-apiserver migrate-storage` (docs/api.md, "Upgrading").
var StorageVersion = v1beta1.SchemeGroupVersion

// ExtraConfig holds what the generic server config does not.
type ExtraConfig struct {
	// PostStartHooks run once the server serves, e.g. to start the controller.
	PostStartHooks map[string]genericapiserver.PostStartHookFunc
	// PreShutdownHooks run when shutdown begins, e.g. to stop the
	// controller; the server stops serving only after they returned.
	PreShutdownHooks map[string]genericapiserver.PreShutdownHookFunc
}

// Config is the whole server configuration before it is completed.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

type completedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   *ExtraConfig
}

// CompletedConfig can only be made by Complete, so New never sees a half-filled config.
type CompletedConfig struct {
	*completedConfig
}

// Server is a running kvstore.io API server.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// Complete fills in defaults. It mutates the receiver.
func (cfg *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{
		GenericConfig: cfg.GenericConfig.Complete(),
		ExtraConfig:   &cfg.ExtraConfig,
	}}
}

// New builds the server and installs the kvstore.io group.
func (c completedConfig) New() (*Server, error) {
	genericServer, err := c.GenericConfig.New(ComponentName, genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	s := &Server{GenericAPIServer: genericServer}

	kvs, err := kvsregistry.NewStorage(Scheme, c.GenericConfig.RESTOptionsGetter)
	if err != nil {
		return nil, fmt.Errorf("keyvaluestores storage: %w", err)
	}
	backups, err := backupregistry.NewStorage(Scheme, c.GenericConfig.RESTOptionsGetter)
	if err != nil {
		return nil, fmt.Errorf("keyvaluestorebackups storage: %w", err)
	}
	apiGroupInfo := genericapiserver.NewDefaultAPIGroupInfo(kvstore.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	// Every served version shares one store per resource: they hold internal
	// objects, so both versions see the same data, watch cache and strategy,
	// and conversion happens only at the wire and at etcd.
	resources := map[string]rest.Storage{
		"keyvaluestores":        kvs.KeyValueStore,
		"keyvaluestores/status": kvs.Status,
		"keyvaluestores/scale":  kvs.Scale,

		"keyvaluestorebackups":        backups.KeyValueStoreBackup,
		"keyvaluestorebackups/status": backups.Status,
	}
	for _, gv := range ServedVersions {
		apiGroupInfo.VersionedResourcesStorageMap[gv.Version] = resources
	}
	if err := genericServer.InstallAPIGroup(&apiGroupInfo); err != nil {
		return nil, fmt.Errorf("install %s: %w", kvstore.GroupName, err)
	}

	for name, hook := range c.ExtraConfig.PostStartHooks {
		if err := genericServer.AddPostStartHook(name, hook); err != nil {
			return nil, err
		}
	}
	for name, hook := range c.ExtraConfig.PreShutdownHooks {
		if err := genericServer.AddPreShutdownHook(name, hook); err != nil {
			return nil, err
		}
	}
	return s, nil
}
