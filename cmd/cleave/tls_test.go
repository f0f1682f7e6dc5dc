package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeNodePKI writes a CA and a node certificate it signed for 127.0.0.1 as PEM files, and
// returns their paths, the node certificate's DER and a pool holding the CA.
func writeNodePKI(t *testing.T) (caFile, certFile, keyFile string, nodeDER []byte, pool *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	nodeDER, err = x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "node.pem"), filepath.Join(dir, "node.key")
	for path, b := range map[string][]byte{
		caFile:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: nodeDER}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool = x509.NewCertPool()
	pool.AddCert(ca)
	return caFile, certFile, keyFile, nodeDER, pool
}

// TestInternalTLSConfig: with --tls-cert and --tls-key the internal client presents the
// node's certificate, trusts --tls-ca (the system's roots without it) and needs TLS 1.2;
// without a certificate it dials plain TCP (no configuration).
func TestInternalTLSConfig(t *testing.T) {
	caFile, certFile, keyFile, nodeDER, pool := writeNodePKI(t)
	internal := func(c *Config) *tls.Config {
		t.Helper()
		server, err := c.tlsConfig()
		if err != nil {
			t.Fatal(err)
		}
		return internalTLSConfig(server)
	}

	tc := internal(&Config{TLSCert: certFile, TLSKey: keyFile, TLSCA: caFile})
	if tc == nil {
		t.Fatal("no internal TLS configuration with --tls-cert, --tls-key and --tls-ca")
	}
	if len(tc.Certificates) != 1 || len(tc.Certificates[0].Certificate) != 1 || !bytes.Equal(tc.Certificates[0].Certificate[0], nodeDER) {
		t.Error("the internal client does not present the node's certificate")
	}
	if tc.RootCAs == nil || !tc.RootCAs.Equal(pool) {
		t.Error("the internal client does not verify its peers against --tls-ca")
	}
	if tc.MinVersion != tls.VersionTLS12 || tc.InsecureSkipVerify || tc.ServerName != "" {
		t.Errorf("MinVersion %x, InsecureSkipVerify %v, ServerName %q; want TLS 1.2, verification, the dialed host",
			tc.MinVersion, tc.InsecureSkipVerify, tc.ServerName)
	}

	tc = internal(&Config{TLSCert: certFile, TLSKey: keyFile})
	if tc == nil || len(tc.Certificates) != 1 || tc.RootCAs != nil {
		t.Errorf("without --tls-ca: %+v, want the node's certificate and the system's roots", tc)
	}

	if tc := internal(&Config{}); tc != nil {
		t.Errorf("without a certificate: %+v, want nil (plain TCP)", tc)
	}
}
