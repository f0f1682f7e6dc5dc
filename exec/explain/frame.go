package explain

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// ServerInfo is the serverInfo section of an explain: the server that explained.
type ServerInfo struct {
	Host       string
	Port       int32
	Version    string
	GitVersion string
}

// Frame gives the explain output appended to out since start the fields every explain of
// a mongos carries, whichever command it explains: explainVersion first, serverInfo before
// the command explained (or last). A field already there is kept as it is.
//
//	{queryPlanner, command} → {explainVersion: "1", queryPlanner, serverInfo, command}
func Frame(out []byte, start int, info ServerInfo) []byte {
	body := docOf(out[start:])
	hasVersion, hasInfo := false, false
	for it := bsonx.Elements(body); ; {
		el, ok := it.Next()
		if !ok {
			break
		}
		switch el.Key() {
		case "explainVersion":
			hasVersion = true
		case "serverInfo":
			hasInfo = true
		}
	}
	if hasVersion && hasInfo {
		return out
	}
	framed := append([]byte(nil), out[:start]...)
	if !hasVersion {
		framed = bsoncore.AppendStringElement(framed, "explainVersion", "1")
	}
	for it := bsonx.Elements(body); ; {
		el, ok := it.Next()
		if !ok {
			break
		}
		if el.Key() == "command" && !hasInfo {
			framed = info.appendTo(framed)
			hasInfo = true
		}
		framed = append(framed, el...)
	}
	if !hasInfo {
		framed = info.appendTo(framed)
	}
	return framed
}

// appendTo appends info as the serverInfo document.
func (info ServerInfo) appendTo(dst []byte) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(dst, "serverInfo")
	out = bsoncore.AppendStringElement(out, "host", info.Host)
	out = bsoncore.AppendInt32Element(out, "port", info.Port)
	out = bsoncore.AppendStringElement(out, "version", info.Version)
	out = bsoncore.AppendStringElement(out, "gitVersion", info.GitVersion)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// docOf wraps a run of elements into a document, so that they can be iterated.
func docOf(elems []byte) bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = append(d, elems...)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}
