// Package server holds the commands about the server itself, as a mongos answers them:
// the handshake (hello and isMaster, awaitable for the drivers' streaming monitoring),
// ping, buildInfo, serverStatus, hostInfo, listCommands, getCmdLineOpts, getParameter and
// setParameter, profile, getLog, setDefaultRWConcern and getDefaultRWConcern, fsync and
// fsyncUnlock, and Cosmos DB's getLastRequestStatistics.
package server

import "github.com/cleavedb/cleave/exec/command"

// Handlers runs the commands of this package over the server's services, and keeps the
// awaitable hello's topology version.
type Handlers struct {
	*command.Server
	topo      *topology
	fsyncLock fsyncLock // fsync.go
}

// New returns the handlers of s.
func New(s *command.Server) *Handlers { return &Handlers{Server: s, topo: newTopology()} }
