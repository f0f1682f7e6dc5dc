package server

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// hello answers hello, isMaster and ismaster as a mongos does, awaitable hellos included
// (topology.go).
func (h *Handlers) hello(ctx context.Context, r *command.Request) error {
	legacy := r.Name != "hello"
	a, err := parseHello(r)
	if err != nil {
		return err
	}
	helloOK, clientCompressors, speculative, saslMechsUser := a.helloOK, a.compressors, a.speculative, a.saslMechsUser
	aw, err := parseAwait(r.Name, r.Body)
	if err != nil {
		return err
	}
	r.Awaited = aw.await
	stream := aw.await && r.Wire != nil && r.Wire.ExhaustAllowed && !r.Legacy
	if stream && r.Wire.Replies > 0 { // the next reply of a stream waits on the last one's version
		aw.processID, aw.counter = h.topo.processID, r.Conn.StreamCounter
	}
	counter, err := h.topo.await(ctx, aw)
	if err != nil {
		return err // an error reply ends the stream
	}
	if stream {
		r.Wire.Exhaust, r.Conn.StreamCounter = true, counter
	}
	out := r.Out
	if helloOK {
		out = bsoncore.AppendBooleanElement(out, "helloOk", true)
	}
	if legacy {
		out = bsoncore.AppendBooleanElement(out, "ismaster", true)
	} else {
		out = bsoncore.AppendBooleanElement(out, "isWritablePrimary", true)
	}
	out = bsoncore.AppendStringElement(out, "msg", "isdbgrid")
	out = h.topo.appendVersion(out, "topologyVersion", counter)
	out = bsoncore.AppendInt32Element(out, "maxBsonObjectSize", wire.MaxBSONSize)
	out = bsoncore.AppendInt32Element(out, "maxMessageSizeBytes", wire.MaxMessageSize)
	out = bsoncore.AppendInt32Element(out, "maxWriteBatchSize", command.MaxWriteBatchSize)
	out = bsoncore.AppendDateTimeElement(out, "localTime", time.Now().UnixMilli())
	out = bsoncore.AppendInt32Element(out, "logicalSessionTimeoutMinutes", h.Sessions.TimeoutMinutes())
	out = bsoncore.AppendInt32Element(out, "connectionId", int32(r.Conn.Info.ID)) // an int, as mongod answers
	out = bsoncore.AppendInt32Element(out, "maxWireVersion", command.MaxWireVersion)
	out = bsoncore.AppendInt32Element(out, "minWireVersion", command.MinWireVersion)
	out = bsoncore.AppendBooleanElement(out, "readOnly", false)
	if clientCompressors != nil {
		r.Conn.Compressors = negotiateCompressors(clientCompressors)
		out = bsonx.AppendStringArray(out, "compression", r.Conn.Compressors)
	}
	if saslMechsUser != "" {
		if mechs := h.Access.SupportedMechs(saslMechsUser); mechs != nil {
			out = bsonx.AppendStringArray(out, "saslSupportedMechs", mechs)
		}
	}
	if speculative != nil {
		if reply := h.Access.Speculative(&r.Conn.Authn, speculative, r.Conn.Log); reply != nil {
			out = bsoncore.AppendDocumentElement(out, "speculativeAuthenticate", reply)
		}
	}
	r.Out = out
	return nil
}

// helloArgs are the fields of a hello that change its reply.
type helloArgs struct {
	helloOK       bool
	compressors   bsoncore.Array    // the client's, nil when it sent none
	speculative   bsoncore.Document // speculativeAuthenticate
	saslMechsUser string            // "db.user" of saslSupportedMechs
}

// parseHello reads a hello's fields and marks the connection as having said hello: as in
// mongod, the first hello of a connection marks it, with or without metadata, and a later
// one may not carry the client metadata document, even an identical one.
func parseHello(r *command.Request) (*helloArgs, error) {
	a := &helloArgs{}
	seen := r.Conn.SeenHello
	r.Conn.SeenHello = true
	err := args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case "client":
			if seen {
				return false, mongoerr.New(mongoerr.ClientMetadataCannotBeMutated,
					"The client metadata document may only be sent in the first hello")
			}
		case "helloOk":
			a.helloOK = v.Type == bsoncore.TypeBoolean && v.Boolean()
		case "compression":
			a.compressors, _ = v.ArrayOK()
		case "speculativeAuthenticate":
			a.speculative, _ = v.DocumentOK()
		case "saslSupportedMechs":
			var ok bool
			if a.saslMechsUser, ok = v.StringValueOK(); ok && !strings.Contains(a.saslMechsUser, ".") {
				// mongod parses it as a UserName (UserName::parse).
				return true, mongoerr.New(mongoerr.BadValue, "UserName must contain a '.' separated database.user pair")
			}
		}
		// The handshake grows fields with every driver release (backpressure, ...); like
		// mongod, accept and ignore the ones this server does not use.
		return true, nil
	})
	return a, err
}

// negotiateCompressors returns the compressors of the client's list that cleave supports,
// in the client's order of preference.
func negotiateCompressors(client bsoncore.Array) []string {
	values, _ := client.Values()
	var both []string
	for _, v := range values {
		name, ok := v.StringValueOK()
		if !ok {
			continue
		}
		for _, s := range command.SupportedCompressors {
			if s == name {
				both = append(both, name)
			}
		}
	}
	return both
}
