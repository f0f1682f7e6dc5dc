package crud

import (
	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/command"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// aggregateNeeds adds, for a pipeline ending in $out or $merge, write and DDL on the target
// (which may be in another database); $lookup and $unionWith read r.DB, which the read
// need covers. A pipeline that does not parse keeps the read need: aggregate reports it.
func aggregateNeeds(r *command.Request, def auth.Need) []auth.Need {
	needs := []auth.Need{def}
	pipeline, ok := r.Body.Lookup("pipeline").ArrayOK()
	if !ok {
		return needs
	}
	stages, _ := pipeline.Values()
	if len(stages) == 0 {
		return needs
	}
	last, ok := stages[len(stages)-1].DocumentOK()
	if !ok {
		return needs
	}
	el, err := last.IndexErr(0)
	if err != nil {
		return needs
	}
	var target bsoncore.Value
	switch el.Key() {
	case "$out":
		target = el.Value()
	case "$merge":
		target = el.Value()
		if d, ok := target.DocumentOK(); ok {
			target = d.Lookup("into")
		}
	default:
		return needs
	}
	db, coll := r.DB, ""
	if s, ok := target.StringValueOK(); ok {
		coll = s
	} else if d, ok := target.DocumentOK(); ok {
		if s, ok := d.Lookup("db").StringValueOK(); ok {
			db = s
		}
		coll, _ = d.Lookup("coll").StringValueOK()
	}
	return append(needs, auth.Need{Action: auth.ActionWrite, DB: db, Coll: coll},
		auth.Need{Action: auth.ActionDDL, DB: db, Coll: coll})
}
