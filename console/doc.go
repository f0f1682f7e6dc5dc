// Package console is the operator's web console on the HTTP listener: databases and
// collections, each collection's partitions drawn as SVG bar charts (storage, documents and
// RU/s, one bar per partition coloured by shard), its hot keys, throttled requests and the
// splits, merges and moves over time, each node's shards and replicas in cluster mode, and
// the recent slow operations; plus /healthz and /readyz.
//
// It is read-only and server-rendered: html/template pages embedded with go:embed, charts
// drawn on the server as SVG, no JavaScript. It reads the server's state through Source, an
// interface it declares and the executor implements (exec/command's console.go), so it
// knows no commands, catalog or storage: it imports nothing of cleave's. With access control
// on, every page but the probes asks for HTTP basic authentication, which Source checks
// against the users' SCRAM credentials and roles (a user needs the cluster privileges of
// clusterAdmin or root).
//
//	mux := http.NewServeMux()
//	console.New(src, logger).Register(mux)
package console
