// Package apiserver assembles the kvstore.io API server from a generic
// apiserver config: Config → Complete() → New().
package apiserver

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	kvsregistry "github.com/kvstore-io/kvstore-apiserver/pkg/registry/keyvaluestore"
	backupregistry "github.com/kvstore-io/kvstore-apiserver/pkg/registry/keyvaluestorebackup"
)

// ComponentName names the server in logs, metrics and version reports.
const ComponentName = "kvstore-apiserver"

// ExtraConfig holds what the generic server config does not.
type ExtraConfig struct {
	// PostStartHooks run once the server serves, e.g. to start the controller.
	PostStartHooks map[string]genericapiserver.PostStartHookFunc
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
	apiGroupInfo.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"keyvaluestores":        kvs.KeyValueStore,
		"keyvaluestores/status": kvs.Status,
		"keyvaluestores/scale":  kvs.Scale,

		"keyvaluestorebackups":        backups.KeyValueStoreBackup,
		"keyvaluestorebackups/status": backups.Status,
	}
	if err := genericServer.InstallAPIGroup(&apiGroupInfo); err != nil {
		return nil, fmt.Errorf("install %s: %w", kvstore.GroupName, err)
	}

	for name, hook := range c.ExtraConfig.PostStartHooks {
		if err := genericServer.AddPostStartHook(name, hook); err != nil {
			return nil, err
		}
	}
	return s, nil
}
