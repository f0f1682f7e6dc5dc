package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
)

// tlsConfig returns the TLS configuration of --tls-cert and --tls-key (nil when neither is
// set): TLS 1.2 or later on every connection, as mongod's requireTLS. With --tls-ca, clients
// must present a certificate signed by that CA (mongod's tlsCAFile without
// tlsAllowConnectionsWithoutCertificates).
func (c *Config) tlsConfig() (*tls.Config, error) {
	if c.TLSCert == "" && c.TLSKey == "" {
		if c.TLSCA != "" {
			return nil, errors.New("--tls-ca needs --tls-cert and --tls-key")
		}
		return nil, nil
	}
	if c.TLSCert == "" || c.TLSKey == "" {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("cannot load --tls-cert/--tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.TLSCA != "" {
		pem, err := os.ReadFile(c.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("cannot read --tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", c.TLSCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// internalTLSConfig returns the TLS configuration of the connections the node opens to the
// other nodes of its cluster, from its listener's configuration server (nil: plain TCP), as
// mongod's net.tls applies to its cluster's connections: it presents the node's own
// certificate, so that a peer started with --tls-ca accepts it, and verifies the peer's
// against --tls-ca, or the system's roots without it, for the host it dials.
func internalTLSConfig(server *tls.Config) *tls.Config {
	if server == nil {
		return nil
	}
	return &tls.Config{Certificates: server.Certificates, RootCAs: server.ClientCAs, MinVersion: tls.VersionTLS12}
}

// listen opens cfg.Listen, with TLS when tc is set.
func listen(cfg *Config, tc *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", cfg.Listen, unwrapNetErr(err))
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	return ln, nil
}
