package cmd

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// hello answers hello, isMaster and ismaster as a mongos does, awaitable hellos included
// (topology.go).
func (e *Executor) hello(ctx context.Context, r *request) error {
	legacy := r.name != "hello"
	var helloOK bool
	var clientCompressors bsoncore.Array
	var speculative bsoncore.Document
	var saslMechsUser string // "db.user" of saslSupportedMechs
	// As in mongod, the first hello of a connection marks it, with or without metadata; a
	// later one may not carry the client metadata document, even an identical one.
	seen := r.conn.seenHello
	r.conn.seenHello = true
	err := args.ForEach(r.name, r.body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case "client":
			if seen {
				return false, mongoerr.New(mongoerr.ClientMetadataCannotBeMutated,
					"The client metadata document may only be sent in the first hello")
			}
		case "helloOk":
			helloOK = v.Type == bsoncore.TypeBoolean && v.Boolean()
		case "compression":
			clientCompressors, _ = v.ArrayOK()
		case "speculativeAuthenticate":
			speculative, _ = v.DocumentOK()
		case "saslSupportedMechs":
			saslMechsUser, _ = v.StringValueOK()
		}
		// The handshake grows fields with every driver release (backpressure, ...); like
		// mongod, accept and ignore the ones this server does not use.
		return true, nil
	})
	if err != nil {
		return err
	}
	aw, err := parseAwait(r.name, r.body)
	if err != nil {
		return err
	}
	r.awaited = aw.await
	stream := aw.await && r.wire != nil && r.wire.ExhaustAllowed && !r.legacy
	if stream && r.wire.Replies > 0 { // the next reply of a stream waits on the last one's version
		aw.processID, aw.counter = e.topo.processID, r.conn.streamCounter
	}
	counter, err := e.topo.await(ctx, aw)
	if err != nil {
		return err // an error reply ends the stream
	}
	if stream {
		r.wire.Exhaust, r.conn.streamCounter = true, counter
	}
	out := r.out
	if helloOK {
		out = bsoncore.AppendBooleanElement(out, "helloOk", true)
	}
	if legacy {
		out = bsoncore.AppendBooleanElement(out, "ismaster", true)
	} else {
		out = bsoncore.AppendBooleanElement(out, "isWritablePrimary", true)
	}
	out = bsoncore.AppendStringElement(out, "msg", "isdbgrid")
	out = e.topo.appendVersion(out, "topologyVersion", counter)
	out = bsoncore.AppendInt32Element(out, "maxBsonObjectSize", wire.MaxBSONSize)
	out = bsoncore.AppendInt32Element(out, "maxMessageSizeBytes", wire.MaxMessageSize)
	out = bsoncore.AppendInt32Element(out, "maxWriteBatchSize", maxWriteBatchSize)
	out = bsoncore.AppendDateTimeElement(out, "localTime", time.Now().UnixMilli())
	out = bsoncore.AppendInt32Element(out, "logicalSessionTimeoutMinutes", e.sessionTimeoutMinutes())
	out = bsoncore.AppendInt32Element(out, "connectionId", int32(r.conn.info.ID)) // an int, as mongod answers
	out = bsoncore.AppendInt32Element(out, "maxWireVersion", maxWireVersion)
	out = bsoncore.AppendInt32Element(out, "minWireVersion", minWireVersion)
	out = bsoncore.AppendBooleanElement(out, "readOnly", false)
	if clientCompressors != nil {
		r.conn.compressors = negotiateCompressors(clientCompressors)
		out = appendStringArray(out, "compression", r.conn.compressors)
	}
	if saslMechsUser != "" {
		if mechs := e.saslSupportedMechs(saslMechsUser); mechs != nil {
			out = appendStringArray(out, "saslSupportedMechs", mechs)
		}
	}
	if speculative != nil {
		if reply := e.speculativeAuth(r.conn, speculative); reply != nil {
			out = bsoncore.AppendDocumentElement(out, "speculativeAuthenticate", reply)
		}
	}
	r.out = out
	return nil
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
		for _, s := range supportedCompressors {
			if s == name {
				both = append(both, name)
			}
		}
	}
	return both
}

// appendStringArray appends an array of strings as the element key.
func appendStringArray(dst []byte, key string, values []string) []byte {
	idx, dst := bsoncore.AppendArrayElementStart(dst, key)
	for i, v := range values {
		dst = bsoncore.AppendStringElement(dst, bsonx.ArrayKey(i), v)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}
