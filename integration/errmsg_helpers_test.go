package integration

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Helpers of the errmsg_*_test.go files: tables of commands MongoDB refuses, each with the
// code, codeName and whole message MongoDB 7.0 answers (issue 38), run through the wire.

// errmsgCase is one refused command: cmd is Extended JSON, run on db.
type errmsgCase struct {
	name     string
	cmd      string
	code     int32
	codeName string
	msg      string
}

// runErrmsgCases runs each case on db and compares code, codeName and the whole message.
func runErrmsgCases(t *testing.T, db *mongo.Database, cases []errmsgCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := db.RunCommand(context.Background(), wrJSON(t, tc.cmd)).Err()
			var ce mongo.CommandError
			if !errors.As(err, &ce) {
				t.Fatalf("%s: err = %v, want a command error", tc.cmd, err)
			}
			if ce.Code != tc.code || ce.Name != tc.codeName || ce.Message != tc.msg {
				t.Errorf("%s:\n got %d %s %q\nwant %d %s %q", tc.cmd, ce.Code, ce.Name, ce.Message, tc.code, tc.codeName, tc.msg)
			}
		})
	}
}
