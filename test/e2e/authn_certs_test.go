package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clientCert makes a client certificate with common name cn, signed by the
// CA (caCert, caKey), or self-made when caCert is nil.
func clientCert(t *testing.T, cn string, caCert *x509.Certificate, caKey any) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	parent, signer := tmpl, any(key)
	if caCert != nil {
		parent, signer = caCert, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// otherCA is a CA the server has never heard of.
func otherCA(t *testing.T) (*x509.Certificate, any) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert, key
}

// frontProxyCA is the stack's real front-proxy CA, certificate and key.
func frontProxyCA(t *testing.T) (*x509.Certificate, any) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(stack.CertDir, "front-proxy-ca.crt"), filepath.Join(stack.CertDir, "front-proxy-ca.key"))
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	return cert, pair.PrivateKey
}

// Forged X-Remote-* headers straight at the server's port are never
// believed unless the client certificate is the front proxy's: from another
// CA (even with the right common name), or from the right CA with a common
// name not in --requestheader-allowed-names, the request is refused.
func TestForgedProxyHeadersWithWrongCertificates(t *testing.T) {
	ns := namespace(t)
	url := fmt.Sprintf("https://127.0.0.1:%d/apis/kvstore.io/v1alpha1/namespaces/%s/keyvaluestores", mainReplica.port, ns)
	caPEM, err := os.ReadFile(filepath.Join(stack.CertDir, "ca.crt"))
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))

	other, otherKey := otherCA(t)
	right, rightKey := frontProxyCA(t)
	for name, cert := range map[string]tls.Certificate{
		"another CA, allowed name":       clientCert(t, "front-proxy-client", other, otherKey),
		"self-signed, allowed name":      clientCert(t, "front-proxy-client", nil, nil),
		"the front-proxy CA, other name": clientCert(t, "not-the-front-proxy", right, rightKey),
	} {
		t.Run(name, func(t *testing.T) {
			client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
				RootCAs: roots, ServerName: "kvstore-apiserver.kvstore-system.svc", Certificates: []tls.Certificate{cert},
			}}}
			defer client.CloseIdleConnections()
			req, err := http.NewRequest(http.MethodGet, url, nil)
			require.NoError(t, err)
			req.Header.Set("X-Remote-User", "admin")
			req.Header.Set("X-Remote-Group", "system:masters")
			req.Header.Set("X-Remote-Extra-Scopes", "everything")
			resp, err := client.Do(req)
			if err != nil {
				// The TLS handshake refused the certificate: refused too.
				t.Logf("refused at the TLS handshake: %v", err)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.StatusCode, "%s", body)
			assert.NotContains(t, string(body), `"kind":"KeyValueStoreList"`)
		})
	}
}
