package server

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addFCVCommand registers setFeatureCompatibilityVersion.
func (h *Handlers) addFCVCommand(add func(*command.Command)) {
	add(&command.Command{Name: "setFeatureCompatibilityVersion", Run: h.setFCV, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "confirm the feature compatibility version (cleave's is always " + command.Fcv + ")", Props: command.WriteConcern})
}

// setFCV answers {setFeatureCompatibilityVersion: "7.0", confirm: true}: cleave's version is
// always 7.0, so setting it again succeeds (MongoDB 7.0 asks for confirm: true first, whatever
// the version), and any other version is refused: cleave has no other format of its data.
func (h *Handlers) setFCV(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	version, err := args.String(r.Name, r.Name, first.Value())
	if err != nil {
		return err
	}
	var confirm bool
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "confirm":
			confirm, err = args.Bool(r.Name, key, v)
		case "fromConfigServer", "changeTimestamp", "phase":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	switch version {
	case "6.0", "7.0":
	default:
		return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'setFeatureCompatibilityVersion' is not a valid value.", version)
	}
	if !confirm {
		return mongoerr.New(mongoerr.Location7369100, "Once you have downgraded the FCV, if you choose to downgrade the binary version, it will require support assistance. Please re-run this command with 'confirm: true' to acknowledge this and continue with the FCV downgrade.")
	}
	if version != command.Fcv {
		return mongoerr.New(mongoerr.IllegalOperation, "cleave serves featureCompatibilityVersion %s only: its data has no %s format to downgrade to", command.Fcv, version)
	}
	return nil
}
