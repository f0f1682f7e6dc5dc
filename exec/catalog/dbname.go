package catalog

import "github.com/cleavedb/cleave/wire/mongoerr"

// ValidateDBName applies MongoDB's rules for database names.
func ValidateDBName(db string) error {
	if db == "" {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid empty database name")
	}
	if len(db) >= 64 {
		return mongoerr.New(mongoerr.InvalidNamespace, "db name '%s' is too long, max length is 63", db)
	}
	for i := 0; i < len(db); i++ {
		switch db[i] {
		case '/', '\\', '.', ' ', '"', '$', 0:
			return mongoerr.New(mongoerr.InvalidNamespace, "Invalid database name: '%s'", db)
		}
	}
	return nil
}
