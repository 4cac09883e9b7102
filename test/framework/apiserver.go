package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kvstore-io/kvstore-apiserver/pkg/cmd/server"
)

// APIServer is kvstore-apiserver running in this process in standalone mode.
type APIServer struct {
	// Config reaches the server as a privileged loopback client.
	Config *rest.Config
	// EtcdPrefix is where the server keeps its objects.
	EtcdPrefix string
	cancel     context.CancelFunc
	done       chan error
	certDir    string
}

// StartAPIServer runs kvstore-apiserver in-process against etcdURL and waits
// until /readyz passes. Extra flags are parsed after the defaults.
func StartAPIServer(ctx context.Context, etcdURL, etcdPrefix string, extraFlags ...string) (_ *APIServer, err error) {
	certDir, err := os.MkdirTemp("", "kvstore-certs-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(certDir)
		return nil, err
	}
	defer func() {
		if err != nil {
			ln.Close()
			os.RemoveAll(certDir)
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	o := server.NewOptions()
	fs := o.Flags()
	args := append([]string{
		"--standalone",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + certDir,
		"--etcd-servers=" + etcdURL,
		"--etcd-prefix=" + etcdPrefix,
	}, extraFlags...)
	all := fs.FlagSet("all")
	for _, f := range fs.FlagSets {
		all.AddFlagSet(f)
	}
	if err := all.Parse(args); err != nil {
		return nil, err
	}
	o.RecommendedOptions.SecureServing.Listener = ln
	if err := o.Complete(); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	srv, err := server.NewServer(o)
	if err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	s := &APIServer{
		Config:     rest.CopyConfig(srv.GenericAPIServer.LoopbackClientConfig),
		EtcdPrefix: etcdPrefix,
		cancel:     cancel,
		done:       make(chan error, 1),
		certDir:    certDir,
	}
	go func() { s.done <- srv.GenericAPIServer.PrepareRun().RunWithContext(runCtx) }()

	httpClient, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		cancel()
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		status := 0
		if resp, err := httpClient.Get(s.Config.Host + "/readyz"); err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		if status == http.StatusOK {
			return s, nil
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("kvstore-apiserver stopped before ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			return nil, fmt.Errorf("kvstore-apiserver not ready after 60s (last /readyz status %d)", status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop shuts the server down, waits for it and removes its certificates.
func (s *APIServer) Stop() {
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
	}
	os.RemoveAll(s.certDir)
}
