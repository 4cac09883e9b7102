package scenario

import (
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// kvstoreEtcd connects to every member of the stack's kvstore etcd with
// kvstore-apiserver's client certificate.
func (e *Env) kvstoreEtcd() (*clientv3.Client, error) {
	tlsCfg, err := e.Stack.KVStoreEtcdTLS()
	if err != nil {
		return nil, err
	}
	endpoints := []string{"https://127.0.0.1:32381"}
	if e.Alive("etcd-kvstore-2") {
		endpoints = append(endpoints, "https://127.0.0.1:32383", "https://127.0.0.1:32385")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsCfg, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("kvstore etcd client: %w", err)
	}
	return c, nil
}
