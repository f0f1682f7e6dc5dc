package crud

import (
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// refuseNear refuses a filter with $near, $nearSphere or $geoNear where no order by
// distance can apply (count, distinct), as MongoDB does.
func refuseNear(f *match.Filter) error {
	if f.Near() != nil {
		return mongoerr.New(mongoerr.BadValue, "$geoNear, $near, and $nearSphere are not allowed in this context")
	}
	return nil
}
