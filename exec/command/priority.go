package command

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A request's priority (Cosmos DB's priority-based execution, shard/priority.go): low-priority
// requests are throttled first when a partition's budget runs low. It comes from, in order:
//
//	the command's generic argument    {insert: "c", documents: [...], priorityLevel: "low"}
//	the user's customData             createUser: {..., customData: {priorityLevel: "low"}}
//	the connection's application name --app-priority reports=low (client metadata appName)
//
// and is "high", Cosmos DB's default, when none says. The values are "high" and "low" in any
// case (Cosmos DB spells them "High" and "Low").

// PriorityField is the generic argument, and the customData field, that names a priority.
const PriorityField = catalog.PriorityField

// Priority returns the priority r runs at, or BadValue for a priorityLevel argument that
// names none.
func (e *Server) Priority(r *Request) (shard.Priority, error) {
	if v := r.Generic(GenPriority); v.Type != 0 {
		s, ok := v.StringValueOK()
		p, known := shard.ParsePriority(s)
		if !ok || !known {
			return shard.PriorityHigh, mongoerr.New(mongoerr.BadValue,
				"%s must be \"high\" or \"low\", not %s", PriorityField, v.String())
		}
		return p, nil
	}
	if p, ok := e.userPriority(r); ok {
		return p, nil
	}
	if r.Conn != nil && len(e.Opts.AppPriorities) > 0 {
		if p, ok := e.Opts.AppPriorities[r.Conn.AppName()]; ok {
			return p, nil
		}
	}
	return shard.PriorityHigh, nil
}

// userPriority returns the priority the customData of the user r's connection authenticated
// as names (its priorityLevel), if any.
func (e *Server) userPriority(r *Request) (shard.Priority, bool) {
	if e.Access == nil || r.Conn == nil || len(r.Conn.Authn.Users) == 0 {
		return shard.PriorityHigh, false
	}
	u := e.Access.Registry().User(r.Conn.Authn.Users[0])
	if u == nil || u.CustomData == nil {
		return shard.PriorityHigh, false
	}
	s, ok := bsoncore.Document(u.CustomData).Lookup(PriorityField).StringValueOK()
	if !ok {
		return shard.PriorityHigh, false
	}
	return shard.ParsePriority(s)
}
