package wire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
)

// selfSigned returns a self-signed certificate for 127.0.0.1, usable by a server and a
// client, and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// TestClientTLS: a client with a TLS configuration and no ServerName reaches a TLS server
// that requires client certificates, verifying its certificate for the IP address it dials;
// a client that does not trust the server's CA gets an *UnreachableError.
func TestClientTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ServerOptions{}, newEchoHandler(), zap.NewNop())
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert},
			ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}))
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		<-served
	})
	ping := bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).AppendString("$db", "admin").Build()
	ctx := context.Background()

	tc := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}
	c := NewClient(ln.Addr().String(), ClientOptions{TLS: tc})
	defer c.Close()
	reply, err := c.Command(ctx, ping)
	if err != nil {
		t.Fatalf("ping over TLS: %v", err)
	}
	if got := reply.Lookup("cmd").StringValue(); got != "ping" {
		t.Fatalf("reply names %q, want ping", got)
	}
	if tc.ServerName != "" {
		t.Errorf("NewClient changed the caller's configuration: ServerName %q", tc.ServerName)
	}

	untrusting := NewClient(ln.Addr().String(), ClientOptions{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	defer untrusting.Close()
	_, err = untrusting.Command(ctx, ping)
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("a client not trusting the server's CA: %v, want *UnreachableError", err)
	}
}
