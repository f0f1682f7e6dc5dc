package integration

import (
	"context"
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
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client certificate, as PEM
// files in a test directory.
type testPKI struct {
	caFile, serverCert, serverKey, clientPEM string // clientPEM holds the client's certificate and key
	pool                                     *x509.CertPool
	client                                   tls.Certificate
	dir                                      string
	ca                                       *x509.Certificate
	caKey                                    *ecdsa.PrivateKey
	serial                                   int64 // of the last certificate issued
}

// newTestPKI creates the CA and both certificates.
func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cleave test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := &testPKI{caFile: filepath.Join(dir, "ca.pem"), serverCert: filepath.Join(dir, "server.pem"),
		serverKey: filepath.Join(dir, "server.key"), clientPEM: filepath.Join(dir, "client.pem"), pool: x509.NewCertPool(),
		dir: dir, ca: ca, caKey: caKey, serial: 1}
	p.pool.AddCert(ca)
	sc, sk := p.issue(t, "127.0.0.1", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")})
	cc, ck := p.issue(t, "client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil)
	if p.client, err = tls.X509KeyPair(cc, ck); err != nil {
		t.Fatal(err)
	}
	for path, b := range map[string][]byte{
		p.caFile:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		p.serverCert: sc, p.serverKey: sk, p.clientPEM: append(cc, ck...),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// issue returns a certificate the CA signed for cn, usages and ips, and its key, as PEM.
func (p *testPKI) issue(t *testing.T, cn string, usages []x509.ExtKeyUsage, ips []net.IP) ([]byte, []byte) {
	t.Helper()
	p.serial++
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: usages, IPAddresses: ips, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// nodeCert writes a certificate for node name at 127.0.0.1, for a cluster node's listener
// and its connections to the other nodes (server and client authentication), and returns
// the paths of the certificate and its key.
func (p *testPKI) nodeCert(t *testing.T, name string) (string, string) {
	t.Helper()
	c, k := p.issue(t, name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		[]net.IP{net.ParseIP("127.0.0.1")})
	certFile, keyFile := filepath.Join(p.dir, name+".pem"), filepath.Join(p.dir, name+".key")
	for path, b := range map[string][]byte{certFile: c, keyFile: k} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// tlsClient connects the Go driver over TLS, trusting the test CA, with the client
// certificate when withCert; it returns the ping's error.
func tlsPing(t *testing.T, srv *server, p *testPKI, withCert bool) error {
	t.Helper()
	tc := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
	if withCert {
		tc.Certificates = []tls.Certificate{p.client}
	}
	c, err := mongo.Connect(options.Client().ApplyURI(srv.uri()).SetTLSConfig(tc).SetServerSelectionTimeout(3 * time.Second))
	if err != nil {
		return err
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	return c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "ping", Value: 1}}).Err()
}

// TestTLS: with --tls-cert and --tls-key every connection uses TLS (the Go driver and mongosh
// with tls=true work, a plain connection does not); with --tls-ca a client must also present
// a certificate the CA signed.
func TestTLS(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	srv := startServer(t, "--tls-cert", p.serverCert, "--tls-key", p.serverKey)
	if err := tlsPing(t, srv, p, false); err != nil {
		t.Fatalf("ping over TLS: %v", err)
	}
	plain, err := mongo.Connect(options.Client().ApplyURI(srv.uri()).SetServerSelectionTimeout(2 * time.Second))
	if err == nil {
		err = plain.Database("admin").RunCommand(context.Background(), bson.D{{Key: "ping", Value: 1}}).Err()
		_ = plain.Disconnect(context.Background())
	}
	if err == nil {
		t.Error("a plain connection to a TLS server succeeded")
	}
	out := srv.mongoshRaw(t, "--quiet", "mongodb://"+srv.addr+"/test?tls=true", "--tlsCAFile", p.caFile,
		"--eval", `db.t.insertOne({x: 1}); print("found", db.t.countDocuments({x: 1}), db.adminCommand({getCmdLineOpts: 1}).parsed.net.tls.mode)`)
	if !strings.Contains(out, "found 1 requireTLS") {
		t.Errorf("mongosh over TLS printed:\n%s", out)
	}

	mutual := startServer(t, "--tls-cert", p.serverCert, "--tls-key", p.serverKey, "--tls-ca", p.caFile)
	if err := tlsPing(t, mutual, p, true); err != nil {
		t.Errorf("ping with a client certificate: %v", err)
	}
	if err := tlsPing(t, mutual, p, false); err == nil {
		t.Error("a client without a certificate reached a server with --tls-ca")
	}
	out = mutual.mongoshRaw(t, "--quiet", "mongodb://"+mutual.addr+"/test?tls=true", "--tlsCAFile", p.caFile,
		"--tlsCertificateKeyFile", p.clientPEM, "--eval", `print("pong", db.runCommand({ping: 1}).ok)`)
	if !strings.Contains(out, "pong 1") {
		t.Errorf("mongosh with a client certificate printed:\n%s", out)
	}
}

// TestTLSBadFlags: half a TLS configuration, or files that are not PEM, stop the server at
// startup with one line naming the problem.
func TestTLSBadFlags(t *testing.T) {
	t.Parallel()
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", junk}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-ca", junk}, "--tls-ca needs --tls-cert and --tls-key"},
		{[]string{"--tls-cert", junk, "--tls-key", junk}, "cannot load --tls-cert/--tls-key"},
	} {
		out, code := runBinary(t, append([]string{"--listen", "127.0.0.1:0", "--dir", t.TempDir()}, tc.args...)...)
		if code != 1 || !strings.Contains(out, tc.want) || strings.Contains(out, "goroutine ") {
			t.Errorf("%v: exit %d, output:\n%s\nwant exit 1 and %q", tc.args, code, out, tc.want)
		}
	}
}
