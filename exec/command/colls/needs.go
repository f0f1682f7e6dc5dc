package colls

import (
	"strings"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/command"
)

// renameNeeds is renameCollection's: it runs on admin but acts on the namespaces it names,
// DDL on both and, across databases, reading the source and writing the target.
func renameNeeds(r *command.Request, _ auth.Need) []auth.Need {
	from, _ := r.Body.Lookup("renameCollection").StringValueOK()
	to, _ := r.Body.Lookup("to").StringValueOK()
	fromDB, fromColl, _ := strings.Cut(from, ".")
	toDB, toColl, _ := strings.Cut(to, ".")
	needs := []auth.Need{
		{Action: auth.ActionDDL, DB: fromDB, Coll: fromColl},
		{Action: auth.ActionDDL, DB: toDB, Coll: toColl},
	}
	if fromDB != toDB {
		needs = append(needs, auth.Need{Action: auth.ActionRead, DB: fromDB, Coll: fromColl},
			auth.Need{Action: auth.ActionWrite, DB: toDB, Coll: toColl})
	}
	return needs
}
