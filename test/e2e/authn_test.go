package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// TestForgedProxyHeadersRefused talks straight to kvstore-apiserver, the one
// test that bypasses kube-apiserver: X-Remote-* headers count only when the
// request carries the front-proxy client certificate.
func TestForgedProxyHeadersRefused(t *testing.T) {
	ns := namespace(t)
	url := fmt.Sprintf("https://127.0.0.1:8443/apis/kvstore.io/v1alpha1/namespaces/%s/keyvaluestores", ns)
	caPEM, err := os.ReadFile(filepath.Join(stack.CertDir, "ca.crt"))
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	frontProxy, err := tls.LoadX509KeyPair(filepath.Join(stack.CertDir, "front-proxy-client.crt"), filepath.Join(stack.CertDir, "front-proxy-client.key"))
	require.NoError(t, err)

	// get sends the forged identity until kvstore-apiserver answers other
	// than 5xx (it may be restarting), and returns that answer.
	get := func(certs []tls.Certificate) (int, string) {
		client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, ServerName: "kvstore-apiserver.kvstore-system.svc", Certificates: certs,
		}}}
		defer client.CloseIdleConnections()
		var status int
		var body []byte
		err := framework.WaitFor(context.Background(), eventually, func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			require.NoError(t, err)
			req.Header.Set("X-Remote-User", "admin")
			req.Header.Set("X-Remote-Group", "system:masters")
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			status = resp.StatusCode
			if body, err = io.ReadAll(resp.Body); err != nil {
				return err
			}
			if status >= 500 {
				return fmt.Errorf("status %d: %s", status, body)
			}
			return nil
		})
		require.NoError(t, err)
		return status, string(body)
	}

	status, body := get(nil)
	assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, status, "without a client certificate: %d %s", status, body)

	status, body = get([]tls.Certificate{frontProxy})
	assert.Equal(t, http.StatusOK, status, "with the front-proxy certificate: %s", body)
	assert.Contains(t, body, `"kind":"KeyValueStoreList"`)
}
